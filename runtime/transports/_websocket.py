"""MCP over WebSocket (trio-websocket): one text message per JSON-RPC message or batch.

The handshake is checked like every HTTP request (path, Host and Origin allow-lists: 403;
MCP 2025-11-25 basic/transports "Security Warning" applies to any browser-reachable
listener) and must offer the ``mcp`` subprotocol when it offers any. Close codes say why
(RFC 6455 section 7.4.1): 1009 message too big (from trio-websocket's size cap), 1007
invalid UTF-8 (from wsproto), 1003 a binary message, 1002 a protocol error, 1001 going
away on shutdown, 1011 a peer that stopped answering pings.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Final

import trio
import trio_websocket

from ._edge import EdgePolicy, HttpLimits
from ._http_session import Hooks

__all__ = ["serve_websocket"]

log = logging.getLogger("mcp_runtime.websocket")
SUBPROTOCOL: Final = "mcp"
_ids = itertools.count(1)


class _WebSocketChannel:
    """A ``MessageChannel`` on an accepted WebSocket."""

    def __init__(self, ws: Any, shutdown: trio.Event) -> None:
        self._ws = ws
        self._shutdown = shutdown

    async def receive(self) -> bytes:
        try:
            message = await self._ws.get_message()
        except trio_websocket.ConnectionClosed:
            raise trio.EndOfChannel from None
        if isinstance(message, bytes):
            log.warning("closing websocket reason=binary-message")
            await self._ws.aclose(1003, "MCP messages are text frames")
            raise trio.EndOfChannel
        data: bytes = message.encode("utf-8")
        return data

    async def send(self, messages: Sequence[tuple[bytes, Any]]) -> None:
        try:
            for data, _related in messages:
                await self._ws.send_message(data.decode("utf-8"))
        except trio_websocket.ConnectionClosed as exc:
            raise trio.BrokenResourceError("websocket closed") from exc

    async def aclose(self) -> None:
        if self._shutdown.is_set():
            await self._ws.aclose(1001, "server shutting down")
        else:
            await self._ws.aclose(1000)


async def serve_websocket(
    hooks: Hooks,
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    allowed_origins: Iterable[str] | None = None,
    allowed_hosts: Iterable[str] | None = None,
    limits: HttpLimits | None = None,
    max_message_size: int = 4 * 1024 * 1024,
    shutdown: trio.Event,
    task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over WebSocket until ``shutdown`` (then drain and close with 1001) or
    cancellation. Reports the bound address through ``task_status``."""
    limits = limits or HttpLimits()
    policy = EdgePolicy.for_bind(host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    listeners = await trio.open_tcp_listeners(port, host=host)
    address = listeners[0].socket.getsockname()
    slots = trio.Semaphore(limits.max_connections)

    async def handle(stream: trio.SocketStream) -> None:
        try:
            slots.acquire_nowait()
        except trio.WouldBlock:
            log.warning("refusing websocket reason=max-connections")
            await trio.aclose_forcefully(stream)
            return
        try:
            await _serve_one(stream)
        finally:
            slots.release()

    async def _serve_one(stream: trio.SocketStream) -> None:
        conn_id = f"ws-{next(_ids)}"
        async with trio.open_nursery() as nursery:
            request = None
            with trio.move_on_after(limits.header_timeout) as head:
                try:
                    request = await trio_websocket.wrap_server_stream(
                        nursery, stream, max_message_size=max_message_size
                    )
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    log.info("websocket handshake failed %s error=%r", conn_id, exc)
            if head.cancelled_caught or request is None:
                log.warning("closing %s reason=header-timeout", conn_id)
                await trio.aclose_forcefully(stream)
                return
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
            # wsproto moves Host out of the extra headers into the event.
            host = getattr(getattr(request, "_event", None), "host", None) or headers.get("host")
            reason = policy.check(host, headers.get("origin"))
            if reason is not None:
                log.info("websocket reject %s status=403 reason=%s", conn_id, reason)
                await request.reject(403, body=reason.encode())
                await trio.aclose_forcefully(stream)
                return
            if request.path.split("?")[0] != path:
                await request.reject(404, body=b"Not Found")
                await trio.aclose_forcefully(stream)
                return
            offered = request.proposed_subprotocols
            if offered and SUBPROTOCOL not in offered:
                await request.reject(400, body=b"the 'mcp' subprotocol is required")
                await trio.aclose_forcefully(stream)
                return
            ws = await request.accept(subprotocol=SUBPROTOCOL if offered else None)
            channel = _WebSocketChannel(ws, shutdown)
            if limits.ws_ping_interval is not None:
                nursery.start_soon(_keep_alive, ws, limits.ws_ping_interval, limits.ws_ping_timeout)
            await hooks.serve_connection(
                channel, session=hooks.new_session("ws"), connection_id=conn_id, shutdown=shutdown
            )
            nursery.cancel_scope.cancel()

    try:
        async with trio.open_nursery() as connections:
            with trio.CancelScope() as accept_scope:

                async def stop_accepting() -> None:
                    await shutdown.wait()
                    accept_scope.cancel()
                    connections.cancel_scope.deadline = (
                        trio.current_time() + hooks.shutdown_grace + 1.0
                    )

                connections.start_soon(stop_accepting)
                log.info("listening transport=ws address=%s path=%s", address, path)
                task_status.started(address)
                await trio.serve_listeners(handle, listeners, handler_nursery=connections)
    finally:
        with trio.CancelScope(shield=True):
            for listener in listeners:
                await listener.aclose()


async def _keep_alive(ws: Any, interval: float, timeout: float) -> None:
    """Ping every ``interval`` seconds; a peer that does not pong in ``timeout`` is closed."""
    while True:
        await trio.sleep(interval)
        try:
            with trio.fail_after(timeout):
                await ws.ping()
        except trio.TooSlowError:
            log.warning("closing websocket reason=ping-timeout seconds=%s", timeout)
            await ws.aclose(1011, "ping timeout")
            return
        except trio_websocket.ConnectionClosed:
            return
