"""Mounted servers' middleware around their own lists, and servers with middleware mounted
while serving: tests/composition/mounted_lists.py served over real HTTP (a subprocess on
127.0.0.1), the official SDK client (tests/composition/sdk_lists_client.py) as the peer.

Both ways the parent's dispatcher gets the mounted chains while serving: with no middleware
of its own (the bare era dispatcher, routed through the chains in place) and with some
(the chains appended to its chain)."""

from __future__ import annotations

import os

import pytest

from ..peers import open_served_http, run_sdk_client


async def _run(parent_middleware: bool) -> dict[str, object]:
    env = dict(os.environ)
    env.pop("MOUNT_LISTS_PARENT_MW", None)
    if parent_middleware:
        env["MOUNT_LISTS_PARENT_MW"] = "1"
    async with open_served_http("tests/composition/mounted_lists.py", env=env) as url:
        out: dict[str, object] = await run_sdk_client(
            "composition/sdk_lists_client.py", url, timeout=90
        )
    return out


@pytest.mark.parametrize("parent_middleware", [False, True], ids=["bare", "parent-chain"])
async def test_mounted_middleware_sees_its_own_lists_and_mounts_while_serving(
    parent_middleware: bool,
) -> None:
    out = await _run(parent_middleware)
    before, kid, late, unmounted = (out[k] for k in ("before", "kid", "late", "unmounted"))
    assert isinstance(before, dict) and isinstance(kid, dict)
    assert isinstance(late, dict) and isinstance(unmounted, dict)
    assert "kid_search" not in before["tools"]
    # The kid's middleware saw its own items, under its own names, and its filter and
    # tags reach the parent's lists (namespaced again) ...
    assert kid["tools"]["kid_search"] == "Search. [kid]"
    assert "kid_hidden_tool" not in kid["tools"]
    assert kid["prompts"] == {"kid_greet": "Greet. [kid]"}
    assert kid["resources"] == {"notes://kid/welcome": "Welcome note. [kid]"}
    assert kid["templates"] == {"notes://kid/{name}": "A note. [kid]"}
    # ... while the parent's own are untouched (no child middleware sees them).
    assert kid["tools"]["hidden_own"] == "The parent's own: no mounted middleware sees or hides it."
    assert out["search"] == "found q (via kid)"
    assert out["hidden_call"] == "hidden (via kid)"  # unlisted, still callable
    events = out["events"]
    assert isinstance(events, list)
    assert "kid saw tools/list search hidden_tool" in events
    assert "kid saw prompts/list greet hidden_prompt" in events
    assert "kid saw resources/list notes://welcome notes://hidden" in events
    assert "kid saw resources/templates/list notes://{name}" in events
    # A second server with middleware, mounted while serving, then unmounted.
    assert late["tools"]["late_where"] == "Late. [late]"
    assert "late_hidden_late" not in late["tools"]
    assert late["tools"]["kid_search"] == "Search. [kid]"
    assert out["where"] == "late here (via late)"
    assert "late_where" not in unmounted["tools"] and "kid_search" in unmounted["tools"]
    # The request in flight across both mounts finished (on the chain it started with).
    assert out["slow"] == "slow done"
    notifications = out["notifications"]
    assert isinstance(notifications, list)
    assert notifications.count("notifications/tools/list_changed") >= 3
    if parent_middleware:
        # The parent's own middleware still runs, outside the mounted chains.
        assert "parent tools/list" in events
