"""A parent whose mounted servers' middleware filter and change their own lists, one of
them mounted while serving (served over HTTP by tests/composition/test_mount_lists.py;
driven by the official SDK client in tests/composition/sdk_lists_client.py).

The parent starts serving with nothing mounted and, unless ``MOUNT_LISTS_PARENT_MW`` is
set, no middleware of its own: its dispatcher is then the bare era dispatcher, which the
first mount of a server with middleware changes in place. ``kid`` is mounted by the
``mount_kid`` tool, ``late`` by ``mount_late``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import trio

from runtime import Server
from runtime.middleware import Middleware, Next, Request, ToolCall

events: list[str] = []
_FIELDS = {
    "tools/list": ("tools", "name"),
    "prompts/list": ("prompts", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
}


class HideAndTag(Middleware):
    """Sees its server's own lists: records the names, drops the ``hidden`` ones, tags the
    descriptions; marks its tool results."""

    def __init__(self, who: str) -> None:
        self.who = who

    async def on_request(self, request: Request, call_next: Next) -> Any:
        result = await call_next()
        fields = _FIELDS.get(request.method)
        if fields is not None:
            key, field = fields
            names = [item[field] for item in result[key]]
            events.append(f"{self.who} saw {request.method} {' '.join(names)}")
            kept = [item for item in result[key] if "hidden" not in item[field]]
            for item in kept:
                item["description"] = f"{item.get('description', '')} [{self.who}]"
            result[key] = kept
        return result

    async def on_call_tool(self, call: ToolCall, call_next: Next) -> Any:
        result = await call_next()
        result["content"][0].text += f" (via {self.who})"
        return result


kid = Server("kid")
kid.add_middleware(HideAndTag("kid"))


@kid.tool
def search(query: str) -> str:
    """Search."""
    return f"found {query}"


@kid.tool
def hidden_tool() -> str:
    """Not listed by the kid's middleware."""
    return "hidden"


@kid.prompt
def greet(who: str) -> str:
    """Greet."""
    return f"hello {who}"


@kid.prompt
def hidden_prompt() -> str:
    """Not listed."""
    return "hidden"


@kid.resource("notes://welcome")
def welcome() -> str:
    """Welcome note."""
    return "welcome"


@kid.resource("notes://hidden")
def hidden_note() -> str:
    """Not listed."""
    return "hidden"


@kid.resource("notes://{name}")
def note(name: str) -> str:
    """A note."""
    return f"note {name}"


late = Server("late")
late.add_middleware(HideAndTag("late"))


@late.tool
def where() -> str:
    """Late."""
    return "late here"


@late.tool
def hidden_late() -> str:
    """Not listed."""
    return "hidden"


app = Server("parent")
if os.environ.get("MOUNT_LISTS_PARENT_MW"):

    @app.middleware
    async def outer(request: Request, call_next: Next) -> Any:
        events.append(f"parent {request.method}")
        return await call_next()


released = trio.Event()


@app.tool
def hidden_own() -> str:
    """The parent's own: no mounted middleware sees or hides it."""
    return "own"


@app.tool
async def slow() -> str:
    """In flight across the mounts: waits for ``release``."""
    await released.wait()
    return "slow done"


@app.tool
async def release() -> str:  # async: sync tools run in worker threads, off trio
    """Let ``slow`` finish."""
    released.set()
    return "released"


@app.tool
async def mount_kid() -> str:
    """Mount the kid (middleware) while serving."""
    app.mount(kid, prefix="kid")
    return "mounting"


@app.tool
async def mount_late() -> str:
    """Mount the late server (middleware) while serving."""
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
