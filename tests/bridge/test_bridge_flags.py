"""The proxy's waits as named settings: ``round_timeout`` (``--upstream-round-timeout``: how
long a remote's question waits for our client's answer) and ``max_poll_interval``
(``--upstream-poll-max``: the longest wait between two polls of a remote's task run for our
client), from the command line against the official SDK's server, and in-process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.bridge import proxy_server
from runtime.client import PeerError, open_client

from ..peers import ROOT
from .test_bridge_sdk import background, free_port, proxy_cli, refused

ASKING = Path(__file__).parent / "sdk_asking_upstream.py"


async def test_the_round_timeout_flag_ends_an_unanswered_round() -> None:
    """``--upstream-round-timeout 0.5``: the SDK server's elicitation, put to a 2026-07-28
    client as an input round nobody answers, ends after half a second: the client's late
    retry names a forwarding that no longer exists (-32602)."""
    port, proxy_port = free_port(), free_port()
    proxy = proxy_cli(
        f"http://127.0.0.1:{port}/mcp",
        str(proxy_port),
        "--upstream-era",
        "handshake",
        "--upstream-round-timeout",
        "0.5",
    )
    with trio.fail_after(60):
        async with (
            background([sys.executable, str(ASKING), str(port)], port),
            background(proxy, proxy_port),
            open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="modern") as client,
        ):
            first = await client.request("tools/call", {"name": "ask_name", "arguments": {}})
            assert first["resultType"] == "input_required"
            ((key, asked),) = first["inputRequests"].items()
            assert asked["method"] == "elicitation/create"
            await trio.sleep(1.5)
            retry = {
                "name": "ask_name",
                "arguments": {},
                "inputResponses": {key: {"action": "accept", "content": {"name": "Late"}}},
                "requestState": first["requestState"],
            }
            with pytest.raises(PeerError) as raised:
                await client.request("tools/call", retry)
            assert raised.value.code == -32602
            assert "requestState" in raised.value.message
            # The proxy lives on: the same question answered in time works.
            second = await client.request("tools/call", {"name": "ask_name", "arguments": {}})
            ((key, _),) = second["inputRequests"].items()
            done = await client.request(
                "tools/call",
                {
                    "name": "ask_name",
                    "arguments": {},
                    "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                    "requestState": second["requestState"],
                },
            )
            assert done["content"][0]["text"] == "hello Ada"


async def test_the_poll_maximum_caps_a_remote_tasks_poll_interval() -> None:
    """A 2026-07-28 remote asks to be polled once a minute; with ``max_poll_interval=0.1`` the
    proxy polls its task every 0.1 s, so a handshake-era client's 0.1 s tool call is
    answered well within 3 s (with the default 5 s cap it could not be)."""
    app = Server("slow-poller")
    app.tasks.poll_interval_ms = 60_000

    @app.tool(task="optional")
    async def build(ctx: Context) -> str:
        """A short task."""
        await trio.sleep(0.1)
        return "built"

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(app.serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era="modern", max_poll_interval=0.1)
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            async with open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="handshake") as client:
                with trio.fail_after(3):
                    assert (await client.call_tool("build", {})).text == "built"
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    "keyword", [{"round_timeout": 0}, {"round_timeout": -1.0}, {"max_poll_interval": 0}]
)
def test_proxy_server_refuses_waits_that_are_not_positive(keyword: dict[str, Any]) -> None:
    (name,) = keyword
    with pytest.raises(ValueError, match=name):
        proxy_server("tcp://127.0.0.1:9", **keyword)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            (
                "serve",
                str(ROOT / "tests" / "bridge" / "own_upstream.py"),
                "--upstream-round-timeout",
                "5",
            ),
            "--upstream-round-timeout applies only to a remote TARGET",
        ),
        (
            (
                "serve",
                str(ROOT / "tests" / "bridge" / "own_upstream.py"),
                "--upstream-poll-max",
                "1",
            ),
            "--upstream-poll-max applies only to a remote TARGET",
        ),
        (
            ("serve", "tcp://127.0.0.1:9", "--upstream-round-timeout", "0"),
            "--upstream-round-timeout",
        ),
        (("serve", "tcp://127.0.0.1:9", "--upstream-poll-max", "-2"), "--upstream-poll-max"),
    ],
)
def test_the_wait_flags_are_validated(args: tuple[str, ...], error: str) -> None:
    assert error in refused(*args)
