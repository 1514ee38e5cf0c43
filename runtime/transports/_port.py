"""The server as the network transports see it: ``ServerPort``, and the objects it hands them.

The HTTP and WebSocket transports never import the core or the handlers (DESIGN.md
"Layers"); what they need of a server is said here, once, each member typed, and implemented
in one place, the composition root (``runtime._compose``). One interface per seam:

- ``ServerPort``: serving a connection, running a request or a notification with no
  connection (a 2026-07-28 POST), the protocol sessions of handshake-era HTTP, reading a
  ``tools/call`` in its tool's one typed pass, the per-tool ``Mcp-Param`` rules, the limits.
- ``MessageChannel``: what a transport hands the server to serve (``runtime.core`` reads it).
- ``ProtocolSession``: a session's protocol state, as a transport keeps and shares it.
- ``SessionConnection``: the connection serving a handshake-era HTTP session, as the POSTs
  to that session drive it between their own requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

import trio
from msgspec import Raw

from ..protocol import (
    DecodedFrame,
    Envelope,
    ModernRequest,
    Pieces,
    Refusal,
    RequestId,
    ToolCall,
)
from ..stores import SessionRecord

__all__ = [
    "HeaderRule",
    "MessageChannel",
    "ProtocolSession",
    "ReadFrame",
    "SendNow",
    "ServerPort",
    "SessionConnection",
]

#: A tool's ``Mcp-Param-*`` rules: header name (lower case) -> property path in ``arguments``.
HeaderRule = Mapping[str, tuple[str, ...]]

#: What ``ServerPort.read_frame`` makes of a body: a request and the reading of its params, or
#: a batch's items with those of its items read so, by index.
ReadFrame = tuple[Envelope, ToolCall] | tuple[list[Raw], Mapping[int, tuple[Envelope, ToolCall]]]


class MessageChannel(Protocol):
    """A transport's end of a connection: whole JSON-RPC messages in, messages out. The
    server's ``runtime.core.MessageChannel`` states the whole contract, its optional members
    included (a channel has them or not; the core looks)."""

    async def receive(self) -> bytes | DecodedFrame: ...

    async def send(self, messages: Sequence[tuple[bytes, RequestId | None]]) -> None: ...

    async def aclose(self) -> None: ...


class ProtocolSession(Protocol):
    """A session's protocol state (``runtime.core.Session``): what the transport reads of it
    and what it gives it. Made by ``ServerPort.new_session`` or ``import_session``."""

    @property
    def protocol_version(self) -> str | None:
        """The revision ``initialize`` negotiated; None before it."""
        ...

    #: The id under which replicas share the session (its ``Mcp-Session-Id`` over a shared
    #: store), else None: set by the transport that shares it.
    shared_id: str | None
    #: Ends the HTTP response stream of the request with this id early (the client resumes
    #: it with ``Last-Event-ID``); False when there is none. Set by a transport whose
    #: responses are resumable streams; None elsewhere.
    close_stream: Callable[[RequestId], bool] | None


class SessionConnection(Protocol):
    """The connection serving one handshake-era HTTP session (``runtime.core.Connection``),
    given to ``ServerPort.serve_connection``'s ``started`` once it serves. Its channel is read
    only while it has input: between rounds it is plain state, and the session's owner serves
    it again (``serve``) when its channel asks (``wake``)."""

    @property
    def ended(self) -> bool:
        """The connection has ended (False while idle between rounds)."""
        ...

    @property
    def in_flight(self) -> int:
        """Requests that waited and have not finished."""
        ...

    async def serve(self) -> None:
        """Serve one more round (see ``runtime.core.MessageChannel``, ``receive_nowait``)."""
        ...

    def resume(self) -> None:
        """Input arrived (or the channel ended): read it, in this round or the next."""
        ...

    def stop_reading(self) -> None:
        """The server shuts down: stop reading, drain within the shutdown grace, end."""
        ...

    def start_soon(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        """Run ``fn()`` beside the connection's requests (``RuntimeError``: it no longer
        serves)."""
        ...

    async def run_request(
        self,
        env: Envelope,
        scope: trio.CancelScope | None = None,
        on_cancelled: Callable[[bytes | None], None] | None = None,
        prepared: ToolCall | None = None,
    ) -> bytes | None:
        """Run one request (a classified envelope) in the calling task as this connection's
        own and return its reply (None: none, it was cancelled or the connection ended).

        In flight on the connection (``notifications/cancelled``, ``request_timeout`` and
        the connection's end reach it); what it sends meanwhile goes through the channel,
        related to its id. ``scope``: a cancel scope the caller entered already, to run it
        under instead of a scope of its own; cancelled through it, ``on_cancelled(reply)``
        is told what to answer and ``trio.Cancelled`` propagates. ``prepared``: the reading
        of ``env.params`` made with the body (``ServerPort.read_frame``, ``read_call``), for
        the handler: the params are not read again."""
        ...


class SendNow(Protocol):
    """Sends an encoded notification in this step (True), or declines (False): then it is
    sent the usual way. ``related``: the request it belongs to."""

    def __call__(self, data: bytes, related: RequestId | None = None) -> bool: ...


class ServerPort(Protocol):
    """What the HTTP and WebSocket transports need of a server, and all of it.

    Cancellation: the coroutines here run in the caller's task; cancelling it cancels them
    (a request so cancelled gets no reply). Handler failures never raise out of them: they
    are answered (-32603, or the handler's own error) and logged by the server.
    """

    #: ``Limits.max_batch_size``: a larger batch POSTed to a session is refused whole (400).
    max_batch_size: int
    #: ``Limits.write_timeout``, ``Limits.shutdown_grace``: the HTTP server's own bounds.
    write_timeout: float
    shutdown_grace: float
    #: How many POST bodies may wait for a session's connection (a POST past it waits).
    inbound_queue: int
    #: The refusal observer (``runtime.protocol.Refusal``), or None: nothing observes, and
    #: the transport builds nothing for one. Told of every request the transport answers
    #: with an error before the server sees it.
    on_refusal: Callable[[Refusal], None] | None
    #: Each tool's ``Mcp-Param-*`` rules by tool name (2026-07-28 streamable-http "Schema
    #: Extension"); ``{}`` for a tool with none, or no such tool.
    header_rules: Mapping[str, HeaderRule]

    def serve_connection(
        self,
        channel: MessageChannel,
        *,
        session: ProtocolSession,
        connection_id: str,
        started: Callable[[SessionConnection], None] | None = None,
    ) -> Awaitable[None]:
        """Serve ``channel`` for ``session`` until it ends (a channel read only while it
        has input: until it is idle, see ``SessionConnection``). ``started(connection)`` once
        it serves. Never raises for protocol or I/O failures; cancellation propagates."""
        ...

    def new_session(self, transport: str, principal: object = None) -> ProtocolSession:
        """A fresh protocol session for ``transport`` ("http", "http-sse", "ws"), for
        ``principal`` (what handlers see as ``ctx.principal``; None unauthenticated)."""
        ...

    def export_session(self, session: ProtocolSession) -> SessionRecord | None:
        """What ``session`` negotiated, for a shared store (None before ``initialize``)."""
        ...

    def import_session(
        self, transport: str, principal: object, record: SessionRecord
    ) -> ProtocolSession:
        """A session another replica negotiated, restored from its record: its handshake
        is over, and its requests to the client are numbered apart from the other copies'."""
        ...

    def dispatch_one(
        self,
        envelope: Envelope,
        send: Callable[[bytes], Awaitable[None]],
        connection_id: str,
        principal: object,
        modern: ModernRequest | None,
        prepared: ToolCall | None,
        send_now: SendNow | None,
        idle: Callable[[trio.CancelScope], Awaitable[object]] | None,
    ) -> Awaitable[bytes | Pieces | None]:
        """Run one request (a classified envelope) with no connection, in the calling task,
        and return its reply: bytes, or ``Pieces`` to write as one vector.

        ``send(data)`` gets what the handler sends meanwhile; ``modern``, the era the
        transport read from its ``_meta`` (``runtime.protocol.modern_request``; None: let
        the server read it); ``prepared``, the reading of its params made already
        (``read_frame``, ``read_call``); ``send_now``, when given, what the handler's
        ``Peer.send_nowait`` is (a listen's fan-out written by the publisher); ``idle(wake)``,
        when given, the calling task's wait while the request idles, until ``wake`` is
        cancelled (a 2026-07-28 ``subscriptions/listen`` served in its HTTP connection's
        task)."""
        ...

    def dispatch_notification(
        self, frame: DecodedFrame, connection_id: str, principal: object
    ) -> Awaitable[None]:
        """Run one notification, as the transport read it, in the calling task: its handler
        as a connection that received only it would run it (failures logged, never raised);
        what it sends goes nowhere (a 2026-07-28 notification is answered 202 first)."""
        ...

    def read_call(self, params: Raw) -> ToolCall | None:
        """A ``tools/call``'s raw params read in its tool's one typed pass (``_meta`` and
        arguments included); None when that pass does not apply (an unknown tool, params it
        refuses): read them the general way, which answers exactly as always."""
        ...

    def read_frame(self, body: bytes | memoryview) -> ReadFrame | None:
        """A body over ``runtime.protocol.ONE_PASS_OVER`` bytes that is such a
        ``tools/call`` (or a batch holding one), read whole in the tool's typed pass: the
        arguments' bytes read once, not first walked to find their end. None: decode the
        body the general way (``runtime.protocol.decode_frame``)."""
        ...
