"""Links: what the client's conversation sends messages through and receives them from.

A link carries whole JSON-RPC messages (its contract: :class:`Link`). Stream links (stdio,
TCP, Unix sockets, named pipes) frame them with the runtime's sans-IO framers
(:class:`FramedLink`); the WebSocket link sends one message per WebSocket message; the
Streamable HTTP link (``_streamable``) turns each request into a POST; the legacy HTTP+SSE
link (``_legacy``) POSTs every message and reads one event stream.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import AsyncIterator
from typing import Any, Final, Protocol, runtime_checkable

import trio

from ..framing import ContentLengthFramer, Framer, FramingError, NdjsonFramer, escape_excerpt
from ..transports import lifted
from ._errors import BadMessage, ClientError, TransportLost
from ._outgoing import Outgoing

__all__ = [
    "Failed",
    "FramedLink",
    "Link",
    "MessageTooLarge",
    "OnStream",
    "Outgoing",
    "ReportsUnreached",
    "make_framer",
    "single_errors",
    "socket_of",
]

_RECEIVE_SIZE: Final = 64 * 1024


class MessageTooLarge(TransportLost):
    """The link broke because the server sent a message larger than the client takes."""


@dataclasses.dataclass(slots=True)
class Failed:
    """The link gave up on request ``request_id`` (e.g. a POST interrupted after sending a
    request that is not safe to repeat)."""

    request_id: Any
    error: ClientError


@dataclasses.dataclass(slots=True)
class OnStream:
    """A frame that arrived on the response stream of request ``request_id`` (Streamable
    HTTP: the SSE stream answering its POST). MCP 2025-11-25 basic/transports and 2026-07-28:
    the notifications and requests the server sends there relate to that request, which is
    how a client ties a log message or an elicitation to the call it came from."""

    request_id: Any
    data: bytes


@contextlib.asynccontextmanager
async def single_errors() -> AsyncIterator[None]:
    """Re-raise a lone exception leaving a nursery unwrapped (trio wraps every error of a
    nursery in an exception group; callers here catch ``TransportLost`` itself)."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found.extend(_leaves(exc))
        else:
            found.append(exc)
    return found


class Link(Protocol):
    """A connection to one server that carries whole JSON-RPC messages, both ways.

    ``send(out)`` writes one message (``out.data``: a request, a notification, an answer to
    the server, or a batch) and returns once the link took it: written to the stream, or,
    over HTTP, handed to the task that POSTs it (a request's answer then arrives through
    ``receive``). Raises :class:`TransportLost` when the link is broken; the HTTP links
    also :class:`PeerError` for a notification or an answer whose POST the server refused.
    Sends never interleave: two concurrent sends write two whole messages. Cancelled, it
    may leave a partly written frame behind, which breaks the link (a stream link's next
    send or receive raises :class:`TransportLost`).

    ``receive()`` returns the next incoming frame (bytes: one message, or a JSON-RPC batch),
    an :class:`OnStream` frame (one that arrived on a request's own response stream, when
    the link has such streams) or a :class:`Failed` record for one request the link gave up
    on (``request_id`` None: the stream that carried the server's notifications is gone for
    good). It raises ``trio.EndOfChannel`` on a clean end of input, :class:`TransportLost`
    when the link broke (a partial frame stalled past the read timeout included),
    :class:`MessageTooLarge` when what broke it was a message over the size cap that could
    not be skipped (a WebSocket closes with 1009: the requests in flight on it are not sent
    again, one of them would bring it back), and :class:`BadMessage` for a frame skipped as
    oversized while the link goes on. Cancelled, it loses nothing: a frame not yet returned
    is returned by the next call. One reader at a time.

    ``aclose()`` releases everything the link holds (a stream, a pool of HTTP connections,
    a handshake-era HTTP session, ended with DELETE); idempotent; never raises for a link
    already broken. What waits on the server there (the DELETE, a WebSocket's closing
    handshake) is shielded from outside cancellation and bounded in time, so closing a
    client in a cancelled scope still ends its session.
    """

    async def send(self, out: Outgoing) -> None: ...

    async def receive(self) -> bytes | OnStream | Failed: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ReportsUnreached(Protocol):
    """A link that keeps retrying a request's connection by itself (Streamable HTTP: each
    request is a POST of its own, retried with backoff while no connection can be made)."""

    def unreached(self, request_id: Any) -> str | None:
        """Why ``request_id`` has not reached the server yet (its last connection failure,
        "cannot connect to ..."), or None once it was sent or was never tried."""
        ...


