"""The composition root: where a ``Server`` meets the MCP handlers and the transports.

The one module of ``runtime`` that imports ``handlers`` (``build_dispatcher``, on the first
request, so that ``import runtime`` stays light), and the one that tells the network
transports what they need of a server (``transport_hooks``: serving a connection, the
one-request fast path, the per-tool ``Mcp-Param`` rules), since transports never import the
core or the handlers (DESIGN.md "Layers"). ``tests/test_layers.py`` holds it to that.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .core import Connection, Session, dispatch_single

if TYPE_CHECKING:
    from ._server import Server
    from .core import Dispatcher
    from .transports import Hooks

__all__ = ["build_dispatcher", "transport_hooks"]


def build_dispatcher(server: Server) -> Dispatcher:
    """The method tables of every MCP feature, for ``server`` (era selection included),
    inside the server's middleware chain when it has one (else nothing of it: zero cost)."""
    import handlers

    dispatcher = handlers.build_dispatcher(server)
    if not server.middleware_chain:
        return dispatcher
    from .middleware import MiddlewareDispatcher

    for middleware in server.middleware_chain:
        middleware.bind(server)
    return MiddlewareDispatcher(dispatcher, server.middleware_chain)


def transport_hooks(server: Server) -> Hooks:
    """What the network transports need from ``server`` (they never import the core)."""
    from .transports import Hooks
    from .transports.http import header_params as _header_params

    header_cache: dict[str, tuple[object, dict[str, tuple[str, ...]]]] = {}

    def tool_header_params(name: str) -> dict[str, tuple[str, ...]]:
        tool = server.registry.tools.get(name)
        if tool is None:
            return {}
        cached = header_cache.get(name)
        if cached is not None and cached[0] is tool:  # the same registration
            return cached[1]
        found = _header_params(tool.listing.get("inputSchema"))
        header_cache[name] = (tool, found)
        return found

    def new_session(transport: str, principal: Any = None) -> Session:
        session = Session(transport)
        session.principal = principal
        return session

    async def run_in_session(connection: Connection, envelope: Any) -> bytes | None:
        return await connection.run_request(envelope)

    def start_soon(connection: Connection, fn: Callable[[], Awaitable[object]]) -> None:
        connection.start_soon(fn)

    return Hooks(
        serve_connection=server.serve_connection,
        dispatch_one=functools.partial(
            dispatch_single, server.dispatcher, server.limits.request_timeout
        ),
        run_in_session=run_in_session,
        start_soon=start_soon,
        new_session=new_session,
        tool_header_params=tool_header_params,
        max_batch_size=server.limits.max_batch_size,
        write_timeout=server.limits.write_timeout,
        shutdown_grace=server.limits.shutdown_grace,
    )
