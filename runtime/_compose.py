"""The composition root: where a ``Server`` meets the MCP handlers and the transports.

The one module of ``runtime`` that imports ``handlers`` (``build_dispatcher``, on the first
request, so that ``import runtime`` stays light), and the one that tells the network
transports what they need of a server (``transport_hooks``: serving a connection, the
one-request fast path, the per-tool ``Mcp-Param`` rules), since transports never import the
core or the handlers (DESIGN.md "Layers"). ``tests/test_layers.py`` holds it to that.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .core import Connection, Session, dispatch_single
from .features import REPLICA_COPY
from .protocol import OPERATING
from .stores import SessionRecord

if TYPE_CHECKING:
    from ._server import Server
    from .core import Dispatcher
    from .transports import Hooks

__all__ = ["build_dispatcher", "transport_hooks"]


def build_dispatcher(server: Server) -> Dispatcher:
    """The method tables of every MCP feature, for ``server`` (era selection included)."""
    import handlers

    return handlers.build_dispatcher(server)


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

    def export_session(session: Session) -> SessionRecord | None:
        version = session.protocol_version
        if version is None:
            return None
        return SessionRecord(
            version=version,
            client_capabilities=dict(session.client_capabilities),
            client_info=session.client_info,
            log_level=session.log_level,
        )

    def import_session(transport: str, principal: Any, record: SessionRecord) -> Session:
        # A session another replica negotiated: its handshake is over (2025-11-25
        # basic/lifecycle), whatever this replica saw of it.
        session = new_session(transport, principal)
        session.lifecycle.version = record.version
        session.lifecycle.state = OPERATING
        session.client_capabilities = dict(record.client_capabilities)
        session.client_info = record.client_info
        session.log_level = record.log_level
        # Requests to the client numbered apart from the other copies' (see Session).
        session.first_request_id = 1 + secrets.randbelow(1 << 50)
        session.state[REPLICA_COPY] = True
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
        export_session=export_session,
        import_session=import_session,
        tool_header_params=tool_header_params,
        max_batch_size=server.limits.max_batch_size,
        write_timeout=server.limits.write_timeout,
        shutdown_grace=server.limits.shutdown_grace,
    )
