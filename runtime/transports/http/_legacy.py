"""Legacy HTTP+SSE (MCP 2024-11-05 basic/transports "HTTP with SSE"), deprecated since
2025-03-26 but still spoken by older clients.

``GET /sse`` opens the session's stream; its first event is ``endpoint`` with the URL to
POST to (carrying the session id). POSTs are answered 202 and every server message flows
on the stream. Closing the stream ends the session.
"""

from __future__ import annotations

import logging

import trio

from ...framing import encode_sse_event
from ...protocol import PARSE_ERROR, JSONRPCError, decode_frame
from ._auth import Gate, calls_in
from ._edge import HttpLimits
from ._exchange import Exchange, HttpError, HttpRequest, rejection
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
            message = decode_frame(request.body)
        except JSONRPCError as exc:
            if exc.code == PARSE_ERROR:  # not JSON: answered here, on this POST
                raise rejection(400, exc) from None
            message = []  # JSON, but not JSON-RPC: the session answers on its stream
        self.gate.check_tools(token, calls_in(message))
        session.touch()
        await session.feed(request.body)
        await exchange.respond(202, b"Accepted", content_type="text/plain")
