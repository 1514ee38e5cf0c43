"""The WebSocket link (subprotocol ``mcp``, one JSON-RPC message per WebSocket message), on
trio-websocket, with a guard against a server that stops in the middle of a message.

trio-websocket reads the socket in its own task and hands over whole messages only: a peer
that sends part of a frame and stops would leave ``get_message()`` waiting forever. So the
byte stream under it is a :class:`StallGuard`, which follows the frame boundaries
(:class:`FrameTracker`, sans-IO, RFC 6455 5.2) in what the server sends: while a message is
partly received, each read must bring more bytes within ``read_timeout``, else the guard
breaks the stream and the link reports :class:`TransportLost` ("stalled mid-message"), as
the framed links do. Between messages there is no read timeout (the per-request timeouts
cover a silent server).

Closing (RFC 6455 7.1.2): the client sends its Close frame and waits for the server's, at
most ``_DISCONNECT_TIMEOUT``, then closes the TCP connection. Only trio-websocket's reader
task can see the server's Close frame, and a client is usually closed by cancelling the
scope around it, so that task runs shielded from outside cancellation and is ended here
once the handshake is over: a client closes as soon as the server answers, and a server
that never does costs the timeout, never more.

A message over ``max_message_size`` makes trio-websocket close the connection (1009,
RFC 6455 7.4.1). The link reports it as :class:`MessageTooLarge`: the requests in flight
on it fail with :class:`BadMessage` rather than being sent again after the reconnect,
since one of them would only bring the same answer back.
"""

from __future__ import annotations

import math
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import trio

from ..framing import redact_url
from ._errors import TransportLost
from ._link import Link, MessageTooLarge, Outgoing, single_errors
from ._unreached import connect_failure, refused_status

__all__ = ["FrameTracker", "StallGuard", "WebSocketConnector"]

#: Seconds the closing handshake may take when the client closes (the server's Close frame
#: normally comes within a round trip).
_DISCONNECT_TIMEOUT: Final = 2.0
#: How trio-websocket's reason starts when it closed the connection (1009) because a
#: message from the server exceeded ``max_message_size`` (trio_websocket._impl).
_TOO_BIG_REASON: Final = "Exceeded maximum message size"
_HANDSHAKE_END: Final = b"\r\n\r\n"


class FrameTracker:
    """Follows WebSocket frame boundaries in the bytes a server sends (sans-IO).

    ``feed(data)`` with each read, in order; ``mid_message`` is true while a frame is partly
    received or a fragmented message (a data frame without FIN) awaits its final fragment
    (RFC 6455 5.4; control frames may come between fragments and do not end it). The HTTP
    response to the opening handshake comes first and is skipped (the connect timeout covers
    it). Never raises: it only counts bytes, the WebSocket library validates them.
    """

    def __init__(self) -> None:
        self._in_handshake = True
        self._tail = b""  # the last bytes of the handshake response seen (to find its end)
        self._head = bytearray()  # the frame header read so far
        self._remaining = 0  # payload bytes of the current frame still to come
        self._fragmented = False

    @property
    def mid_message(self) -> bool:
        return bool(self._head) or self._remaining > 0 or self._fragmented

    def feed(self, data: bytes | bytearray) -> None:
        view = memoryview(data)
        if self._in_handshake:
            joined = self._tail + bytes(view)
            end = joined.find(_HANDSHAKE_END)
            if end < 0:
                self._tail = joined[-(len(_HANDSHAKE_END) - 1) :]
                return
            self._in_handshake = False
            view = memoryview(joined)[end + len(_HANDSHAKE_END) :]
        while view:
            if self._remaining:
                step = min(self._remaining, len(view))
                self._remaining -= step
                view = view[step:]
                continue
            self._head.append(view[0])
            view = view[1:]
            self._end_of_header()

    def _end_of_header(self) -> None:
        head = self._head
        if len(head) < 2:
            return
        short = head[1] & 0x7F
        size = 2 + (2 if short == 126 else 8 if short == 127 else 0) + (4 if head[1] & 0x80 else 0)
        if len(head) < size:
            return
        if short == 126:
            length = int.from_bytes(head[2:4], "big")
        elif short == 127:
            length = int.from_bytes(head[2:10], "big")
        else:
            length = short
        opcode = head[0] & 0x0F
        if opcode < 0x8:  # continuation, text, binary: FIN decides whether the message ends
            self._fragmented = not head[0] & 0x80
        self._remaining = length
        head.clear()


