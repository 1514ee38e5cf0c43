"""Issue 3: the official SDK client subscribes in both eras to examples/subscriptions.py over
stdio: resources/subscribe + list_changed (2025-11-25), Client.listen() (2026-07-28)."""

from __future__ import annotations

import json
import sys

import trio

from ..peers import ROOT, cli

CLIENT = ROOT / "tests" / "interop" / "sdk_subscriptions_client.py"


async def test_official_sdk_client_subscribes_in_both_eras() -> None:
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, str(CLIENT), "--", *cli("serve", "examples/subscriptions.py")],
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    seen = json.loads(result.stdout)
    assert seen["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert seen["capabilities"]["tools"] == {"listChanged": True}
    assert seen["handshake_notifications"] == [
        {"method": "notifications/resources/updated", "params": {"uri": "notes://todo"}},
        {"method": "notifications/tools/list_changed"},
    ]
    assert "clear_notes" in seen["tools_after"]
    # No prompts: promptsListChanged is left out of the acknowledged subset.
    assert seen["honored"] == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["notes://todo", "notes://x"],
    }
    assert seen["events"] == ["ResourceUpdated", "ToolsListChanged"]
