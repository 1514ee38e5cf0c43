"""Notes as resources: each note is its own resource, so clients can list, read and watch them.

- Creating or deleting a note adds or removes a resource: every session gets
  ``notifications/resources/list_changed`` (MCP server/resources "List Changed Notification").
- A client that subscribed to ``note://groceries`` (``resources/subscribe``; in 2026-07-28 a
  ``subscriptions/listen`` request) gets ``notifications/resources/updated`` when that note
  changes, and nothing for the others.
- ``notes://index`` lists every note: it changes whenever a note is created or deleted.

Run it:  mcp-runtime serve examples/notes.py
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

from runtime import Server, ToolError

app = Server("notes", "1.0.0", instructions="Notes you can create, edit, delete and watch.")

NOTES: dict[str, str] = {}
INDEX = "notes://index"
#: Note names are URI-safe words, so ``note://NAME`` needs no escaping.
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_NOTES = 1000


class NoteInfo(msgspec.Struct):
    name: str
    uri: str
    characters: int


def uri_of(name: str) -> str:
    return f"note://{name}"


def reader(name: str) -> Callable[[], str]:
    def read() -> str:
        return NOTES[name]

    return read


@app.resource(INDEX, mime_type="application/json")
def index() -> list[NoteInfo]:
    """Every note, with its URI and size."""
    return [NoteInfo(name, uri_of(name), len(text)) for name, text in sorted(NOTES.items())]


@app.tool
async def create_note(name: str, text: str = "") -> str:
    """Create a note; it appears as the resource note://NAME.

    Args:
        name: Lowercase letters, digits, '-' and '_' (up to 64).
        text: The note's first text.
    """
    if not NAME.match(name):
        raise ToolError("a note name is lowercase letters, digits, '-' and '_' (up to 64)")
    if name in NOTES:
        raise ToolError(f"{name} exists already; use append_note")
    if len(NOTES) >= MAX_NOTES:
        raise ToolError(f"at most {MAX_NOTES} notes")
    NOTES[name] = text
    # A new resource: resources/list_changed goes to every session.
    app.add_resource(reader(name), uri_of(name), name=name, mime_type="text/plain")
    app.notify_resource_updated(INDEX)
    return f"created {uri_of(name)}"


@app.tool
async def append_note(name: str, text: str) -> str:
    """Append a line to a note; its subscribers hear about it.

    Args:
        name: The note.
        text: The line to add.
    """
    if name not in NOTES:
        raise ToolError(f"no note named {name}")
    NOTES[name] = f"{NOTES[name]}\n{text}" if NOTES[name] else text
    app.notify_resource_updated(uri_of(name))
    app.notify_resource_updated(INDEX)
    return f"{name} has {len(NOTES[name])} characters"


@app.tool(annotations={"destructiveHint": True})
async def delete_note(name: str) -> str:
    """Delete a note and its resource.

    Args:
        name: The note.
    """
    if NOTES.pop(name, None) is None:
        raise ToolError(f"no note named {name}")
    app.remove_resource(uri_of(name))  # resources/list_changed
    app.notify_resource_updated(uri_of(name))  # its subscribers learn it is gone
    app.notify_resource_updated(INDEX)
    return f"deleted {uri_of(name)}"


if __name__ == "__main__":
    app.run()