class FramedLink:
    """A link on a trio byte stream pair and a framer (ndjson or content-length).

    ``read_timeout``: a frame that has started arriving must finish within this many seconds,
    else the link is broken (:class:`TransportLost`, "stalled mid-message"): a peer that
    stops in the middle of a message cannot hang the client. Between messages there is no
    timeout here (the per-request timeouts cover a silent server).
    """

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        framer: Framer,
        *,
        read_timeout: float | None = 10.0,
        name: str = "stream",
    ) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._framer = framer
        self._read_timeout = math.inf if read_timeout is None else read_timeout
        self._name = name
        self._send_lock = trio.Lock()
        self._eof = False
        self._closed = False

    async def send(self, out: Outgoing) -> None:
        frame = self._framer.encode(out.data)
        async with self._send_lock:  # one frame at a time: never interleave two messages
            try:
                # A big frame (a tools/call with big arguments) over TCP goes out with the
                # socket's send low-water mark lifted, not trio's 16 KiB at a time (a
                # scheduler pass per 16 KiB); a pipe or a Unix socket has no mark to lift.
                with lifted(socket_of(self._send_stream), len(frame)):
                    await self._send_stream.send_all(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise TransportLost(
                    f"{self._name}: cannot send: {exc or type(exc).__name__}"
                ) from None

    async def receive(self) -> bytes:
        framer = self._framer
        while True:
            try:
                frame = framer.next_frame()
            except FramingError as exc:
                if exc.fatal:
                    raise TransportLost(
                        f"{self._name}: unreadable framing from the server: {exc.reason} "
                        f"at offset {exc.offset}: {escape_excerpt(exc.excerpt)}"
                    ) from None
                raise BadMessage(f"{self._name}: {exc.reason} at offset {exc.offset}") from None
            if frame is not None:
                return frame
            if self._eof:
                if framer.buffered:
                    raise TransportLost(f"{self._name}: the server closed mid-message")
                raise trio.EndOfChannel
            timeout = self._read_timeout if framer.buffered else math.inf
            try:
                with trio.move_on_after(timeout) as scope:
                    data = await self._receive_stream.receive_some(_RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise TransportLost(
                    f"{self._name}: connection lost: {exc or type(exc).__name__}"
                ) from None
            if scope.cancelled_caught:
                raise TransportLost(
                    f"{self._name}: the server stalled mid-message for {self._read_timeout:g} s "
                    f"({framer.buffered} bytes of a frame received)"
                )
            if not data:
                self._eof = True
            framer.feed(data)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            for stream in (self._send_stream, self._receive_stream):
                with contextlib.suppress(trio.BrokenResourceError, OSError):
                    await stream.aclose()


def make_framer(framing: str, max_frame_size: int) -> Framer:
    """The sans-IO framer for a stream transport: ``ndjson`` or ``content-length``."""
    if framing == "ndjson":
        return NdjsonFramer(max_frame_size=max_frame_size)
    if framing == "content-length":
        return ContentLengthFramer(max_frame_size=max_frame_size)
    raise ValueError(f"unknown framing {framing!r} (expected 'ndjson' or 'content-length')")


def socket_of(stream: trio.abc.SendStream) -> trio.socket.SocketType | None:
    """The socket under a trio stream (a ``SocketStream``, or one under TLS), for its send
    low-water mark (``runtime.transports.lifted``); None for any other stream (a pipe, a
    WebSocket)."""
    if isinstance(stream, trio.SSLStream):
        stream = stream.transport_stream
    return stream.socket if isinstance(stream, trio.SocketStream) else None
