"""Served by ``mcp-runtime dev`` in tests/cli/test_dev_resume.py (copied to a temporary
folder and edited there: ``VERSION`` changes to tell the versions apart)."""

from __future__ import annotations

import trio

from runtime import Server

VERSION = "one"

app = Server("dev-events")


@app.tool
async def tick(times: int) -> str:
    """Announce ``times`` prompt list changes (events of the session's GET stream)."""
    for _ in range(times):
        app.notify_list_changed("prompts")
        await trio.sleep(0.05)
    return f"ticked {times} on {VERSION}"


@app.prompt
def hello(name: str) -> str:
    """Greet (so that the prompts capability, and its list-changed, is declared)."""
    return f"Hello {name}"
