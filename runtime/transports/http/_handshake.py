"""Handshake-era (2025-03-26 .. 2025-11-25) sessions on the Streamable HTTP endpoint.

``initialize`` opens a session; its POSTs run as that session connection's requests (each
in its POST's own task when it is a single request, else fed to the connection); GET opens
the session's standing SSE stream or resumes one with ``Last-Event-ID``; DELETE ends it.
MCP 2025-11-25 basic/transports, "Session Management" and "Resumability and Redelivery".
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import trio
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
    duplicate_request,
    error_reply,
    id_key,
    overloaded,
    split_batch,
    store_unavailable,
)
from ...stores import StoreUnavailable, split_event_id
from ._auth import Gate
from ._edge import HttpLimits
from ._exchange import Exchange, HttpError, HttpRequest, parse_accept, refusal, rejection
from ._follow import follow
from ._in_order import InOrder, seq_of
from ._session import HttpSession, SessionRegistry
from ._streams import Key, ResponseStream, answer, pump, sse_event

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
            await self._post_direct(
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
            raise _in_flight(session, keys)
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
            await self._answer(exchange, stream, accept_json, accept_sse, headers, prime_id)
        finally:
            session.in_use -= 1
            session.touch()
            session.release(stream)

    async def _answer(
        self,
        exchange: Exchange,
        stream: ResponseStream,
        accept_json: bool,
        accept_sse: bool,
        headers: list[tuple[str, str]],
        prime_id: str | None,
    ) -> None:
        """Answer a session POST from its (resumable) response stream."""
        await answer(
            exchange,
            stream,
            accept_json=accept_json,
            accept_sse=accept_sse,
            headers=headers,
            resumable=True,
            prime_id=prime_id,
            retry_ms=self.limits.sse_retry_ms,
            keepalive=self.limits.sse_keepalive,
        )

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

    async def _post_direct(
        self,
        exchange: Exchange,
        session: HttpSession,
        envelope: Envelope,
        accept_json: bool,
        accept_sse: bool,
        headers: list[tuple[str, str]],
        prepared: ToolCall | None,
    ) -> None:
        """Run one request POSTed to ``session`` in this task
        (``SessionConnection.run_request``): no batch to judge, no body to keep. Its answer
        is JSON when it is the only message; if the request sends notifications first, a
        writer task answers from its stream (made then: ``DirectSlot``), as SSE for clients
        that take it, while the request runs on."""
        connection = session.connection
        assert connection is not None  # (``_session_direct``)
        key = id_key(envelope.id)  # type: ignore[arg-type]
        slot = session.open_direct(key)
        if slot is None:
            session.touch()  # (a request to the session all the same)
            raise _in_flight(session, [key])
        writer_done: trio.Event | None = None

        def start_writer() -> None:
            nonlocal writer_done
            if accept_sse and not exchange.hung_up_seen:
                assert slot.stream is not None  # (made for the message that calls this)
                writer_done = trio.Event()
                # (The writer is built here, when a message comes before the answer: most
                # such requests are answered as JSON with none.)
                write = functools.partial(
                    self._write_direct,
                    exchange,
                    slot.stream,
                    accept_json,
                    accept_sse,
                    headers,
                    writer_done,
                )
                try:
                    connection.start_soon(write)
                except RuntimeError:  # the connection is ending: answer at the end instead
                    writer_done = None

        async def answer_with(reply: bytes | None) -> None:
            if session.shared is not None:
                try:
                    await session.sync()  # e.g. logging/setLevel: before the client hears back
                except StoreUnavailable as exc:
                    log.warning("session change not shared session=%s: %s", session.id[:8], exc)
            if writer_done is not None or exchange.hung_up_seen:
                # The answer joins the stream (and the replay store, for a client that left).
                if reply is not None:
                    await session.route([(reply, None)])
                else:
                    session.cancelled(envelope.id)
                if writer_done is not None:
                    await writer_done.wait()
                return
            if reply is None:  # cancelled by the client: no response (as answer() does)
                session.close_direct(slot)
                if accept_sse:
                    await exchange.start_stream(200, "text/event-stream", headers, end=True)
                else:
                    await exchange.respond(204, b"", headers=headers)
            elif accept_json:
                session.close_direct(slot)
                await exchange.respond(200, reply, headers=headers)
            else:
                stream = session.stream_of(slot)  # (its events are stored)
                session.close_direct(slot)
                prime_id = await session.prime(stream)
                event_id = await session.store.append(session.id, stream.id, reply)
                opening = sse_event(None, prime_id, self.limits.sse_retry_ms)
                await exchange.start_stream(
                    200,
                    "text/event-stream",
                    [*headers, ("X-Accel-Buffering", "no")],
                    first=opening + sse_event(reply, event_id),
                    end=True,
                )

        # Run under the HTTP connection's generation scope when it has one (no scope of the
        # request's own to make, enter and leave); cancelled through it, the request is
        # answered by the connection once it left that scope (``Exchange.after_cancel``).
        scope = exchange.request_scope
        cancelled: list[bytes | None] = []
        slot.on_message = start_writer
        # In use before the first checkpoint since ``find``, touched once at the end (see
        # ``post_session``): the idle time starts when the request is answered.
        session.in_use += 1
        try:
            try:
                if scope is None:
                    reply = await connection.run_request(envelope, None, None, prepared)
                elif prepared is None:
                    reply = await connection.run_request(envelope, scope, cancelled.append)
                else:
                    reply = await connection.run_request(
                        envelope, scope, cancelled.append, prepared
                    )
            except trio.Cancelled:
                if cancelled:
                    exchange.after_cancel = functools.partial(answer_with, cancelled[0])
                raise
            finally:
                slot.on_message = None
                if slot.stream is not None:
                    slot.stream.on_message = None
            await answer_with(reply)
        finally:
            session.in_use -= 1
            session.touch()
            if slot.stream is not None:
                session.release(slot.stream)

    async def _write_direct(
        self,
        exchange: Exchange,
        stream: ResponseStream,
        accept_json: bool,
        accept_sse: bool,
        headers: list[tuple[str, str]],
        done: trio.Event,
    ) -> None:
        """The writer task of a request run in its POST's task (:meth:`_post_direct`) that
        sent a message before its answer: it answers the POST from the request's stream
        while the request runs on, and sets ``done`` when it stopped."""
        try:
            # The priming event was stored before the event that woke this writer.
            await self._answer(exchange, stream, accept_json, accept_sse, headers, stream.prime_id)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
            # The client left (its events stay in the store for Last-Event-ID).
            log.info("stream writer stopped: the client is gone stream=%s", stream.id)
        finally:
            done.set()

    # -- GET / DELETE (handshake era) -----------------------------------------------------

    async def get(self, request: HttpRequest, exchange: Exchange) -> None:
        if request.header("mcp-session-id") is None:
            # 2026-07-28 "Backward Compatibility": GET gets 405; there is no session-less
            # standing stream in either era.
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "POST")])
        principal = await self.principal(request)
        session = await self.session(request, principal)
        if not parse_accept(request.header("accept"))[1]:
            raise refusal(406, "Not Acceptable: a GET must accept text/event-stream")
        if session.get_streams >= self.limits.max_streams_per_session:
            raise refusal(429, "Too Many Requests: too many SSE streams for this session")
        last = request.header("last-event-id")
        if last is not None:
            # (The stream an event id names: ``EventStore.replay`` reads the same prefix.)
            stream: ResponseStream | None = session.streams.get(last.rpartition("_")[0])
        else:
            stream = session.standing
            if stream.attached:
                raise refusal(409, "Conflict: this session's GET stream is already open")
        # Claimed before the first checkpoint: what another replica routes to the stream
        # from here on queues for this response (``HttpSession.on_bus`` drops it for a GET
        # stream this replica does not hold) rather than being lost while the replay is
        # read and the head and priming event go out; a replayed event that also queued is
        # skipped by its number. A client that has seen the head may cause such a message
        # at once (2025-11-25 basic/transports, "Listening for Messages from the Server"),
        # and under load it can arrive before the stream would otherwise be attached.
        claimed = stream if stream is not None and not stream.attached else None
        if claimed is not None:
            claimed.attached = True
            claimed.overflowed = False
        headers = [("Mcp-Session-Id", session.id), ("X-Accel-Buffering", "no")]
        session.get_streams += 1
        session.in_use += 1
        try:
            if last is not None and stream is None and session.holds is not None:
                # A POST stream this replica does not produce: followed in the store.
                await self._follow(exchange, session, last, headers)
                return
            replay: list[tuple[str, bytes]] = []
            skip = 0
            if last is not None:
                try:
                    found = await session.store.replay(session.id, last)
                except StoreUnavailable as exc:
                    raise store_refusal(exc) from None
                if found is None:
                    raise refusal(400, "Bad Request: unknown Last-Event-ID")
                replay = found[1]
                skip = seq_of(replay[-1][0]) if replay else seq_of(last)
            # Where the stream starts, for the order of what other replicas feed it
            # (``_in_order``; one replica's events go out as they are routed).
            after: int | None = skip
            reopened = last is None and session.standing.prime_id is not None
            if reopened:
                # Its priming event is reused, so the stream's counter says where it stands
                # (read once, as near the claim as can be: what comes after it goes out).
                shared = session.shared is not None
                after = await _last_number(session, session.standing.id) if shared else None
            await exchange.start_stream(200, "text/event-stream", headers)
            if stream is session.standing and last is None:
                prime = await session.prime(stream)
                if not reopened:
                    after = seq_of(prime) if prime is not None else None
                if not reopened and after is not None and claimed is not None:
                    # Routed here while the priming event was stored: ids below its own
                    # go out first, so ids only grow (a client resuming from the priming
                    # event misses none of them).
                    for event_id, data in claimed.take_below(after):
                        await exchange.write(sse_event(data, event_id))
                await exchange.write(sse_event(None, prime, self.limits.sse_retry_ms))
                if reopened and after is not None and claimed is not None:
                    # Routed here while the counter was read: at or below it, above the
                    # reused priming event's id (so ids only grow here too).
                    for event_id, data in claimed.take_below(after + 1):
                        await exchange.write(sse_event(data, event_id))
            else:
                await exchange.write(b"retry: %d\n\n" % self.limits.sse_retry_ms)
            for event_id, data in replay:
                await exchange.write(sse_event(data, event_id))
            order = None
            if claimed is session.standing and session.shared is not None:
                # Other replicas feed this stream through the bus (``_in_order``).
                order = InOrder(after, functools.partial(_stored_after, session, claimed.id))
            if (
                claimed is not None
                and not claimed.done
                and not await pump(exchange, claimed, self.limits.sse_keepalive, skip, order)
            ):
                return
            await exchange.end()
        finally:
            if claimed is not None:
                claimed.attached = False
                session.release(claimed)
            session.get_streams -= 1
            session.in_use -= 1
            session.touch()

    async def _follow(
        self, exchange: Exchange, session: HttpSession, last: str, headers: list[tuple[str, str]]
    ) -> None:
        """Resume, from ``last``, a shared session's POST stream that another replica
        produces (or produced): ``_follow``."""
        split = split_event_id(last)
        if split is None:
            raise refusal(400, "Bad Request: unknown Last-Event-ID")
        stream_id, after = split
        try:
            state = await session.store.follow(session.id, stream_id, after)
        except StoreUnavailable as exc:
            raise store_refusal(exc) from None
        if state is None:
            raise refusal(400, "Bad Request: unknown Last-Event-ID")
        await exchange.start_stream(200, "text/event-stream", headers)
        await exchange.write(b"retry: %d\n\n" % self.limits.sse_retry_ms)
        if await follow(exchange, session, stream_id, state, after, self.limits.sse_keepalive):
            await exchange.end()

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


def _in_flight(session: HttpSession, keys: list[Key]) -> HttpError:
    """400 for a POST naming a request id whose answer another POST still waits for
    (``HttpSession.taken``); the error names that id."""
    key = session.taken(keys)
    request_id = None if key is None else key[1]
    return rejection(400, duplicate_request(request_id), request_id)


def store_refusal(exc: StoreUnavailable) -> HttpError:
    """The shared store did not answer in time: 503 with a JSON-RPC error, at once (the
    detail goes to the log, not the wire, under the correlation id the error carries)."""
    correlation = secrets.token_hex(8)
    log.warning("session store unavailable correlation=%s: %s", correlation, exc)
    reason = "Service Unavailable: session store unavailable"
    body = error_reply(store_unavailable("Session", correlation))
    return HttpError(503, reason, body, [("Retry-After", "1")])


#: The longest wait for the shared store's events in a GET stream's gap (``_in_order``).
FILL_WAIT: Final = 2.0


async def _last_number(session: HttpSession, stream_id: str) -> int | None:
    """The number of ``stream_id``'s latest id in the shared store; None when the store
    fails (the stream's first event is then its start, ``_in_order``)."""
    try:
        return await session.store.last_number(session.id, stream_id)
    except StoreUnavailable as exc:
        log.warning("GET stream start unknown session=%s: %s", session.id[:8], exc)
        return None


async def _stored_after(
    session: HttpSession, stream_id: str, after: int
) -> list[tuple[str, bytes]]:
    """The stored events of ``stream_id`` after number ``after``, in order; none when the
    store fails (the gap stays as the bus left it)."""
    with trio.move_on_after(FILL_WAIT):
        try:
            found = await session.store.replay(session.id, f"{stream_id}_{after}")
        except StoreUnavailable as exc:
            log.warning("gap not filled session=%s: %s", session.id[:8], exc)
            return []
        return found[1] if found is not None else []
    return []
