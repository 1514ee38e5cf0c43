"""Handshake-era (2025-03-26 .. 2025-11-25) sessions on the Streamable HTTP endpoint.

``initialize`` opens a session; its POSTs run as that session connection's requests (each
in its POST's own task when it is a single request, ``_direct``, else fed to the connection
as the POST read it); GET opens the session's standing SSE stream or resumes one with
``Last-Event-ID`` (``_standing``); DELETE ends it. MCP 2025-11-25 basic/transports, "Session
Management" and "Resumability and Redelivery".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, Raw

from ...protocol import (
    CANCELLED,
    HANDSHAKE_VERSIONS,
    INITIALIZE,
    DecodedFrame,
    Envelope,
    JSONRPCError,
    Kind,
    ToolCall,
    batch_refusal,
    cancelled_id,
    error_reply,
    id_key,
    overloaded,
    split_batch,
)
from ...stores import StoreUnavailable
from ._auth import Gate
from ._direct import DirectRequests
from ._edge import HttpLimits
from ._exchange import Exchange, HttpError, HttpRequest, refusal
from ._session import HttpSession, SessionRegistry, in_flight, store_refusal
from ._standing import StandingStreams
from ._streams import answer

if TYPE_CHECKING:
    from .. import ServerPort

__all__ = ["HandshakeEra"]

log = logging.getLogger("mcp_runtime.http")


class HandshakeEra:
    """The session side of the Streamable HTTP endpoint (``StreamableEndpoint.sessions``):
    ``initialize``, POSTs to a session, its GET stream and DELETE."""

    def __init__(
        self, port: ServerPort, limits: HttpLimits, registry: SessionRegistry, gate: Gate
    ) -> None:
        self.port = port
        self.limits = limits
        self.registry = registry
        self.gate = gate
        #: Its collaborators: a single request run in its POST's task, and the GET streams.
        self.direct = DirectRequests(limits)
        self.streams = StandingStreams(limits)

    async def principal(self, request: HttpRequest) -> Any:
        """The session key of the request's principal (None without auth); refusals raise."""
        key, _principal = await self.gate.check_request(request)
        return key

    async def session(self, request: HttpRequest, principal: Any) -> HttpSession:
        """The session a GET or DELETE names (:meth:`find`), touched: its idle time starts
        again now."""
        session_id = request.header("mcp-session-id")
        assert session_id is not None
        session = await self.find(request, session_id, principal)
        session.touch()
        return session

    async def find(
        self, request: HttpRequest, session_id: str, principal: Any, token: Any = None
    ) -> HttpSession:
        """The live session ``session_id`` (the request's ``Mcp-Session-Id``) for
        ``principal``, at a protocol version it may use; refusals raise. Not touched: the
        POST that found it is what touches it (``post_session``), so that a request run in
        its POST's task reads the clock once, at its end."""
        try:
            session = await self.registry.find(session_id, principal, token)
        except StoreUnavailable as exc:
            raise store_refusal(exc) from None
        # With auth on, a session belongs to the principal that created it: to anyone else
        # it does not exist (404 reveals nothing).
        if (
            session is None
            or session.legacy
            or (self.gate.enabled and session.principal != principal)
        ):
            raise refusal(404, "Not Found: unknown or ended session")
        version = request.header("mcp-protocol-version")
        # 2025-06-18+ "Protocol Version Header": an invalid or unsupported one gets 400;
        # when absent the server assumes 2025-03-26 (nothing to check).
        if version is not None and version not in HANDSHAKE_VERSIONS:
            raise refusal(400, f"Bad Request: unsupported MCP-Protocol-Version {version!r}")
        shared = session.shared
        if shared is not None:
            # The store's round trip below may wait: the session is not idle meanwhile.
            session.touch()
            now = session.last_seen
            # Keep the shared record alive (its TTL is the idle timeout), not on every POST.
            if now - session.shared_touched > min(60.0, self.limits.session_idle_timeout / 4):
                session.shared_touched = now
                # In use across the round trip: not evicted under the request that found it
                # (``SessionRegistry._evict``).
                session.in_use += 1
                try:
                    await shared.sessions.touch(session.id, self.limits.session_idle_timeout)
                except StoreUnavailable as exc:
                    raise store_refusal(exc) from None
                finally:
                    session.in_use -= 1
        return session

    async def initialize(
        self,
        request: HttpRequest,
        exchange: Exchange,
        principal: Any,
        message: Envelope,
        accept_json: bool,
        accept_sse: bool,
        token: Any = None,
    ) -> None:
        session = self.registry.create(principal, token=token)
        if session is None:
            error = overloaded("too many sessions", maxSessions=self.limits.max_sessions)
            raise HttpError(503, "Service Unavailable: too many sessions", error_reply(error))
        try:
            await self.registry.share(session)
        except StoreUnavailable as exc:
            raise store_refusal(exc) from None
        try:
            await self.post_session(
                request, exchange, session, message, Kind.REQUEST, accept_json, accept_sse
            )
        finally:
            if session.protocol_version is None:  # initialize failed: no session
                session.end()

    async def post_session(
        self,
        request: HttpRequest,
        exchange: Exchange,
        session: HttpSession,
        message: Envelope | list[Raw],
        kind: int | None,
        accept_json: bool,
        accept_sse: bool,
        prepared: ToolCall | None = None,
        read: Mapping[int, tuple[Envelope, ToolCall]] | None = None,
    ) -> None:
        """A POST to ``session``: ``message`` is the decoded body (``runtime.protocol``), one
        envelope of ``kind`` (already classified) or a batch (judged here, item by item:
        ``read`` holds the items read with the body, by index). ``prepared``, the reading of
        a request's params made with the body (``ServerPort.read_frame``, ``read_call``), is
        handed to its handler. What this POST feeds the session's connection goes as this
        reading (``DecodedFrame``): it is neither decoded nor judged again.

        Idle expiry (``SessionRegistry.reap``: ``in_use == 0`` and not touched for
        ``session_idle_timeout``): ``session`` comes untouched from :meth:`find`, with no
        checkpoint since. A request run in this task is in use from before its first
        checkpoint and touched at its end, one clock read per POST; any other POST is
        touched here, first, since it may wait before it counts itself in use."""
        if accept_sse and self.limits.prefer_sse:
            accept_json = False  # answered as SSE even when the answer is one message
        headers = [("Mcp-Session-Id", session.id)]
        if (
            kind == Kind.REQUEST
            and isinstance(message, Envelope)
            and self._session_direct(session, message)
        ):
            await self.direct.run(
                exchange, session, message, accept_json, accept_sse, headers, prepared
            )
            return
        session.touch()
        body = request.body
        batch_errors: list[bytes] = []
        #: The client responses and cancellations of a batch (2025-03-26 allows batches of
        #: responses to server requests): another replica may run the request they concern.
        routed: list[bytes] = []
        if isinstance(message, list):
            forbidden = batch_refusal(session.protocol_version, http=True)
            if forbidden is not None:
                raise refusal(400, forbidden)
            # Batch-level errors (empty, too large) have no id to route by: they are this
            # POST's answer (400 with the JSON-RPC error body, 2025-03-26 basic/transports).
            try:
                split = split_batch(message, self.port.max_batch_size, read)
            except JSONRPCError as exc:
                raise HttpError(400, exc.message, error_reply(exc), headers) from None
            if not split.raws:  # nothing acceptable: the item errors are the answer
                raise HttpError(
                    400, "Invalid Request", b"[" + b",".join(split.errors) + b"]", headers
                )
            envelopes = split.envelopes
            keys = [id_key(request_id) for request_id in split.request_ids]
            if session.shared is not None:
                routed = [
                    bytes(raw)
                    for raw, envelope in zip(split.raws, envelopes, strict=True)
                    if envelope.method is UNSET or envelope.method == CANCELLED
                ]
            batch_errors = split.errors
            if batch_errors and not keys:
                # Only notifications/responses are left: no reply to splice the errors into.
                raise HttpError(
                    400, "Invalid Request", b"[" + b",".join(batch_errors) + b"]", headers
                )
            # Judged here, item by item: the connection walks the items as they are.
            items = dict(enumerate(zip(envelopes, split.calls, strict=True)))
            frame = DecodedFrame(body, split.raws, read=items)
        else:
            envelopes = [message]
            keys = [id_key(message.id)] if kind == Kind.REQUEST else []  # type: ignore[arg-type]
            frame = DecodedFrame(body, message, kind, prepared)
        if not keys:
            session.in_use += 1
            try:
                await session.feed(frame)
            finally:
                session.in_use -= 1
            for envelope in envelopes:
                if envelope.method == CANCELLED:
                    self._cancelled(session, envelope)
            # A response to a server request, or a cancellation, may concern a request
            # another replica runs: route it there too (the others ignore it).
            if (
                session.shared is not None
                and isinstance(message, Envelope)
                and (kind == Kind.RESPONSE or message.method == CANCELLED)
            ):
                await session.publish(b"in", bytes(body))
            elif routed:  # (the others ignore what concerns none of their requests)
                await session.publish(b"in", b"[" + b",".join(routed) + b"]")
            await exchange.respond(202, b"", headers=headers)
            return
        if routed:  # a batch of requests and responses: its responses go to the others too
            await session.publish(b"in", b"[" + b",".join(routed) + b"]")
        stream = session.open_stream(keys)
        if stream is None:
            raise in_flight(session, keys)
        stream.batch_errors = batch_errors
        session.in_use += 1
        try:
            prime_id = None
            if isinstance(message, Envelope) and message.method == INITIALIZE and accept_json:
                # Answered as JSON unless something comes before the answer: its events are
                # stored only then (the priming one first), never the JSON answer itself.
                stream.lazy_prime = stream.json_first = True
            else:
                prime_id = await session.prime(stream)
            await session.feed(frame)
            await answer(exchange, stream, self.limits, accept_json, accept_sse, headers, prime_id)
        finally:
            session.in_use -= 1
            session.touch()
            session.release(stream)

    @staticmethod
    def _cancelled(session: HttpSession, envelope: Envelope) -> None:
        """The client cancelled a request of this session: its POST stream may end."""
        params = envelope.params if isinstance(envelope.params, Raw) else None
        try:
            request_id = cancelled_id(params)
        except JSONRPCError:
            return  # malformed: the session's connection logs it
        if request_id is not None:
            session.cancelled(request_id)

    @staticmethod
    def _session_direct(session: HttpSession, message: Envelope) -> bool:
        """Whether a single request can run in the POST's own task
        (``SessionConnection.run_request``); else the POST feeds the session's connection:
        ``initialize``, which opens it (and is saved before its answer leaves, ``route``)."""
        return not (session.connection is None or session.legacy or message.method == INITIALIZE)

    # -- GET / DELETE (handshake era) -----------------------------------------------------

    async def get(self, request: HttpRequest, exchange: Exchange) -> None:
        if request.header("mcp-session-id") is None:
            # 2026-07-28 "Backward Compatibility": GET gets 405; there is no session-less
            # standing stream in either era.
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "POST")])
        principal = await self.principal(request)
        session = await self.session(request, principal)
        await self.streams.open(request, exchange, session)

    async def delete(self, request: HttpRequest, exchange: Exchange) -> None:
        if request.header("mcp-session-id") is None:
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "POST")])
        principal = await self.principal(request)
        session = await self.session(request, principal)
        session.deleted = True
        session.end()
        if session.shared is not None:
            try:
                await session.shared.sessions.delete(session.id)
            except StoreUnavailable as exc:
                raise store_refusal(exc) from None
            await session.publish(b"end", b"")
        await exchange.respond(200, b"")
