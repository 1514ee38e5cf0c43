"""MCP over WebSocket (our own wsproto loop, ``_wsproto``): one text message per JSON-RPC
message or batch.

The handshake is checked like every HTTP request (path, Host and Origin allow-lists: 403;
MCP 2025-11-25 basic/transports "Security Warning" applies to any browser-reachable
listener) and must offer the ``mcp`` subprotocol when it offers any. Close codes say why
(RFC 6455 section 7.4.1): 1009 message too big (``max_message_size``), 1007
invalid UTF-8 (from wsproto), 1003 a binary message, 1002 a protocol error, 1001 going
away on shutdown, 1011 a peer that stopped answering pings.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import trio

from ..auth import AuthConfig
from ..protocol import (
    REQUEST_ID_TYPES,
    TOOLS_CALL,
    Envelope,
    JSONRPCError,
    Refusal,
    decode_frame,
    error_reply,
    forbidden,
)
from ._port import ServerPort, SessionConnection
from ._wsproto import ServerWebSocket, open_server_websocket
from .http import (
    Authenticate,
    ConnectionSlots,
    EdgePolicy,
    Gate,
    HttpError,
    HttpLimits,
    address_key,
    calls_in,
)

__all__ = ["serve_websocket"]

log = logging.getLogger("mcp_runtime.websocket")
SUBPROTOCOL: Final = "mcp"
_ids = itertools.count(1)
_BUSY: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 31\r\n"
    b"Connection: close\r\nRetry-After: 1\r\n\r\ntoo many connections, try later"
)
#: Messages without these bytes call no tool: the scope check decodes only those with them.
_TOOLS_CALL: Final = TOOLS_CALL.encode()


class _WebSocketChannel:
    """A ``MessageChannel`` on an accepted WebSocket."""

    __slots__ = ("_conn_id", "_gate", "_observe", "_principal", "_shutdown", "_ws")

    def __init__(
        self,
        ws: ServerWebSocket,
        shutdown: trio.Event,
        gate: Gate | None = None,
        principal: Any = None,
        observe: Callable[[Refusal], None] | None = None,
        conn_id: str = "ws",
    ) -> None:
        self._ws = ws
        self._shutdown = shutdown
        self._gate = gate
        self._principal = principal
        #: The refusal observer (``ServerPort.on_refusal``), or None: nothing is built for it.
        self._observe = observe
        self._conn_id = conn_id

    async def receive(self) -> bytes:
        while True:
            try:
                message = await self._ws.receive_message()
            except (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError):
                refused = self._ws.refused
                if refused is not None and self._observe is not None:
                    self._observed(None, refused[1], close_code=refused[0])
                raise
            if isinstance(message, bytes):
                log.warning("closing websocket reason=binary-message")
                await self._ws.close(1003, "MCP messages are text frames")
                if self._observe is not None:
                    self._observed(None, "MCP messages are text frames", close_code=1003)
                raise trio.EndOfChannel
            data: bytes = message.encode("utf-8")
            if self._expired():
                # A bearer token is checked at the upgrade; a socket must not outlive it
                # (RFC 6750: an expired token is no longer valid). 1008 = policy violation.
                log.info("closing websocket reason=token-expired")
                await self._ws.close(1008, "access token expired")
                if self._observe is not None:
                    self._observed(None, "access token expired", close_code=1008)
                raise trio.EndOfChannel
            refusal = self._refusal(data)
            if refusal is None:
                return data
            try:
                await self._ws.send_text(refusal.decode("utf-8"))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                raise trio.EndOfChannel from None

    def _observed(
        self,
        code: int | None,
        reason: str,
        *,
        close_code: int | None = None,
        method: str | None = None,
        request_id: Any = None,
    ) -> None:
        """Tell the observer (only called when there is one)."""
        assert self._observe is not None
        refusal = Refusal(
            code,
            reason,
            "ws",
            self._conn_id,
            method,
            request_id,
            principal=self._principal,
            close_code=close_code,
            peer=_peer(self._ws),
        )
        try:
            self._observe(refusal)
        except Exception:
            log.exception("refusal observer failed")

    def _expired(self) -> bool:
        expires_at = getattr(self._principal, "expires_at", None)
        return isinstance(expires_at, int | float) and time.time() >= expires_at

    def _refusal(self, data: bytes) -> bytes | None:
        """The in-band answer for a message calling a tool the token may not call."""
        if self._gate is None or self._gate.auth is None or _TOOLS_CALL not in data:
            return None
        try:
            message = decode_frame(data)
        except JSONRPCError:
            return None  # the core answers it
        error = self._gate.authorization_error(self._principal, calls_in(message))
        if error is None:
            return None
        # -32003: HTTP answers 403 ``insufficient_scope``; a WebSocket can only answer in-band.
        request_id = message.id if isinstance(message, Envelope) else None
        if not isinstance(request_id, REQUEST_ID_TYPES):
            request_id = None
        refused = forbidden(
            "Forbidden: insufficient_scope",
            status=error.status,
            wwwAuthenticate=error.www_authenticate,
        )
        if self._observe is not None:
            method = message.method if isinstance(message, Envelope) else None
            self._observed(
                refused.code,
                refused.message,
                method=method if isinstance(method, str) else TOOLS_CALL,
                request_id=request_id,
            )
        return error_reply(
            refused, request_id if isinstance(request_id, REQUEST_ID_TYPES) else None
        )

    async def send(self, messages: Sequence[tuple[bytes, Any]]) -> None:
        for data, _related in messages:
            await self._ws.send_text(data.decode("utf-8"))

    async def aclose(self) -> None:
        if self._shutdown.is_set():
            await self._ws.aclose(1001, "server shutting down")
        else:
            await self._ws.aclose(1000)


async def serve_websocket(
    hooks: ServerPort,
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    allowed_origins: Iterable[str] | None = None,
    allowed_hosts: Iterable[str] | None = None,
    limits: HttpLimits | None = None,
    max_message_size: int = 4 * 1024 * 1024,
    auth: AuthConfig | None = None,
    authenticate: Authenticate | None = None,
    shutdown: trio.Event,
    sock: socket.socket | None = None,
    task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over WebSocket until ``shutdown`` (then drain and close with 1001) or
    cancellation. ``hooks``: the server to serve (``ServerPort``). Reports the bound address
    through ``task_status``. ``sock``: an already listening socket to accept on instead of
    binding ``host:port`` (``--workers``).

    ``auth`` / ``authenticate`` as for ``serve_http``: the upgrade request is authenticated
    (a refusal is its 401/403 with the challenge, before the WebSocket exists); a
    ``tools/call`` needing scopes the token lacks is answered in-band with -32003."""
    limits = limits or HttpLimits()
    gate = Gate(auth, authenticate)
    policy = EdgePolicy.for_bind(host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    if sock is not None:  # a listening socket shared by --workers
        listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(sock))]
    else:
        listeners = await trio.open_tcp_listeners(port, host=host)
    address = listeners[0].socket.getsockname()
    slots = ConnectionSlots(limits)
    observe = hooks.on_refusal

    def refused(conn_id: str, status: int, reason: str, stream: trio.SocketStream) -> None:
        """An upgrade refused with an HTTP status (only called when observed)."""
        assert observe is not None
        refusal = Refusal(None, reason, "ws", conn_id, status=status, peer=_peer_of(stream))
        try:
            observe(refusal)
        except Exception:
            log.exception("refusal observer failed")

    async def handle(stream: trio.SocketStream) -> None:
        try:
            key = address_key(stream.socket.getpeername())
        except OSError:  # (gone already)
            key = None
        limit = slots.take(key)
        if limit is not None:
            log.warning("refusing websocket reason=%s", limit.replace("_", "-"))
            if observe is not None:
                refused("ws-refused", 503, "too many connections, try later", stream)
            await _refuse_busy(
                stream,
                _BUSY if limit == "max_connections" else _busy_from_address(slots.max_per_address),
            )
            return
        try:
            await _serve_one(stream)
        except Exception:  # a fault of ours costs this connection, never the server
            log.exception("websocket connection failed")
        finally:
            slots.give_back(key)

    async def _serve_one(stream: trio.SocketStream) -> None:
        conn_id = f"ws-{next(_ids)}"
        accepted = await _accept(stream, conn_id)
        if accepted is None:
            return
        ws, principal = accepted
        channel = _WebSocketChannel(ws, shutdown, gate, principal, observe, conn_id)
        sweep.add(ws)
        try:
            await hooks.serve_connection(
                channel,
                session=hooks.new_session("ws", principal),
                connection_id=conn_id,
                started=functools.partial(started, ws),
            )
        finally:
            sweep.discard(ws)
            live.pop(ws, None)

    async def _accept(
        stream: trio.SocketStream, conn_id: str
    ) -> tuple[ServerWebSocket, Any] | None:
        """The upgrade, checked: (socket, principal), or None when refused and closed. A
        function of its own so that the request's headers are not kept for the connection's
        life."""
        opened = None
        with trio.move_on_after(limits.header_timeout) as head:
            try:
                opened = await open_server_websocket(stream, max_message_size)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                log.info("websocket handshake failed %s error=%r", conn_id, exc)
        if opened is None:
            if head.cancelled_caught:
                log.warning("closing %s reason=header-timeout", conn_id)
            await trio.aclose_forcefully(stream)
            return None
        ws, request = opened
        try:
            return await _check(ws, request, conn_id, stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.info("websocket handshake failed %s error=%r", conn_id, exc)
            await trio.aclose_forcefully(stream)
            return None

    async def _check(
        ws: ServerWebSocket, request: Any, conn_id: str, stream: trio.SocketStream
    ) -> tuple[ServerWebSocket, Any] | None:
        fields = [
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in request.extra_headers
        ]
        headers = dict(fields)
        # wsproto moves Host out of the extra headers into the event.
        reason = policy.check(request.host or headers.get("host"), headers.get("origin"))
        if reason is not None:
            log.info("websocket reject %s status=403 reason=%s", conn_id, reason)
            if observe is not None:
                refused(conn_id, 403, f"Forbidden: {reason}", stream)
            await _refuse(ws, 403, body=reason.encode())
            return None
        if request.target.split("?")[0] != path:
            if observe is not None:
                refused(conn_id, 404, "Not Found", stream)
            await _refuse(ws, 404, body=b"Not Found")
            return None
        principal = None
        if gate.enabled:
            authorization = [v for k, v in fields if k == "authorization"]
            try:
                _key, principal = await gate.check(
                    ", ".join(authorization) if authorization else None, request.target, fields
                )
            except HttpError as refusal:
                log.info("websocket reject %s status=%d reason=auth", conn_id, refusal.status)
                if observe is not None:
                    refused(conn_id, refusal.status, refusal.reason, stream)
                extra = [("Content-Type", "application/json"), *refusal.headers]
                await _refuse(
                    ws,
                    refusal.status,
                    headers=[(k.encode(), v.encode()) for k, v in extra],
                    body=refusal.body or b"",
                )
                return None
        offered = request.subprotocols
        if offered and SUBPROTOCOL not in offered:
            if observe is not None:
                refused(conn_id, 400, "the 'mcp' subprotocol is required", stream)
            await _refuse(ws, 400, body=b"the 'mcp' subprotocol is required")
            return None
        await ws.accept(SUBPROTOCOL if offered else None)
        return ws, principal

    # One task watches shutdown for every connection (stop_accepting) and one times every
    # socket's pings and message deadline (_Sweep): an idle socket holds no timer or watcher
    # task of its own. ``live``: the connections serving now, by socket (each let go when
    # its socket's task ends).
    live: dict[ServerWebSocket, SessionConnection] = {}

    def started(ws: ServerWebSocket, connection: SessionConnection) -> None:
        live[ws] = connection
        if shutdown.is_set():
            connection.stop_reading()

    try:
        async with trio.open_nursery() as connections:
            sweep = _Sweep(connections, limits, shutdown)
            with trio.CancelScope() as accept_scope:

                async def stop_accepting() -> None:
                    await shutdown.wait()
                    accept_scope.cancel()
                    connections.cancel_scope.deadline = (
                        trio.current_time() + hooks.shutdown_grace + 1.0
                    )
                    for connection in list(live.values()):
                        connection.stop_reading()

                connections.start_soon(stop_accepting)
                connections.start_soon(sweep.run)
                log.info("listening transport=ws address=%s path=%s", address, path)
                task_status.started(address)
                await trio.serve_listeners(handle, listeners, handler_nursery=connections)
    finally:
        with trio.CancelScope(shield=True):
            for listener in listeners:
                await listener.aclose()


def _peer_of(stream: trio.SocketStream) -> str | None:
    try:
        address = stream.socket.getpeername()
    except OSError:
        return None
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


def _peer(ws: ServerWebSocket) -> str | None:
    return _peer_of(ws.stream)


async def _refuse(
    ws: ServerWebSocket,
    status: int,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
) -> None:
    """The upgrade's HTTP refusal, then the stream closed."""
    try:
        await ws.reject(status, headers=headers, body=body)
    finally:
        await ws.aclose()


def _busy_from_address(limit: int) -> bytes:
    """The refusal past ``max_connections_per_address`` (``limit``), naming it."""
    text = b"too many connections from this address (max_connections_per_address=%d)" % limit
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
        b"Content-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%b" % (len(text), text)
    )