class StallGuard(trio.abc.Stream):
    """Wraps the WebSocket's byte stream: a read while a message is partly received must
    return within ``read_timeout`` seconds, else the stream is broken (``stalled`` says why)."""

    def __init__(self, stream: trio.abc.Stream, read_timeout: float | None) -> None:
        self._stream = stream
        self._read_timeout = math.inf if read_timeout is None else read_timeout
        self._tracker = FrameTracker()
        self.stalled: str | None = None

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if self._tracker.mid_message:
            with trio.move_on_after(self._read_timeout) as scope:
                data = await self._stream.receive_some(max_bytes)
            if scope.cancelled_caught:
                self.stalled = f"the server stalled mid-message for {self._read_timeout:g} s"
                raise trio.BrokenResourceError(self.stalled)
        else:
            data = await self._stream.receive_some(max_bytes)
        self._tracker.feed(data)
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self._stream.aclose()


class WebSocketConnector:
    """Opens a WebSocket to ``url`` (``ws://`` or ``wss://``), subprotocol ``mcp``.

    The URL is checked when the connector is made (ValueError for another scheme or no
    host). ``open`` connects (TCP, TLS for ``wss``) and completes the opening handshake, each
    within ``connect_timeout``; it raises :class:`TransportLost` when either fails, with
    ``refused`` for a failure no wait can mend (a refused connection, an unknown host, a
    4xx to the handshake but 408 and 429). ``reconnects`` is True: the server is still at
    the URL after a loss, and the client's keeper opens a new WebSocket under its backoff.
    Leaving ``open`` runs the closing handshake (module docstring), even when cancelled.
    """

    reconnects = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        max_message_size: int = 4 * 1024 * 1024,
        connect_timeout: float = 10.0,
        read_timeout: float | None = 10.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"not a ws(s) URL: {url!r}")
        self.url = url
        self._tls = parts.scheme == "wss"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        default_port = self._port == (443 if self._tls else 80)
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._host_header = host if default_port else f"{host}:{self._port}"
        self._resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.headers = dict(headers or {})
        self.max_message_size = max_message_size
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.ssl_context = ssl_context
        # What logs and errors name it by: never a password or a key in the URL.
        self.description = redact_url(url)

    async def _connect(self) -> trio.abc.Stream:
        try:
            with trio.fail_after(self.connect_timeout):
                if self._tls:
                    return await trio.open_ssl_over_tcp_stream(
                        self._host,
                        self._port,
                        ssl_context=self.ssl_context or ssl.create_default_context(),
                        https_compatible=True,
                    )
                return await trio.open_tcp_stream(self._host, self._port)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
            reason, refused = connect_failure(exc, self.connect_timeout)
            raise TransportLost(
                f"cannot connect to {self.description}: {reason}", refused=refused
            ) from None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Link]:
        from trio_websocket import ConnectionRejected, HandshakeError, wrap_client_stream

        guard = StallGuard(await self._connect(), self.read_timeout)
        extra_headers = [(k.encode(), v.encode()) for k, v in self.headers.items()]
        try:
            async with single_errors(), trio.open_nursery() as nursery:
                background, reader_scope = await nursery.start(_shielded_nursery)
                try:
                    try:
                        with trio.fail_after(self.connect_timeout):
                            ws = await wrap_client_stream(
                                background,
                                guard,  # type: ignore[arg-type]  # any trio Stream does
                                self._host_header,
                                self._resource,
                                subprotocols=["mcp"],
                                extra_headers=extra_headers,
                                max_message_size=self.max_message_size,
                            )
                    except trio.TooSlowError:
                        raise TransportLost(
                            f"cannot connect to {self.description}: no handshake answer in "
                            f"{self.connect_timeout:g} s"
                        ) from None
                    try:
                        yield _WebSocketLink(ws, self.description, guard, self.max_message_size)
                    finally:
                        with (
                            trio.CancelScope(shield=True),
                            trio.move_on_after(_DISCONNECT_TIMEOUT),
                        ):
                            await ws.aclose()
                finally:
                    reader_scope.cancel()
                    nursery.cancel_scope.cancel()
        except ConnectionRejected as exc:
            raise TransportLost(
                f"cannot connect to {self.description}: {_rejection(exc.status_code)}",
                refused=refused_status(exc.status_code),
            ) from None
        except HandshakeError as exc:
            raise TransportLost(
                f"cannot connect to {self.description}: the WebSocket handshake failed "
                f"({exc or type(exc).__name__})"
            ) from None
        finally:
            with trio.CancelScope(shield=True), suppress(trio.BrokenResourceError, OSError):
                await guard.aclose()


