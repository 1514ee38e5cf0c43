"""The composition root: where a ``Server`` meets the MCP handlers and the transports.

The one module of ``runtime`` that imports the MCP handlers (``build_dispatcher``, on the
first request, so that ``import runtime`` stays light). They are the package
``runtime._handlers`` (the repository's ``handlers/`` folder; pyproject.toml says how), never a
top-level ``handlers``: a user's own ``handlers`` package or ``handlers.py`` next to their
server must not stand in for them. This module is also the one that tells the network
transports what they need of a server (``transport_hooks``: serving a connection, the
one-request fast path, the per-tool ``Mcp-Param`` rules), since transports never import the
core or the handlers (DESIGN.md "Layers"). ``tests/test_layers.py`` holds it to that.
"""

from __future__ import annotations

import functools
import logging
import secrets
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from .core import Connection, LoggedDispatcher, Session
from .ensemble import Mountable
from .features import REPLICA_COPY, Registry
from .protocol import OPERATING, Envelope, ToolCall

if TYPE_CHECKING:
    import trio

    from .core import Dispatcher, Limits, MessageChannel
    from .stores import SessionRecord
    from .transports import Hooks

__all__ = ["Composed", "build_dispatcher", "transport_hooks"]


class Composed(Mountable, Protocol):
    """What the composition root needs of a server (``runtime.Server`` is one): what the
    handlers and mounting need, and what the transports are given of it."""

    limits: Limits
    #: The one process serving its store's sessions (``mcp-runtime dev``): it adopts them.
    sole_version: bool

    @property
    def dispatcher(self) -> Dispatcher: ...

    def serve_connection(
        self,
        channel: MessageChannel,
        *,
        session: Session | None = None,
        connection_id: str | None = None,
        shutdown: trio.Event | None = None,
        drain_on_eof: bool = False,
        started: Callable[[Connection], None] | None = None,
    ) -> Awaitable[None]: ...


#: ``Session.state`` key of a session adopted by a ``sole_version`` server, until its
#: connection serves (then its subscriber opens: ``transport_hooks``).
_ADOPTED: Final = "mcp.adopted"


def build_dispatcher(server: Composed) -> Dispatcher:
    """The method tables of every MCP feature, for ``server`` (era selection included),
    inside the server's middleware chain when it has one (else nothing of it: zero cost)."""
    from . import _handlers

    dispatcher = _handlers.build_dispatcher(server)
    chain = list(server.middleware_chain)
    if server.mounts:
        from .ensemble import MountedChains, has_mounted_middleware

        if has_mounted_middleware(server):  # the mounted servers' own, innermost
            chain.append(MountedChains(server))
    if chain:
        from .middleware import MiddlewareDispatcher

        for middleware in chain:
            middleware.bind(server)
        dispatcher = MiddlewareDispatcher(dispatcher, chain)
    if logging.getLogger("mcp_runtime.requests").isEnabledFor(logging.DEBUG):
        dispatcher = LoggedDispatcher(dispatcher)  # --log-level debug: a line per request
    # A big tools/call frame read whole in the tool's one typed pass (the stream reader asks
    # before its general decode): its argument bytes read once, not twice
    # (benchmarks/README.md, "Params read once").
    dispatcher.pre_read = _handlers.TypedCalls.of(server.registry).pre_read
    return dispatcher


HeaderRule = dict[str, tuple[str, ...]]


class _HeaderRules(dict[str, HeaderRule]):
    """Each registered tool's ``Mcp-Param-*`` rules (2026-07-28 streamable-http "Schema
    Extension": ``x-mcp-header`` in its ``inputSchema``), read from the schema once, on the
    tool's first call, and forgotten whenever the tool list changes (the registry publishes
    every add and remove: ``Registry``). A name no tool has maps to ``{}`` without being kept,
    so unknown names a client sends cannot grow it."""

    def __init__(self, registry: Registry, read: Callable[[Any], HeaderRule]) -> None:
        super().__init__()
        self._tools = registry.tools  # (the registry's one dict, changed in place)
        self._read = read
        registry.changes.relays.append(self._on_change)

    def _on_change(self, change: tuple[str, str]) -> None:
        if change == ("list", "tools"):
            self.clear()

    def __missing__(self, name: str) -> HeaderRule:
        tool = self._tools.get(name)
        if tool is None:
            return {}
        found = self[name] = self._read(tool.listing.get("inputSchema"))
        return found


#: One rule table per registry, shared by every transport serving it.
_header_rules: Final[weakref.WeakKeyDictionary[Registry, _HeaderRules]] = (
    weakref.WeakKeyDictionary()
)


def transport_hooks(server: Composed) -> Hooks:
    """What the network transports need from ``server`` (they never import the core)."""
    # Here, not at the top: a stdio server needs neither (its start-up time).
    from . import _handlers
    from .core import dispatch_single
    from .stores import SessionRecord
    from .transports import Hooks
    from .transports.http import header_params as _header_params

    rules = _header_rules.get(server.registry)
    if rules is None:
        rules = _header_rules[server.registry] = _HeaderRules(server.registry, _header_params)
    # A rule known already is a dict lookup in C, no Python frame per request.
    tool_header_params = rules.__getitem__

    typed_calls = _handlers.TypedCalls.of(server.registry)

    def read_frame(body: bytes | memoryview) -> tuple[Envelope, ToolCall] | None:
        if body[:1] == b"[":
            return None  # a batch: read the general way (no sessionless POST takes one)
        found = typed_calls.pre_read(body)
        if found is None or isinstance(found[0], list):
            return None
        return found

    def new_session(transport: str, principal: Any = None) -> Session:
        return Session(transport, principal)

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
        if server.sole_version:
            # No other process serves it any more (mcp-runtime dev after a reload): this
            # one delivers its changes, from when its connection serves (serve_adopted).
            session.state[_ADOPTED] = True
        else:
            session.state[REPLICA_COPY] = True
        return session

    serve_connection: Callable[..., Awaitable[None]] = server.serve_connection
    if server.sole_version:
        open_session_feed = _handlers.subscriptions.open_session_feed

        async def serve_adopted(channel: Any, **options: Any) -> None:
            """``server.serve_connection``; a session adopted from the store gets its
            subscriber (list changes, which ``notifications/initialized`` opened on the
            version that saw it) once its connection serves, and hears that its lists
            changed (this is a new version of the server)."""
            session = options.get("session")
            if session is not None and session.state.pop(_ADOPTED, False):
                started = options.get("started")

                def adopted(connection: Connection) -> None:
                    if started is not None:
                        started(connection)
                    open_session_feed(server, session, connection, reloaded=True)

                options["started"] = adopted
            await server.serve_connection(channel, **options)

        serve_connection = serve_adopted

    def start_soon(connection: Connection, fn: Callable[[], Awaitable[object]]) -> None:
        connection.start_soon(fn)

    return Hooks(
        serve_connection=serve_connection,
        dispatch_one=functools.partial(
            dispatch_single, server.dispatcher, server.limits.request_timeout
        ),
        # ``run_in_session(connection, envelope, scope, on_cancelled)`` is the method itself:
        # a forwarding coroutine would cost every session POST a frame.
        run_in_session=Connection.run_request,
        start_soon=start_soon,
        new_session=new_session,
        export_session=export_session,
        import_session=import_session,
        tool_header_params=tool_header_params,
        read_call=typed_calls.read,
        read_frame=read_frame,
        max_batch_size=server.limits.max_batch_size,
        write_timeout=server.limits.write_timeout,
        shutdown_grace=server.limits.shutdown_grace,
        on_refusal=server.dispatcher.on_refusal,
    )