async def _refuse_busy(stream: trio.SocketStream, answer: bytes) -> None:
    """503 before the upgrade (an HTTP answer the client can read, not a bare close): read
    the request head briefly first, so that closing with unread bytes does not reset the
    connection under the response."""
    with trio.move_on_after(1.0):
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 64 * 1024:
                data = await stream.receive_some(16 * 1024)
                if not data:
                    break
                head += data
            await stream.send_all(answer)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
    await trio.aclose_forcefully(stream)


class _Sweep:
    """Pings every socket each ``ws_ping_interval`` seconds (a peer that does not pong within
    ``ws_ping_timeout`` is closed with 1011) and closes with 1008 a socket whose current
    message has been assembling for ``ws_message_timeout`` seconds: one task for all sockets,
    ticking at a quarter of the shortest period (at most 1 s, at least 50 ms); a ping in
    flight is a short task of its own. Its state per socket lives on the socket
    (``next_ping``, ``pinging``, ``message_started``): no object of its own per socket."""

    def __init__(self, nursery: trio.Nursery, limits: HttpLimits, shutdown: trio.Event) -> None:
        self._nursery = nursery
        self._ping_interval = limits.ws_ping_interval
        self._ping_timeout = limits.ws_ping_timeout
        self._message_timeout = limits.ws_message_timeout
        self._shutdown = shutdown
        self._sockets: set[ServerWebSocket] = set()
        periods = [self._message_timeout]
        if self._ping_interval is not None:
            periods.append(self._ping_interval)
        self._tick = max(0.05, min(1.0, min(periods) / 4))

    def add(self, ws: ServerWebSocket) -> None:
        interval = math.inf if self._ping_interval is None else self._ping_interval
        ws.next_ping = trio.current_time() + interval
        self._sockets.add(ws)

    def discard(self, ws: ServerWebSocket) -> None:
        self._sockets.discard(ws)
        if ws.pinging is not None:
            ws.pinging.cancel()

    async def run(self) -> None:
        """Until shutdown and every socket has ended (the connections nursery waits for it)."""
        while not (self._shutdown.is_set() and not self._sockets):
            with trio.move_on_after(self._tick):  # shutdown wakes it (a listener stops at once)
                await self._shutdown.wait()
            if self._shutdown.is_set():
                await trio.sleep(self._tick)
            now = trio.current_time()
            for ws in list(self._sockets):
                if now - ws.message_started >= self._message_timeout:
                    log.warning(
                        "closing websocket reason=message-timeout seconds=%s",
                        self._message_timeout,
                    )
                    self.discard(ws)
                    self._nursery.start_soon(self._close, ws, 1008, "message too slow")
                elif ws.pinging is None and now >= ws.next_ping:
                    ws.pinging = trio.CancelScope()
                    self._nursery.start_soon(self._ping, ws)

    async def _ping(self, ws: ServerWebSocket) -> None:
        assert ws.pinging is not None and self._ping_interval is not None
        with ws.pinging:  # cancelled when the socket ends (discard)
            try:
                with trio.fail_after(self._ping_timeout):
                    await ws.ping()
            except trio.TooSlowError:
                log.warning("closing websocket reason=ping-timeout seconds=%s", self._ping_timeout)
                self._sockets.discard(ws)
                ws.pinging = None
                await self._close(ws, 1011, "ping timeout")
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
        ws.pinging = None
        ws.next_ping = trio.current_time() + self._ping_interval

    async def _close(self, ws: ServerWebSocket, code: int, reason: str) -> None:
        ws.refused = (code, reason)  # the connection's reader tells the refusal observer
        # Bounded: this task is not the connection's, nothing else would cancel it.
        await ws.close_from_outside(code, reason, self._ping_timeout)