def _rejection(status: int) -> str:
    if status == 404:
        return (
            "the server has no WebSocket endpoint at this path (HTTP 404; MCP endpoints "
            "usually end in /mcp)"
        )
    return f"the server refused the WebSocket handshake (HTTP {status})"


async def _shielded_nursery(
    *, task_status: trio.TaskStatus[tuple[trio.Nursery, trio.CancelScope]]
) -> None:
    """A nursery whose tasks outside cancellation does not reach, and the scope that ends
    them (trio-websocket's reader: see the module docstring)."""
    with trio.CancelScope(shield=True) as scope:
        async with trio.open_nursery() as nursery:
            task_status.started((nursery, scope))
            await trio.sleep_forever()


class _WebSocketLink:
    """One WebSocket's link (the :class:`Link` contract): ``send`` writes one text message
    per JSON-RPC message; ``receive`` returns the next message, text or binary, as bytes.
    The server's Close with 1000 or 1001 is the clean end (``trio.EndOfChannel``); any other
    close, or a stall the guard broke, is :class:`TransportLost` saying why, and a 1009 for
    a message over ``max_message_size`` is :class:`MessageTooLarge`. ``aclose`` runs the
    closing handshake, shielded, at most ``_DISCONNECT_TIMEOUT``.
    """

    def __init__(self, ws: Any, name: str, guard: StallGuard, max_message_size: int) -> None:
        self._ws = ws
        self._name = name
        self._guard = guard
        self._max_message_size = max_message_size

    def _lost(self, reason: object) -> TransportLost:
        if self._guard.stalled is not None:
            return TransportLost(f"{self._name}: {self._guard.stalled}")
        return TransportLost(f"{self._name}: closed: {reason}")

    async def send(self, out: Outgoing) -> None:
        from trio_websocket import ConnectionClosed

        try:
            await self._ws.send_message(out.data.decode("utf-8"))
        except ConnectionClosed as exc:
            raise self._lost(exc.reason) from None

    async def receive(self) -> bytes:
        from trio_websocket import ConnectionClosed

        try:
            message = await self._ws.get_message()
        except ConnectionClosed as exc:
            code = getattr(exc.reason, "code", None)
            if code in (1000, 1001) and self._guard.stalled is None:
                raise trio.EndOfChannel from None
            text = getattr(exc.reason, "reason", None) or ""
            if code == 1009 and text.startswith(_TOO_BIG_REASON):
                raise MessageTooLarge(
                    f"{self._name}: a message from the server is larger than the client's "
                    f"max_message_size ({self._max_message_size} bytes)"
                ) from None
            raise self._lost(exc.reason) from None
        return message.encode("utf-8") if isinstance(message, str) else bytes(message)

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(_DISCONNECT_TIMEOUT):
            await self._ws.aclose()
