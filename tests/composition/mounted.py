"""A parent server mounting a child (served by tests/composition/test_mount.py, and over
stdio by the official SDK client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from runtime import Context, Server

events: list[str] = []


@asynccontextmanager
async def child_life(app: Server) -> AsyncIterator[dict[str, str]]:
    events.append("child enter")
    yield {"db": "child-db"}
    events.append("child exit")


@asynccontextmanager
async def parent_life(app: Server) -> AsyncIterator[dict[str, str]]:
    events.append("parent enter")
    yield {"db": "parent-db"}
    events.append("parent exit")


child = Server("child", lifespan=child_life)


@child.tool
def search(query: str) -> str:
    """Search the child's things."""
    return f"child found {query}"


@child.tool
def whose_state() -> str:
    """The child's lifespan state, through the child object."""
    return str(child.state)


@child.resource("notes://{name}")
def note(name: str) -> str:
    """A child note."""
    return f"note {name}"


@child.resource("notes://welcome")
def welcome() -> str:
    """The welcome note."""
    return "welcome from the child"


@child.prompt
def greet(who: str) -> str:
    """Greet someone."""
    return f"hello {who}"


app = Server("parent", lifespan=parent_life)


@app.tool
async def own(ctx: Context) -> str:
    """The parent's own tool."""
    return "parent tool"


app.mount(child, prefix="kid")
