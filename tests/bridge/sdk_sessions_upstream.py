"""The official SDK's (PyPI ``mcp`` 2.x) ``MCPServer`` (FastMCP renamed) keeping per-session
state as a handshake-era server does: the log level ``logging/setLevel`` chose and the
resources ``resources/subscribe`` named, each per SDK session (a ``ServerSession``).

python sdk_sessions_upstream.py http PORT     # Streamable HTTP at /mcp (stateful)
python sdk_sessions_upstream.py sse PORT      # the legacy 2024-11-05 HTTP+SSE transport, /sse

Tools (the caller's arguments say what to send; every session gets what its own state lets
through, so a proxy that shared one upstream session between its clients shows up):

- ``shout``: a log message at each of debug, info, warning, error to every session, each
  filtered by that session's level (2025-11-25 server/utilities/logging);
- ``touch(uri)``: ``notifications/resources/updated`` to the sessions subscribed to ``uri``;
- ``grow``: registers a new tool and sends ``notifications/tools/list_changed`` to every
  session;
- ``announce(uri)``: a tools list change and an update of ``uri`` to the 2026-07-28
  ``subscriptions/listen`` streams;
- ``sessions``: how many sessions set a log level.
"""

import sys
from typing import Any

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("sdk-sessions", version="2.0.0", log_level="WARNING")
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
#: Per SDK session, keyed by its id (Mcp-Session-Id; the legacy transport's ?session_id=):
#: the SDK hands each request a ServerSession object of its own, all writing to the same
#: session's streams.
channel: dict[str, Any] = {}  # session key -> a ServerSession of it
levels: dict[str, str] = {}  # session key -> level
subscribed: dict[str, set[str]] = {}  # session key -> URIs


def key(ctx: Any) -> str:
    request = ctx.request
    if request is None:
        return "stdio"
    found = request.headers.get("mcp-session-id") or request.query_params.get("session_id")
    channel[found] = ctx.session
    return str(found)


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    levels[key(ctx)] = params.level
    return types.EmptyResult()


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    subscribed.setdefault(key(ctx), set()).add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    subscribed.setdefault(key(ctx), set()).discard(str(params.uri))
    return types.EmptyResult()


lowlevel = mcp._lowlevel_server  # the SDK's way to add handlers MCPServer has no decorator for
lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


@mcp.tool()
async def shout() -> str:
    """Log at four levels to every session, as each session's level allows."""
    for session, level in list(levels.items()):
        for sent in ("debug", "info", "warning", "error"):
            if LEVELS.index(sent) >= LEVELS.index(level):
                try:
                    await channel[session].send_log_message(sent, f"{sent} message", "upstream")
                except Exception:  # a session that ended
                    levels.pop(session, None)
                    break
    return "shouted"


@mcp.tool()
async def touch(uri: str) -> str:
    """Tell the sessions subscribed to ``uri`` that it changed."""
    for session, uris in list(subscribed.items()):
        if uri in uris:
            await channel[session].send_resource_updated(uri)
    return "touched"


@mcp.tool()
async def grow() -> str:
    """Add a tool ``grown`` and tell every session the tool list changed."""

    @mcp.tool()
    def grown() -> str:
        """A tool added at run time."""
        return "grown"

    for session in list(levels):
        await channel[session].send_tool_list_changed()
    return "grew"


@mcp.tool()
async def announce(uri: str, ctx: Context) -> str:
    """2026-07-28: publish a tools list change and an update of ``uri`` to the
    ``subscriptions/listen`` streams (the SDK's subscription bus)."""
    await ctx.notify_tools_changed()
    await ctx.notify_resource_updated(uri)
    return "announced"


@mcp.tool()
async def sessions() -> int:
    """How many sessions set a log level."""
    return len(levels)


@mcp.resource("mem://a", mime_type="text/plain")
async def a() -> str:
    """Resource a."""
    return "a"


@mcp.resource("mem://b", mime_type="text/plain")
async def b() -> str:
    """Resource b."""
    return "b"


if __name__ == "__main__":
    port = int(sys.argv[2])
    if sys.argv[1] == "sse":
        mcp.run("sse", host="127.0.0.1", port=port)
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=port, streamable_http_path="/mcp")
