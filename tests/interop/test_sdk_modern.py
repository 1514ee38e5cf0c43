"""Issue 3: the official SDK client on the stateless 2026-07-28 wire, over stdio, against the
quickstart (version pinned, and the dual-era "auto" probe via server/discover)."""

from __future__ import annotations

import json

import pytest

from ..peers import cli, run_sdk_client

CLIENT = "interop/sdk_modern_client.py"


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_official_sdk_modern_client_over_stdio(mode: str) -> None:
    seen = await run_sdk_client(CLIENT, mode, "--", *cli("serve", "examples/quickstart.py"))
    assert seen["protocol_version"] == "2026-07-28"
    assert [t["name"] for t in seen["tools"]["tools"]] == ["add", "countdown", "divide"]
    assert seen["add"]["content"] == [{"type": "text", "text": "42"}]
    assert seen["add"].get("isError") in (False, None)
    assert json.loads(seen["config"]["contents"][0]["text"])["name"] == "quickstart"
    assert seen["note"]["contents"][0]["text"] == "Write more tools."
    assert seen["review"]["messages"][0]["content"]["text"].endswith("pass")
    assert seen["missing_note"]["code"] == -32602  # resource not found, modern code
