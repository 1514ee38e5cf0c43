"""One already-decoded request answered without a Connection (a modern HTTP POST).

A 2026-07-28 POST carries exactly one request and gets exactly one answer, so the whole
supervisor (nursery, writer, reader, in-flight table) is overhead there. ``dispatch_single``
runs the request in the caller's task through the request engine (``_engine.run``: its own
cancel scope only with a ``request_timeout``), with the same outcomes a single-request
:class:`Connection` gives: the dispatcher's reply, or -32001 when the timeout hits.
Cancellation from outside (the client hung up) propagates.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import trio

from ..protocol import (
    CANCELLED,
    Envelope,
    ModernRequest,
    Pieces,
    RequestId,
    ToolCall,
    encode_notification,
    encode_request,
    peer_timeout,
)
from . import _engine as engine
from ._assembler import Assembler
from ._dispatch import Dispatcher
from ._session import Session

__all__ = ["dispatch_single"]

log = logging.getLogger("mcp_runtime.connection")

#: The assembler of every request answered alone: no request table (it shares no connection
#: with another request, nothing to collide with), no scope of the caller's to time
#: (``engine.run`` gives it its own, with the deadline).
_ALONE: Final = Assembler()


class SendNow(Protocol):
    """``send_now`` of :func:`dispatch_single`, the peer's ``send_nowait`` as it is."""

    def __call__(self, data: bytes, related: RequestId | None = None) -> bool: ...


def _not_now(data: bytes, related: RequestId | None = None) -> bool:
    return False  # (no way to send in this step was given: ``notify`` it)


class _SinglePeer:
    """The handlers' ``Peer`` for one request whose output goes to ``send``."""

    __slots__ = ("_id", "_next_request_id", "_send", "idle", "send_nowait")

    def __init__(
        self,
        connection_id: str,
        send: Callable[[bytes], Awaitable[None]],
        send_now: SendNow | None = None,
        idle: Callable[[trio.CancelScope], Awaitable[object]] | None = None,
    ) -> None:
        self._id = connection_id
        self._send = send
        #: ``send_nowait(data, related=None)``: an encoded notification sent in this step
        #: (``Connection.send_nowait``), False when it must be ``notify``-ed instead. The
        #: caller's ``send_now`` itself, not a method around it: a change published to
        #: 1,000 listens is written by the publisher with one call less each
        #: (benchmarks/README.md, "Fan-out to listens").
        self.send_nowait: SendNow = send_now if send_now is not None else _not_now
        #: The caller's wait while the request idles (``dispatch_single``), or None: a
        #: listen passes it to ``Subscriber.receive`` (read with getattr, as send_nowait).
        self.idle = idle
        self._next_request_id: itertools.count[int] | None = None  # made by request()

    @property
    def connection_id(self) -> str:
        return self._id

    async def notify(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> None:
        await self._send(encode_notification(method, params))

    def start_soon(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        # Nothing outlives the request here (a one-request connection would cancel such a
        # task as soon as the request ended); callers that need it are not sent this way.
        raise RuntimeError("the connection is not serving")

    def at_close(self, fn: Callable[[], None]) -> None:
        raise RuntimeError("the connection is not serving")  # as start_soon

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float = 60.0,
        related: RequestId | None = None,
    ) -> Any:
        # The client's answer would arrive on another POST, which cannot reach this one:
        # as on a one-request connection, the request is sent and times out.
        if self._next_request_id is None:
            self._next_request_id = itertools.count(1)
        request_id = next(self._next_request_id)
        await self._send(encode_request(request_id, method, params))
        await trio.sleep(timeout)
        await self.notify(CANCELLED, {"requestId": request_id, "reason": "timeout"})
        raise peer_timeout(method)


def dispatch_single(
    dispatcher: Dispatcher,
    request_timeout: float | None,
    envelope: Envelope,
    send: Callable[[bytes], Awaitable[None]],
    connection_id: str,
    principal: Any = None,
    modern: ModernRequest | None = None,
    prepared: ToolCall | None = None,
    send_now: SendNow | None = None,
    idle: Callable[[trio.CancelScope], Awaitable[object]] | None = None,
    transport: str = "http",
) -> Awaitable[bytes | Pieces | None]:
    """Run one request (a classified envelope) in a session of its own through the
    request engine; await the result for its response: its bytes, or ``runtime.protocol.Pieces``
    (a result holding a long text's pieces) for the caller to write as one vector.

    ``send`` receives whatever the handler sends meanwhile (notifications); ``principal``
    is who the transport authenticated (the session's ``principal``); ``modern``, when the
    caller already read the request's era from its ``params._meta`` (``select_era``), is that
    reading: the dispatcher then serves it at that revision without reading it again;
    ``prepared``, the caller's reading of ``envelope.params`` (a ``tools/call``'s, made for
    its era and header rules), for the handler (``RequestContext.prepared``);
    ``send_now(data, related=None)``, when given, sends an encoded notification in this step
    (True) or declines (False): the peer's ``send_nowait``, for a long request such as a
    2026-07-28 ``subscriptions/listen`` served without a Connection;
    ``idle(wake)``, when given, the peer's ``idle``: what the caller's task must do while
    the request waits with nothing to send (the listen's HTTP connection watching its
    socket and writing keep-alives, so that the request needs no task of its own), until
    ``wake`` (a cancel scope) is cancelled (see ``Subscriber.receive``). Positional, so
    that a transport's hook can be this function with the first two bound.
    Never raises for handler failures (see ``Dispatcher.dispatch``); cancellation from
    outside propagates.
    """
    ctx = _ALONE.assemble(
        envelope,
        # A stateless request gets its Session only if a handler asks for one.
        Session(transport, principal)
        if modern is None
        else functools.partial(Session, transport, principal),
        _SinglePeer(connection_id, send, send_now, idle),
        prepared=prepared,
        takes_pieces=True,
        modern=modern,
    )
    # (Never bytes, a refusal: without a request table nothing refuses it here.)
    return engine.run(dispatcher, ctx, request_timeout)  # type: ignore[arg-type]
