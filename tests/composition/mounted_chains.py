"""A parent mounting servers that have their own middleware, completion and lifespans
(served over HTTP by tests/composition/test_mount_chains.py; driven by the official SDK
client in tests/composition/sdk_chains_client.py).

``events`` records what ran; the parent's ``events`` tool returns it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from runtime import Server
from runtime.middleware import Middleware, Next, Request, ToolCall

events: list[str] = []


class Audit(Middleware):
    """Records what reaches it, under the names it sees, and marks tool results."""

    def __init__(self, who: str) -> None:
        self.who = who

    async def on_request(self, request: Request, call_next: Next) -> Any:
        params = request.params
        ref = params.get("ref") if isinstance(params.get("ref"), dict) else {}
        target = params.get("name") or params.get("uri") or ref.get("name") or ref.get("uri")
        events.append(f"{self.who} request {request.method} {target}")
        return await call_next()

    async def on_call_tool(self, call: ToolCall, call_next: Next) -> Any:
        events.append(f"{self.who} call {call.name}")
        result = await call_next()
        result["content"][0].text += f" (via {self.who} middleware)"
        return result


@asynccontextmanager
async def kid_life(app: Server) -> AsyncIterator[str]:
    events.append("kid enter")
    yield "kid-state"
    events.append("kid exit")


kid = Server("kid", lifespan=kid_life)
kid.add_middleware(Audit("kid"))


@kid.tool
def search(query: str) -> str:
    """Search the kid's things."""
    return f"kid found {query}"


@kid.prompt
def greet(who: str) -> str:
    """Greet someone."""
    return f"hello {who}"


@kid.resource("notes://{name}")
def note(name: str) -> str:
    """A kid note."""
    return f"note {name}"


@kid.completion
async def kid_complete(
    ref_type: str, ref: str, argument: str, value: str, context: dict[str, str]
) -> list[str]:
    events.append(f"kid complete {ref_type} {ref} {argument}")
    return [f"{value}-from-kid-{ref}"]


@asynccontextmanager
async def late_life(app: Server) -> AsyncIterator[str]:
    events.append("late enter")
    yield "late-state"
    events.append("late exit")


late = Server("late", lifespan=late_life)
late.add_middleware(Audit("late"))


@late.tool
def where() -> str:
    """The late server's lifespan state."""
    return f"late state={late.state}"


@late.prompt
def pick(color: Literal["red", "green", "blue"]) -> str:
    """Completed from the annotation: the late server has no completer."""
    return color


app = Server("parent")


@app.tool
def own(text: str) -> str:
    """The parent's own tool (no child middleware runs for it)."""
    return f"parent {text}"


@app.prompt
def parent_prompt(topic: str) -> str:
    """The parent's own prompt."""
    return topic


@app.completion
async def parent_complete(
    ref_type: str, ref: str, argument: str, value: str, context: dict[str, str]
) -> list[str]:
    return [f"{value}-from-parent"]


@app.tool
async def mount_late() -> str:
    """Mount the late server while serving."""
    app.mount(late, prefix="late")
    return "mounting"


@app.tool
async def unmount_late() -> str:
    """Unmount it."""
    app.unmount("late")
    return "unmounted"


@app.tool
def get_events() -> str:
    """What ran so far."""
    return json.dumps(events)


app.mount(kid, prefix="kid")
