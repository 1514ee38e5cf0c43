"""Legacy HTTP+SSE (MCP 2024-11-05 basic/transports "HTTP with SSE"), deprecated since
2025-03-26 but still spoken by older clients.

``GET /sse`` opens the session's stream; its first event is ``endpoint`` with the URL to
POST to (carrying the session id). POSTs are answered 202 and every server message flows
on the stream. Closing the stream ends the session.

With a shared store (``--workers``, replicas behind a balancer) the session lives where its
stream is: that replica keeps a record of it in the store (``sse:<id>``, renewed while the
stream is open) and subscribes to the bus channel ``sse:<id>``. Every POST, on whichever
replica it lands (this one too), is checked against the record and published there; the
holder feeds the messages to the session in the order the store delivers them, so a
client's messages keep their order across replicas. A replica never adopts such a session:
its one stream cannot move.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import trio

from ...framing import encode_sse_event
from ...protocol import PARSE_ERROR, DecodedFrame, JSONRPCError, classify, decode_frame
from ...stores import SessionRecord, Store, StoreUnavailable
from ._auth import Gate, calls_in
from ._edge import HttpLimits
from ._exchange import Exchange, HttpError, HttpRequest, rejection
from ._session import HttpSession, SessionRegistry, principal_key, store_refusal
from ._streams import pump

__all__ = ["LegacySseEndpoint"]

log = logging.getLogger("mcp_runtime.http")

#: The version a shared 2024-11-05 session's record carries.
LEGACY_VERSION = "2024-11-05"
#: Seconds a shared legacy session's record lives without renewal; the replica holding the
#: stream renews it every third of that, and deletes it when the stream ends (a record left by
#: a replica that died expires after this long).
RECORD_TTL = 60.0


def _key(session_id: str) -> str:
    # The store key and bus channel of a shared 2024-11-05 session; the prefix keeps these
    # records apart from Streamable HTTP sessions (never adopted as one).
    return "sse:" + session_id


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
        session = self.registry.create(principal, "http-sse", token=token, legacy=True)
        if session is None:
            raise HttpError(503, "Service Unavailable: too many sessions")
        session.in_use += 1
        stream = session.standing
        stream.attached = True
        shared = self.registry.shared
        unsubscribe: Callable[[], None] | None = None
        try:
            if shared is not None:
                try:
                    unsubscribe = await self._share(session, shared)
                except StoreUnavailable as exc:
                    raise store_refusal(exc) from None
            await exchange.start_stream(200, "text/event-stream", [("X-Accel-Buffering", "no")])
            endpoint = f"{self.messages_path}?session_id={session.id}"
            await exchange.write(encode_sse_event(endpoint, event="endpoint"))
            async with trio.open_nursery() as nursery:
                if shared is not None:
                    nursery.start_soon(_renew, session.id, shared)
                ended = await pump(exchange, stream, self.limits.sse_keepalive)
                nursery.cancel_scope.cancel()
            if ended:
                await exchange.end()
        finally:
            session.in_use -= 1
            session.end()
            if unsubscribe is not None:
                unsubscribe()
            if shared is not None:
                with trio.CancelScope(shield=True), contextlib.suppress(StoreUnavailable):
                    await shared.sessions.delete(_key(session.id))

    async def _share(self, session: HttpSession, shared: Store) -> Callable[[], None]:
        """Record ``session`` in the store and take the POSTs published for it."""

        def deliver(body: bytes) -> None:
            try:
                session.inbox.send_nowait(body)
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                log.warning("dropped a routed client message session=%s", session.id[:8])

        unsubscribe = await shared.bus.subscribe(_key(session.id), deliver)
        record = SessionRecord(
            LEGACY_VERSION,
            principal=None if session.principal is None else principal_key(session.principal),
        )
        try:
            await shared.sessions.save(_key(session.id), record, RECORD_TTL)
        except BaseException:
            unsubscribe()
            raise
        return unsubscribe

    async def messages(self, request: HttpRequest, exchange: Exchange) -> None:
        """``POST /messages?session_id=...``: 202, the answer goes on the stream."""
        if request.method != "POST":
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "POST")])
        principal, token = await self.gate.check_request(request)
        session_id = request.query.get("session_id") or request.query.get("sessionId")
        if not session_id:
            raise HttpError(400, "Bad Request: missing session_id")
        shared = self.registry.shared
        session = self.registry.get(session_id)
        if shared is not None:
            try:
                record = await shared.sessions.load(_key(session_id))
            except StoreUnavailable as exc:
                raise store_refusal(exc) from None
            if record is None or (
                self.gate.enabled
                and record.principal != (None if principal is None else principal_key(principal))
            ):
                raise HttpError(404, "Not Found: unknown or ended session")
        elif (
            session is None
            or not session.legacy
            or (self.gate.enabled and session.principal != principal)
        ):
            raise HttpError(404, "Not Found: unknown or ended session")
        body = request.body
        try:
            message = decode_frame(body)
        except JSONRPCError as exc:
            if exc.code == PARSE_ERROR:  # not JSON: answered here, on this POST
                raise rejection(400, exc) from None
            message = []  # JSON, but not JSON-RPC: the session answers on its stream
            frame = DecodedFrame(body, error=exc)
        else:
            # Read once: the session's connection takes this reading, and answers on the
            # stream what it finds wrong (a batch is judged there, as on any stream).
            try:
                kind = None if isinstance(message, list) else classify(message)
                frame = DecodedFrame(body, message, kind)
            except JSONRPCError as exc:
                frame = DecodedFrame(body, error=exc)
        self.gate.check_tools(token, calls_in(message))
        if shared is not None:
            # To the replica holding the stream (maybe this one), in the store's order.
            try:
                await shared.bus.publish(_key(session_id), bytes(body))
            except StoreUnavailable as exc:
                raise store_refusal(exc) from None
        else:
            assert session is not None
            session.touch()
            await session.feed(frame)
        await exchange.respond(202, b"Accepted", content_type="text/plain")


async def _renew(session_id: str, shared: Store) -> None:
    """Keep a shared legacy session's record alive while its stream is open."""
    while True:
        await trio.sleep(RECORD_TTL / 3)
        try:
            await shared.sessions.touch(_key(session_id), RECORD_TTL)
        except StoreUnavailable as exc:
            log.warning("legacy session record not renewed session=%s: %s", session_id[:8], exc)
