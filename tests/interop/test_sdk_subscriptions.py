"""Issue 3: the official SDK client subscribes in both eras to examples/subscriptions.py over
stdio: resources/subscribe + list_changed (2025-11-25), Client.listen() (2026-07-28)."""

from __future__ import annotations

from ..peers import cli, run_sdk_client

CLIENT = "interop/sdk_subscriptions_client.py"


async def test_official_sdk_client_subscribes_in_both_eras() -> None:
    seen = await run_sdk_client(CLIENT, "--", *cli("serve", "examples/subscriptions.py"))
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
