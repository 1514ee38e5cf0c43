"""The composition root: where a ``Server`` meets the MCP handlers and the transports.

The one module of ``runtime`` that imports the MCP handlers (``build_dispatcher``, on the
first request, so that ``import runtime`` stays light). They are the package
``runtime._handlers`` (the repository's ``handlers/`` folder; pyproject.toml says how), never a
top-level ``handlers``: a user's own ``handlers`` package or ``handlers.py`` next to their
server must not stand in for them. This module is also the one that implements what the
network transports need of a server (``CorePort``, their ``runtime.transports.ServerPort``:
serving a connection, the one-request path, protocol sessions, the typed reading of a
``tools/call``, the per-tool ``Mcp-Param`` rules), since transports never import the core or
the handlers (DESIGN.md "Layers"). ``tests/test_layers.py`` holds it to that.
"""

from __future__ import annotations

import functools
import logging
import secrets
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio

from .core import Connection, LoggedDispatcher, Session
from .ensemble import Mountable
from .features import REPLICA_COPY, Registry
from .protocol import (
    OPERATING,
    DecodedFrame,
    Envelope,
    ModernRequest,
    Pieces,
    Refusal,
    ToolCall,
)

if TYPE_CHECKING:
    from msgspec import Raw

    from ._handlers import TypedCalls
    from .core import Dispatcher, Limits
    from .core import MessageChannel as CoreChannel
    from .stores import SessionRecord
    from .transports import (
        HeaderRule,
        MessageChannel,
        ProtocolSession,
        ReadFrame,
        SendNow,
        ServerPort,
        SessionConnection,
    )

__all__ = ["Composed", "CorePort", "build_dispatcher", "transport_port"]


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
        channel: CoreChannel,
        *,
        session: Session | None = None,
        connection_id: str | None = None,
        shutdown: trio.Event | None = None,
        drain_on_eof: bool = False,
        started: Callable[[Connection], None] | None = None,
    ) -> Awaitable[None]: ...


#: ``ServerPort.dispatch_one``'s shape: ``runtime.core.dispatch_single`` given its dispatcher
#: and request timeout.
DispatchOne = Callable[
    [
        Envelope,
        Callable[[bytes], Awaitable[None]],
        str,
        object,
        "ModernRequest | None",
        "ToolCall | None",
        "SendNow | None",
        "Callable[[trio.CancelScope], Awaitable[object]] | None",
    ],
    Awaitable["bytes | Pieces | None"],
]

#: ``Session.state`` key of a session adopted by a ``sole_version`` server, until its
#: connection serves (then its subscriber opens: ``CorePort.serve_connection``).
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


#: One tool's ``Mcp-Param-*`` rules (``runtime.transports.HeaderRule``), as read from its schema.
_Rule = dict[str, tuple[str, ...]]


class _HeaderRules(dict[str, _Rule]):
    """Each registered tool's ``Mcp-Param-*`` rules (2026-07-28 streamable-http "Schema
    Extension": ``x-mcp-header`` in its ``inputSchema``), read from the schema once, on the
    tool's first call, and forgotten whenever the tool list changes (the registry publishes
    every add and remove: ``Registry``). A name no tool has maps to ``{}`` without being kept,
    so unknown names a client sends cannot grow it."""

    def __init__(self, registry: Registry, read: Callable[[Any], _Rule]) -> None:
        super().__init__()
        self._tools = registry.tools  # (the registry's one dict, changed in place)
        self._read = read
        registry.changes.relays.append(self._on_change)

    def _on_change(self, change: tuple[str, str]) -> None:
        if change == ("list", "tools"):
            self.clear()

    def __missing__(self, name: str) -> _Rule:
        tool = self._tools.get(name)
        if tool is None:
            return {}
        found = self[name] = self._read(tool.listing.get("inputSchema"))
        return found


#: One rule table per registry, shared by every transport serving it.
_header_rules: Final[weakref.WeakKeyDictionary[Registry, _HeaderRules]] = (
    weakref.WeakKeyDictionary()
)


def transport_port(server: Composed) -> CorePort:
    """What the network transports need from ``server`` (they never import the core)."""
    # Here, not at the top: a stdio server needs neither (its start-up time).
    from . import _handlers
    from .transports.http import header_params

    rules = _header_rules.get(server.registry)
    if rules is None:
        rules = _header_rules[server.registry] = _HeaderRules(server.registry, header_params)
    open_feed = (
        functools.partial(_handlers.subscriptions.open_session_feed, server, reloaded=True)
        if server.sole_version
        else None
    )
    port = CorePort(server, _handlers.TypedCalls.of(server.registry), rules, open_feed)
    if TYPE_CHECKING:
        _: ServerPort = port  # (mypy checks the implementation against the port here)
    return port


