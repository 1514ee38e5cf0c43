"""The server side of one WebSocket on sans-IO wsproto, driven by the connection's own reader.

Replaces trio-websocket's server connection, whose reader task, nursery, memory channel and
events every idle socket held (benchmarks/README.md, "Memory per idle connection"): none
of its own here. The task that calls
:meth:`ServerWebSocket.receive_message` (the core ``Reader``) feeds wsproto from the socket
and answers pings and close frames as it meets them; writers encode with wsproto and write
directly. After the opening handshake only wsproto's frame ``Connection`` is kept (the
HTTP/1.1 handshake state and the request are dropped).

RFC 6455: section 5.5.2/5.5.3 ping and pong, 5.4 fragmentation, 7.1.1-7.1.2 the closing
handshake (the server closes TCP first), 7.4.1 close codes.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from typing import Final

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import Connection, ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Message,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from ._low_water import lifted

__all__ = ["ServerWebSocket", "open_server_websocket"]

log = logging.getLogger("mcp_runtime.websocket")

RECEIVE_SIZE: Final = 65536
# A control frame (pong, close) is a few bytes: a peer that does not take them within this
# long is gone. Shielded so that a reader stopped at shutdown never cuts one in half.
CONTROL_TIMEOUT: Final = 5.0
# Frames written while another write is in progress wait behind it, up to this many bytes
# (control frames and in-band refusals: a few hundred bytes each in any honest exchange).
BACKLOG_LIMIT: Final = 64 * 1024


class ServerWebSocket:
    """One accepted (or being accepted) server-side WebSocket.

    ``receive_message`` must be called by one task at a time (the connection's reader);
    writes may come from any task: a write that finds another in progress appends its
    frames to a backlog that the writer in progress sends next, in order, so frames never
    interleave and no lock is held per socket. ``next_ping`` / ``pinging`` belong to the
    transport's shared ping sweep; ``message_started`` is when the message being assembled
    began (``inf`` between messages), read by the sweep's message deadline."""

    __slots__ = (
        "_backlog",
        "_broken",
        "_closed",
        "_handshake",
        "_max_message_size",
        "_parts",
        "_pongs",
        "_size",
        "_stream",
        "_writing",
        "_ws",
        "message_started",
        "next_ping",
        "pinging",
        "quick_close",
        "refused",
    )

    def __init__(self, stream: trio.SocketStream, max_message_size: int) -> None:
        self._stream = stream
        self._handshake: WSConnection | None = WSConnection(ConnectionType.SERVER)
        self._ws: Connection | None = None
        self._max_message_size = max_message_size
        self._parts: list[str] | list[bytes] | None = None
        self._size = 0
        self._writing = False
        self._backlog: bytearray | None = None
        self._broken = False
        self._pongs: dict[bytes, trio.Event] | None = None
        self._closed: trio.Event | None = None
        self.message_started = math.inf
        self.next_ping = math.inf
        self.pinging: trio.CancelScope | None = None
        # Set after a protocol error: the close frame is sent and TCP closed without waiting
        # for the peer's (its frames can no longer be parsed).
        self.quick_close = False
        #: (close code, reason) when the socket was closed refusing what the peer sent or
        #: did not (1009 too big, wsproto's 1002/1007 for a frame it cannot parse; the
        #: transport's sweep: 1008 a message too slow, 1011 no pong).
        self.refused: tuple[int, str] | None = None

    @property
    def stream(self) -> trio.SocketStream:
        return self._stream

    @property
    def state(self) -> ConnectionState:
        if self._ws is not None:
            return self._ws.state
        assert self._handshake is not None
        return self._handshake.state

    # -- the opening handshake ---------------------------------------------------------------

    async def _read_request(self) -> Request | None:
        handshake = self._handshake
        assert handshake is not None
        while True:
            for event in handshake.events():
                if isinstance(event, Request):
                    return event
            data = await self._stream.receive_some(RECEIVE_SIZE)
            if not data:
                return None
            try:
                handshake.receive_data(data)
            except RemoteProtocolError as exc:
                # Not an upgrade wsproto can take (a plain GET, a head too big): the HTTP
                # status it suggests, then close.
                log.info("websocket handshake refused error=%r", exc)
                if exc.event_hint is not None:
                    with contextlib.suppress(LocalProtocolError):
                        await self._write(handshake.send(exc.event_hint))
                return None

    async def accept(self, subprotocol: str | None) -> None:
        """101 Switching Protocols. No extension is offered (no permessage-deflate)."""
        handshake = self._handshake
        assert handshake is not None
        await self._write(handshake.send(AcceptConnection(subprotocol=subprotocol)))
        self._ws, self._handshake = handshake.connection, None

    async def reject(
        self, status: int, *, headers: list[tuple[bytes, bytes]] | None = None, body: bytes = b""
    ) -> None:
        """An HTTP refusal of the upgrade (then the caller closes the stream)."""
        handshake = self._handshake
        assert handshake is not None
        headers = list(headers or [])
        if body:
            headers.append((b"Content-Length", str(len(body)).encode("ascii")))
        data = handshake.send(
            RejectConnection(status_code=status, headers=headers, has_body=bool(body))
        )
        if body:
            data += handshake.send(RejectData(data=body))
        await self._write(data)

    # -- reading -----------------------------------------------------------------------------

    async def receive_message(self) -> str | bytes:
        """The next whole message. Answers pings and the peer's close frame on the way;
        closes with 1009 a message over ``max_message_size`` and with wsproto's code (1002,
        1007) a frame it cannot parse. ``trio.EndOfChannel`` once the socket is closing."""
        ws = self._ws
        assert ws is not None
        while True:
            for event in ws.events():
                if isinstance(event, TextMessage | BytesMessage):
                    if ws.state is not ConnectionState.OPEN:
                        continue  # we are closing: the rest is not read (RFC 6455 7.1.2)
                    message = self._assemble(event)
                    if message is not None:
                        return message
                    if self._size > self._max_message_size:
                        reason = f"Exceeded maximum message size: {self._max_message_size} bytes"
                        self._parts, self._size, self.message_started = None, 0, math.inf
                        self.refused = (1009, reason)
                        await self.close(1009, reason)
                        raise trio.EndOfChannel
                elif isinstance(event, Ping):
                    await self._control(event.response())
                elif isinstance(event, Pong):
                    self._pong(bytes(event.payload))
                elif isinstance(event, CloseConnection):
                    if ws.state is ConnectionState.REMOTE_CLOSING:  # the peer closes
                        await self._control(event.response())
                    elif ws.state is ConnectionState.OPEN:  # wsproto could not parse a frame
                        log.warning("closing websocket reason=protocol-error code=%d", event.code)
                        self.quick_close = True
                        self.refused = (event.code, (event.reason or "")[:100])
                        await self.close(event.code, (event.reason or "")[:100])
                    self._ended()
                    raise trio.EndOfChannel
            if self._broken:  # a pong could not be written: the peer is not reading
                raise trio.BrokenResourceError("websocket broken")
            data = await self._stream.receive_some(RECEIVE_SIZE)
            if not data:
                self._ended()
                raise trio.EndOfChannel
            ws.receive_data(data)

    def _assemble(self, event: TextMessage | BytesMessage) -> str | bytes | None:
        parts = self._parts
        if parts is None:
            parts = self._parts = []
            self.message_started = trio.current_time()
        parts.append(event.data)  # type: ignore[arg-type]
        self._size += len(event.data)
        if not event.message_finished or self._size > self._max_message_size:
            return None
        self._parts, self._size, self.message_started = None, 0, math.inf
        if isinstance(event, TextMessage):
            return "".join(parts)  # type: ignore[arg-type]
        assert isinstance(event, BytesMessage)
        return b"".join(parts)  # type: ignore[arg-type]

    def _ended(self) -> None:
        if self._closed is not None:
            self._closed.set()

    # -- writing -----------------------------------------------------------------------------

    async def send_text(self, text: str) -> None:
        """One text message; ``trio.BrokenResourceError`` once the socket is closing."""
        ws = self._ws
        if ws is None or ws.state is not ConnectionState.OPEN:
            raise trio.BrokenResourceError("websocket closed")
        await self._write(ws.send(Message(data=text)))

    async def _write(self, data: bytes) -> None:
        if self._broken:
            raise trio.BrokenResourceError("websocket broken")
        if self._writing:  # the write in progress sends it next
            backlog = self._backlog
            if backlog is None:
                backlog = self._backlog = bytearray()
            if len(backlog) + len(data) > BACKLOG_LIMIT:
                # Pongs (or in-band refusals) piling up behind a write the peer does not
                # take: a peer that sends but never reads. Give up on it.
                log.warning("closing websocket reason=peer-not-reading")
                self._broken = True
                self._backlog = None
                raise trio.BrokenResourceError("websocket peer not reading")
            backlog += data
            return
        self._writing = True
        try:
            while True:
                # A big message (a reply over LIFT_OVER) goes out with the send low-water
                # mark lifted, not trio's 16 KiB at a time (see _low_water).
                with lifted(self._stream.socket, len(data)):
                    await self._stream.send_all(data)
                if self._backlog is None:
                    break
                data, self._backlog = bytes(self._backlog), None
        except BaseException:
            # A write cut short (error or cancellation) leaves a partial frame on the wire.
            self._broken = True
            self._backlog = None
            raise
        finally:
            self._writing = False

    async def _control(self, event: Event) -> None:
        """A pong or close frame: shielded, bounded, and quiet when the peer is gone (the
        next read says so)."""
        ws = self._ws
        assert ws is not None
        try:
            data = ws.send(event)
        except LocalProtocolError:
            return
        with (
            trio.CancelScope(shield=True, deadline=trio.current_time() + CONTROL_TIMEOUT),
            contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError),
        ):
            await self._write(data)

    async def ping(self) -> None:
        """A ping; returns when its pong (or a later one, RFC 6455 5.5.3) arrives.
        ``trio.BrokenResourceError`` once the socket is closing (no ping after a close)."""
        ws = self._ws
        if ws is None or ws.state is not ConnectionState.OPEN:
            raise trio.BrokenResourceError("websocket closed")
        payload = os.urandom(4)
        arrived = trio.Event()
        if self._pongs is None:
            self._pongs = {}
        self._pongs[payload] = arrived
        try:
            await self._write(ws.send(Ping(payload=payload)))
            await arrived.wait()
        finally:
            if self._pongs is not None:
                self._pongs.pop(payload, None)
                if not self._pongs:
                    self._pongs = None

    def _pong(self, payload: bytes) -> None:
        pongs = self._pongs
        if pongs is None or payload not in pongs:
            return  # unsolicited (allowed: section 5.5.3) or late
        for key in list(pongs):  # in the order sent: a pong answers every earlier ping too
            pongs.pop(key).set()
            if key == payload:
                break

    # -- closing -----------------------------------------------------------------------------

    async def close(self, code: int, reason: str | None = None) -> None:
        """Send a close frame if none was sent yet (the reader then reads to the peer's)."""
        if self._ws is not None and self._ws.state is ConnectionState.OPEN:
            await self._control(CloseConnection(code=code, reason=reason))

    async def close_from_outside(self, code: int, reason: str, timeout: float) -> None:
        """Close from a task other than the reader (the sweep): the close frame, up to
        ``timeout`` for the reader to meet the peer's, then TCP, which wakes the reader."""
        if self._closed is None:
            self._closed = trio.Event()
        await self.close(code, reason)
        with trio.move_on_after(timeout):
            await self._closed.wait()
        await trio.aclose_forcefully(self._stream)

    async def aclose(self, code: int = 1000, reason: str | None = None) -> None:
        """End the socket once nobody reads it: a close frame (unless one was sent), the
        peer's close frame awaited (bounded by the caller), then TCP."""
        try:
            await self.close(code, reason)
            ws = self._ws
            if (
                ws is not None
                and ws.state is ConnectionState.LOCAL_CLOSING
                and not self.quick_close
            ):
                await self._await_peer_close(ws)
        finally:
            await trio.aclose_forcefully(self._stream)

    async def _await_peer_close(self, ws: Connection) -> None:
        while True:
            for event in ws.events():
                if isinstance(event, CloseConnection):
                    return
            try:
                data = await self._stream.receive_some(RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            if not data:
                return
            ws.receive_data(data)


async def open_server_websocket(
    stream: trio.SocketStream, max_message_size: int
) -> tuple[ServerWebSocket, Request] | None:
    """Read the opening handshake's request: the socket (to ``accept`` or ``reject``) and
    the request, or None when the peer left or sent something wsproto refused (answered with
    the HTTP status wsproto suggests)."""
    socket = ServerWebSocket(stream, max_message_size)
    request = await socket._read_request()
    if request is None:
        return None
    return socket, request
