"""Change notifications: resource subscriptions, tools added and removed at run time, and a
lifespan that runs a background task for as long as the server serves.

Run it:  mcp-runtime serve examples/subscriptions.py

Handshake-era clients (2025-11-25) send ``resources/subscribe {"uri": "notes://todo"}`` and get
``notifications/resources/updated`` when the note changes; every initialized session gets
``notifications/tools/list_changed`` when ``admin_mode`` adds or removes tools. Modern
(2026-07-28) clients send one long-lived ``subscriptions/listen`` request instead::

    {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["clock://now"]}}}
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from runtime import Context, ResourceNotFoundError, Server


@dataclass
class Board:
    """What the lifespan sets up; handlers reach it as ``ctx.lifespan_state``."""

    notes: dict[str, str] = field(default_factory=lambda: {"todo": "Write more tools."})
    ticks: int = 0


@asynccontextmanager
async def lifespan(app: Server) -> AsyncIterator[Board]:
    """Entered once when serving starts, exited when it ends. The ticker publishes an update
    of ``clock://now`` every few seconds; only subscribers of that URI hear about it."""
    board = Board()

    async def tick() -> None:
        while True:
            await trio.sleep(5)
            board.ticks += 1
            app.notify_resource_updated("clock://now")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        try:
            yield board
        finally:
            nursery.cancel_scope.cancel()


app = Server(
    "subscriptions",
    "1.0.0",
    instructions="Notes you can watch, a clock, and admin tools that come and go.",
    lifespan=lifespan,
)


@app.resource("clock://now", mime_type="application/json")
async def clock(ctx: Context) -> dict[str, object]:
    """The server's clock; updated every five seconds."""
    board: Board = ctx.lifespan_state
    return {"now": datetime.datetime.now(datetime.UTC).isoformat(), "ticks": board.ticks}


@app.resource("notes://{name}")
async def note(name: str, ctx: Context) -> str:
    """One note; subscribe to its URI to hear when it changes."""
    board: Board = ctx.lifespan_state
    if name not in board.notes:
        raise ResourceNotFoundError(f"notes://{name}")
    return board.notes[name]


@app.tool
async def write_note(name: str, text: str, ctx: Context) -> str:
    """Create or replace a note, telling its subscribers.

    Args:
        name: The note's name (its URI is notes://NAME).
        text: The new text.
    """
    board: Board = ctx.lifespan_state
    board.notes[name] = text
    app.notify_resource_updated(f"notes://{name}")
    return f"notes://{name} saved"


async def clear_notes(ctx: Context) -> str:
    """Delete every note (an admin tool: present only in admin mode)."""
    board: Board = ctx.lifespan_state
    names = list(board.notes)
    board.notes.clear()
    for name in names:
        app.notify_resource_updated(f"notes://{name}")
    return f"cleared {len(names)} notes"


@app.tool
async def admin_mode(enabled: bool) -> str:
    """Add or remove the admin tools; clients get notifications/tools/list_changed.

    Args:
        enabled: True adds ``clear_notes``, False removes it.
    """
    present = "clear_notes" in app.registry.tools
    if enabled and not present:
        app.add_tool(clear_notes, annotations={"destructiveHint": True})
    elif not enabled and present:
        app.remove_tool("clear_notes")
    return f"admin mode {'on' if enabled else 'off'}"


if __name__ == "__main__":
    app.run()
