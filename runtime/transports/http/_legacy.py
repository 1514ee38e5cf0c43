"""Legacy HTTP+SSE (MCP 2024-11-05 basic/transports "HTTP with SSE"), deprecated since
2025-03-26 but still spoken by older clients.

``GET /sse`` opens the session's stream; its first event is ``endpoint`` with the URL to
POST to (carrying the session id). POSTs are answered 202 and every server message flows
on the stream. Closing the stream ends the session.
"""

from __future__ import annotations

import logging

import msgspec
import trio

from ...framing import encode_sse_event
from ._auth import Gate
from ._edge import HttpLimits
from ._exchange import Exchange, HttpError, HttpRequest, error_body
from ._session import SessionRegistry
from ._streams import pump

__all__ = ["LegacySseEndpoint"]

log = logging.getLogger("mcp_runtime.http")


class LegacySseEndpoint:
    def __init__(
        self,
        limits: HttpLimits,
        registry: SessionRegistry,
        shutdown: trio.Event,
        messages_path: str,
        gate: Gate,
    ) -> None:
        self.limits = limits
        self.registry = registry
        self.shutdown = shutdown
        self.messages_path = messages_path
        self.gate = gate

    async def stream(self, request: HttpRequest, exchange: Exchange) -> None:
        """``GET /sse``: the session's only server-to-client stream."""
        if request.method != "GET":
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "GET")])
        if self.shutdown.is_set():
            raise HttpError(503, "Service Unavailable: shutting down")
        principal, token = await self.gate.check_request(request)
        session = self.registry.create(principal, "http-sse", token=token)
        if session is None:
            raise HttpError(503, "Service Unavailable: too many sessions")
        session.legacy = True
        session.in_use += 1
        stream = session.standing
        stream.attached = True
        try:
            await exchange.start_stream(200, "text/event-stream", [("X-Accel-Buffering", "no")])
            endpoint = f"{self.messages_path}?session_id={session.id}"
            await exchange.write(encode_sse_event(endpoint, event="endpoint"))
            if await pump(exchange, stream, self.limits.sse_keepalive):
                await exchange.end()
        finally:
            session.in_use -= 1
            session.end()

    async def messages(self, request: HttpRequest, exchange: Exchange) -> None:
        """``POST /messages?session_id=...``: 202, the answer goes on the stream."""
        if request.method != "POST":
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "POST")])
        principal, token = await self.gate.check_request(request)
        session_id = request.query.get("session_id") or request.query.get("sessionId")
        if not session_id:
            raise HttpError(400, "Bad Request: missing session_id")
        session = self.registry.get(session_id)
        if (
            session is None
            or not session.legacy
            or (self.gate.enabled and session.principal != principal)
        ):
            raise HttpError(404, "Not Found: unknown or ended session")
        try:
            message = msgspec.json.decode(request.body)
        except msgspec.DecodeError as exc:
            raise HttpError(
                400, f"Parse error: {exc}", error_body(f"Parse error: {exc}", -32700)
            ) from None
        except RecursionError:  # deeper than msgspec follows (issue 16): the peer's input
            log.warning("body nested too deeply session=%s", session_id)
            reason = "Parse error: JSON nested too deeply"
            raise HttpError(400, reason, error_body(reason, -32700)) from None
        self.gate.check_tools(token, message if isinstance(message, list) else [message])
        session.touch()
        await session.feed(request.body)
        await exchange.respond(202, b"Accepted", content_type="text/plain")