class CorePort:
    """``runtime.transports.ServerPort`` over the core: the one implementation of what the
    HTTP and WebSocket transports need of a server. Sessions are ``runtime.core.Session``,
    connections ``runtime.core.Connection``; a request with no connection runs through
    ``runtime.core.dispatch_single``, a notification on a connection that receives only it;
    the typed reading of a ``tools/call`` is the handlers' (``TypedCalls``)."""

    def __init__(
        self,
        server: Composed,
        calls: TypedCalls,
        header_rules: Mapping[str, HeaderRule],
        open_session_feed: Callable[[Session, Connection], object] | None,
    ) -> None:
        from .core import dispatch_single

        self._server = server
        limits = server.limits
        self._dispatcher = server.dispatcher
        # The members every request goes through are the core's and the handlers' callables
        # themselves (a partial is called in C), not methods forwarding to them: a forwarding
        # frame would cost every request (benchmarks/README.md, "The server's port").
        self.dispatch_one: DispatchOne = functools.partial(
            dispatch_single, self._dispatcher, limits.request_timeout
        )
        self.read_call: Callable[[Raw], ToolCall | None] = calls.read
        self.read_frame: Callable[[bytes | memoryview], ReadFrame | None] = calls.pre_read
        #: ``sole_version`` servers only (``mcp-runtime dev``): opens an adopted session's
        #: subscriber once its connection serves.
        self._open_session_feed = open_session_feed
        self.max_batch_size = limits.max_batch_size
        self.write_timeout = limits.write_timeout
        self.shutdown_grace = limits.shutdown_grace
        self.inbound_queue = 64
        self.on_refusal: Callable[[Refusal], None] | None = self._dispatcher.on_refusal
        #: A rule known already is a dict lookup in C, no Python frame.
        self.header_rules = header_rules

    # -- connections --------------------------------------------------------------------------

    async def serve_connection(
        self,
        channel: MessageChannel,
        *,
        session: ProtocolSession,
        connection_id: str,
        started: Callable[[SessionConnection], None] | None = None,
    ) -> None:
        core = _core_session(session)
        served: Callable[[Connection], None] | None = started
        if self._open_session_feed is not None and core.state.pop(_ADOPTED, False):
            # A session adopted from the store gets its subscriber (list changes, which
            # ``notifications/initialized`` opened on the version that saw it) once its
            # connection serves, and hears that its lists changed (this is a new version).
            open_feed = self._open_session_feed

            def adopted(connection: Connection) -> None:
                if started is not None:
                    started(connection)
                open_feed(core, connection)

            served = adopted
        await self._server.serve_connection(
            channel, session=core, connection_id=connection_id, started=served
        )

    # -- protocol sessions ------------------------------------------------------------------

    def new_session(self, transport: str, principal: object = None) -> Session:
        return Session(transport, principal)

    def export_session(self, session: ProtocolSession) -> SessionRecord | None:
        from .stores import SessionRecord

        core = _core_session(session)
        version = core.protocol_version
        if version is None:
            return None
        return SessionRecord(
            version=version,
            client_capabilities=dict(core.client_capabilities),
            client_info=core.client_info,
            log_level=core.log_level,
        )

    def import_session(self, transport: str, principal: object, record: SessionRecord) -> Session:
        # A session another replica negotiated: its handshake is over (2025-11-25
        # basic/lifecycle), whatever this replica saw of it.
        session = Session(transport, principal)
        session.lifecycle.version = record.version
        session.lifecycle.state = OPERATING
        session.client_capabilities = dict(record.client_capabilities)
        session.client_info = record.client_info
        session.log_level = record.log_level
        # Requests to the client numbered apart from the other copies' (see Session).
        session.first_request_id = 1 + secrets.randbelow(1 << 50)
        if self._open_session_feed is not None:
            # No other process serves it any more (mcp-runtime dev after a reload): this
            # one delivers its changes, from when its connection serves.
            session.state[_ADOPTED] = True
        else:
            session.state[REPLICA_COPY] = True
        return session

    # -- notifications with no connection -------------------------------------------------

    async def dispatch_notification(
        self, frame: DecodedFrame, connection_id: str, principal: object
    ) -> None:
        # A connection that receives only it: its handler runs as any connection's would.
        await self._server.serve_connection(
            _OneMessage(frame),
            session=Session("http", principal),
            connection_id=connection_id,
            drain_on_eof=True,
        )


class _OneMessage:
    """A ``MessageChannel`` carrying one message its transport read already, then its end;
    what is sent on it goes nowhere (a 2026-07-28 notification, answered 202 before it runs)."""

    def __init__(self, frame: DecodedFrame) -> None:
        self._frame: DecodedFrame | None = frame

    async def receive(self) -> DecodedFrame:
        frame, self._frame = self._frame, None
        if frame is None:
            raise trio.EndOfChannel
        return frame

    async def send(self, messages: object) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _core_session(session: ProtocolSession) -> Session:
    """The core's session behind the port's ``ProtocolSession`` (the port makes every one)."""
    assert isinstance(session, Session)
    return session
