"""Middleware added to mounted servers while the parent serves, and a request in flight
across an unmount (served over HTTP by tests/composition/test_mount_dynamic.py; driven by
the official SDK client in tests/composition/sdk_dynamic_client.py).

``events`` records what the children's middleware saw; the parent's ``events`` tool
returns it."""

from __future__ import annotations

import json
from typing import Any

import trio

from runtime import Server
from runtime.middleware import Middleware, Next, ToolCall

events: list[str] = []
#: Set by the recorder when the slow tool's call starts; the unmount waits for it.
slow_started = trio.Event()
#: Set once the kid is unmounted; the slow tool returns then.
unmounted = trio.Event()


class Tag(Middleware):
    """Appends ``[name]`` to a tool result's text (what the client sees)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def on_call_tool(self, call: ToolCall, call_next: Next) -> Any:
        result = await call_next()
        result["content"][0].text += f" [{self.name}]"
        return result


class Recorder(Middleware):
    """Records the start and the finish of each tool call it runs around."""

    async def on_call_tool(self, call: ToolCall, call_next: Next) -> Any:
        events.append(f"start {call.name}")
        if call.name == "slow":
            slow_started.set()
        result = await call_next()
        events.append(f"finish {call.name}")
        result["content"][0].text += " [recorded]"
        return result


kid = Server("kid")
kid.add_middleware(Tag("first"), Recorder())


@kid.tool
def echo(text: str) -> str:
    """Echo."""
    return text


@kid.tool
async def slow() -> str:
    """Returns once the kid is unmounted (after it started)."""
    await unmounted.wait()
    return "slow done"


bare = Server("bare")  # no middleware of its own when mounted


@bare.tool
def hello() -> str:
    """Hello."""
    return "hi"


app = Server("parent")


@app.tool
def tag(server: str, name: str) -> str:
    """Add a Tag middleware to a mounted server while serving."""
    {"kid": kid, "bare": bare}[server].add_middleware(Tag(name))
    return "added"


@app.tool
async def unmount_kid() -> str:
    """Unmount the kid once its slow call has started, then let that call finish."""
    await slow_started.wait()
    app.unmount("kid")
    unmounted.set()
    return "unmounted"


@app.tool
def get_events() -> str:
    """What the recorder saw."""
    return json.dumps(events)


app.mount(kid, prefix="kid")
app.mount(bare, prefix="bare")
