"""Handshake-era (2025-03-26 .. 2025-11-25) Streamable HTTP sessions.

A session is ONE long-lived connection of the supervisor: POST bodies feed its input
channel, and its output is routed by the id of the request each message belongs to, to
that POST's response stream, else to the session's standing GET stream (MCP 2025-11-25
basic/transports, "Multiple Connections": each message goes on exactly one stream).
Session ids come from a CSPRNG (``secrets``; "Session Management": globally unique,
cryptographically secure, visible ASCII only).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from ... import eager
from ...protocol import (
    DecodedFrame,
    RequestId,
    duplicate_request,
    error_reply,
    id_key,
    probe,
    store_unavailable,
)
from ...stores import (
    RENEWALS_PER_LEASE,
    EventStore,
    MemoryEventStore,
    SessionRecord,
    Store,
    StoreUnavailable,
)
from ._edge import HttpLimits
from ._exchange import HttpError, rejection
from ._inbox import Inbox
from ._streams import Key, ResponseStream

if TYPE_CHECKING:
    from .. import ProtocolSession, ServerPort, SessionConnection

__all__ = ["DirectSlot", "HttpSession", "SessionRegistry", "in_flight", "store_refusal"]

log = logging.getLogger("mcp_runtime.http")


class _SessionChannel:
    """The session's ``MessageChannel``: input from POST bodies (decoded and judged by the
    POST: ``DecodedFrame``), output routed by id."""

    def __init__(self, session: HttpSession) -> None:
        self._session = session
        #: A Streamable HTTP session refuses a POST whose id another POST still waits for
        #: (``HttpSession.open_stream``, ``open_direct``): its connection judges ids no
        #: more. A 2024-11-05 session answers every request on its one GET stream: its
        #: connection does.
        self.refuses_duplicate_ids = not session.legacy

    async def receive(self) -> bytes | DecodedFrame:
        return await self._session.inbox.receive()

    def receive_nowait(self) -> bytes | DecodedFrame:
        """Read only while there is input (``MessageChannel.receive_nowait``): an idle
        session holds no reader task."""
        return self._session.inbox.receive_nowait()

    def wake(self) -> None:
        """The connection needs a round served (input, a task to start, its end)."""
        self._session.wake()

    async def send(self, messages: Sequence[tuple[bytes, RequestId | None]]) -> None:
        await self._session.route(messages)

    def send_now(
        self, messages: Sequence[tuple[bytes, RequestId | None]]
    ) -> Awaitable[None] | None:
        """Route ``messages`` in this step when nothing in the way waits (the in-memory
        event store of an unshared session never does): None, and the outbox needs no
        write scope. Else all of ``send``, unstarted: a store's round trip enters scopes of
        its own, which must nest inside the outbox's (so it may not start out here)."""
        session = self._session
        store = session.store
        if session.shared is not None or type(store) is not MemoryEventStore:
            return self.send(messages)
        if len(messages) == 1 and session.route_now(store, *messages[0]):
            return None
        done, suspended = eager.start(session.route(messages))
        if done:
            return None
        assert isinstance(suspended, eager.Suspended)  # (the memory store never waits)
        return eager.finish(suspended)

    def ready(self, related: RequestId | None) -> bool:
        """Whether an unsolicited message now goes straight to the GET stream's socket
        (``MessageChannel.ready``): its pump waits with nothing queued. Messages related
        to a request take the usual way."""
        return related is None and self._session.standing.direct is not None

    async def aclose(self) -> None:
        self._session.inbox.close()


class DirectSlot:
    """Where the messages of one request go that its POST runs in its own task
    (``HandshakeEra``): its response stream is made only when a message comes before the
    answer (progress, logs, a server request) or the stream is cut, since most such
    requests are answered as JSON with nothing before (benchmarks/README.md, "A session
    request's stream made on demand")."""

    __slots__ = ("key", "on_message", "stream")

    def __init__(self, key: Key) -> None:
        self.key = key
        self.stream: ResponseStream | None = None
        #: Given to the stream when it is made (``ResponseStream.on_message``).
        self.on_message: Callable[[], None] | None = None


class HttpSession:
    """One handshake-era session: its protocol state (``core``), the connection serving it,
    its response streams and the routing of its messages to them by request id."""

    def __init__(
        self,
        session_id: str,
        principal: Any,
        core: ProtocolSession,
        store: EventStore,
        limits: HttpLimits,
        inbound_queue: int,
        legacy: bool = False,
    ) -> None:
        self.id = session_id
        self.principal = principal
        self.core = core
        self.store = store
        self.limits = limits
        #: What POSTs feed the connection (``Inbox``: no memory channel pair per session).
        self.inbox = Inbox(inbound_queue)
        self.inbox.on_input = self._on_input
        self._stream_numbers = itertools.count(1)
        self.standing = ResponseStream("g0", queue_size=limits.stream_queue_size)
        self.streams: dict[str, ResponseStream] = {"g0": self.standing}
        self._by_key: dict[Key, ResponseStream | DirectSlot] = {}
        self.get_streams = 0
        self.in_use = 0
        self.last_seen = trio.current_time()
        #: The cancel scope of the round serving the connection now (None while idle).
        self.scope: trio.CancelScope | None = None
        #: The registry whose nursery hosts the session's rounds (``run``; None once it
        #: ended); ``in_round``: one is started and has not ended. Idle between rounds, the
        #: session holds no task.
        self.registry: SessionRegistry | None = None
        self.in_round = False
        self.ended = False
        #: The session's core connection once it serves (for the direct POST path).
        self.connection: SessionConnection | None = None
        #: A 2024-11-05 HTTP+SSE session (reachable only through its messages URL).
        self.legacy = legacy
        #: The shared store when replicas share sessions (else None): see ``SessionRegistry``;
        #: ``port`` is then the server's (what the session negotiated is saved there).
        self.shared: Store | None = None
        self.port: ServerPort | None = None
        #: The last record saved (compared after each request: saved again when it changed).
        self.saved: SessionRecord | None = None
        self.stream_suffix = ""
        self.shared_touched = trio.current_time()
        self.unsubscribe: Callable[[], None] | None = None
        #: Ended by DELETE (not by this replica's idle expiry or shutdown).
        self.deleted = False
        #: With a shared store, the registry's POST streams whose leases this replica renews
        #: (``SessionRegistry.renew_leases``), keyed by (session, stream).
        self.holds: dict[tuple[str, str], ResponseStream] | None = None
        # Handlers may end their own POST's SSE stream early (Context.close_sse_stream).
        core.close_stream = self.cut_stream

    def cut_stream(self, request_id: RequestId) -> bool:
        """End the HTTP response of ``request_id``'s POST stream now; the stream lives on
        for ``Last-Event-ID`` (see ``ResponseStream.cut``). False when there is none (a
        2024-11-05 session answers on its one GET stream)."""
        stream = self._by_key.get(id_key(request_id))
        if stream is None or self.legacy:
            return False
        if isinstance(stream, DirectSlot):
            stream = self.stream_of(stream)
        return stream.cut()

    @property
    def protocol_version(self) -> str | None:
        return self.core.protocol_version

    def touch(self) -> None:
        self.last_seen = trio.current_time()

    def taken(self, keys: Sequence[Key]) -> Key | None:
        """The first of ``keys`` that a POST's answer still waits for (None: none is).

        The one judge of duplicate request ids on this session (JSON-RPC 2.0 section 4:
        ids correlate; here they route each answer to its POST): from the POST that names an
        id until its answer is routed or written, a span that covers the connection's own
        (which therefore judges ids no more: ``_SessionChannel.refuses_duplicate_ids``)."""
        by_key = self._by_key
        return next((key for key in keys if key in by_key), None)

    def open_stream(self, keys: Sequence[Key]) -> ResponseStream | None:
        """A response stream for a POST's requests; None when one of the ids is in flight
        (:meth:`taken`)."""
        if self.taken(keys) is not None:
            return None
        stream = self._new_stream(keys)
        for key in keys:
            self._by_key[key] = stream
        return stream

    def _new_stream(self, keys: Sequence[Key]) -> ResponseStream:
        stream = ResponseStream(
            f"p{next(self._stream_numbers)}{self.stream_suffix}",
            keys,
            queue_size=self.limits.stream_queue_size,
        )
        self.streams[stream.id] = stream
        return stream

    def open_direct(self, key: Key) -> DirectSlot | None:
        """A slot for one request its POST runs in its own task; None when the id is in
        flight. Its stream is made by :meth:`stream_of` when needed."""
        if key in self._by_key:
            return None
        slot = self._by_key[key] = DirectSlot(key)
        return slot

    def stream_of(self, slot: DirectSlot) -> ResponseStream:
        """The response stream of ``slot``'s request, made now if not yet (its priming
        event allocated when its first event is stored)."""
        stream = slot.stream
        if stream is None:
            stream = slot.stream = self._new_stream((slot.key,))
            stream.lazy_prime = True
            stream.on_message = slot.on_message
            if self._by_key.get(slot.key) is slot:
                self._by_key[slot.key] = stream
        return stream

    def close_direct(self, slot: DirectSlot) -> None:
        """``slot``'s request was answered by its POST (without routing)."""
        if slot.stream is not None:
            self.close_stream(slot.stream)
        elif self._by_key.get(slot.key) is slot:
            del self._by_key[slot.key]
            if not self._by_key:
                self._by_key.clear()  # (an emptied dict keeps its table; clear() frees it)

    def release(self, stream: ResponseStream) -> None:
        """The POST answering ``stream`` is done with it (answered, or the client left)."""
        if stream.done:
            self.streams.pop(stream.id, None)

    def close_stream(self, stream: ResponseStream) -> None:
        """``stream`` was answered without routing (its POST ran the request itself)."""
        stream.finish()
        for key in stream.pending:
            if self._by_key.get(key) is stream:
                del self._by_key[key]
        if not self._by_key:
            self._by_key.clear()  # (an emptied dict keeps its table; clear() frees it)
        self.release(stream)

    def cancelled(self, request_id: Any) -> None:
        """The client cancelled ``request_id``: no response will come (MCP cancellation), so
        its POST stream ends once nothing else is pending on it."""
        stream = self._by_key.pop(id_key(request_id), None)
        if isinstance(stream, DirectSlot):
            stream = stream.stream  # (none yet: nothing to end)
        if stream is not None:
            stream.pending.discard(id_key(request_id))
            if not stream.pending:
                stream.finish()

    async def feed(self, body: bytes | DecodedFrame) -> None:
        # A session that is ending drops input; its streams end too.
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self.inbox.send(body)

    async def prime(self, stream: ResponseStream) -> str | None:
        """The priming event of ``stream`` (allocated once, before its other events); None
        while a shared store is unreachable (the stream is then not resumable). A shared
        session's POST stream records with it the requests it answers and this replica's
        lease on it: a client that resumes it on another replica gets its answer from the
        store, or an error once the lease ran out (``_follow``)."""
        if stream.prime_id is None:
            try:
                holds = self.holds
                if holds is None or stream.standing:
                    stream.prime_id = await self.store.append(self.id, stream.id, None)
                else:
                    assert self.shared is not None  # (holds are given to shared sessions)
                    requests = msgspec.json.encode([key[1] for key in stream.pending])
                    stream.prime_id = await self.store.open_stream(
                        self.id, stream.id, requests, self.shared.lease
                    )
                    holds[(self.id, stream.id)] = stream
            except StoreUnavailable as exc:
                log.warning("event not stored session=%s: %s", self.id[:8], exc)
                return None
        return stream.prime_id

    async def sync(self) -> None:
        """Save what the session negotiated when it changed (``initialize``, ``logging/
        setLevel``), so the next POST finds it on whichever replica it lands."""
        if self.shared is None or self.port is None:
            return
        record = self.port.export_session(self.core)
        if record is None or record == self.saved:
            return
        if self.principal is not None:
            record.principal = principal_key(self.principal)
        await self.shared.sessions.save(self.id, record, self.limits.session_idle_timeout)
        self.saved = record
        self.shared_touched = trio.current_time()

    async def publish(self, kind: bytes, data: bytes) -> None:
        """Tell the other replicas holding this session (``in``: a client message for their
        connection; ``out``: an event for the GET stream; ``end``: the session ended)."""
        if self.shared is None:
            return
        message = kind + b" " + self.shared.replica.encode() + b" " + data
        try:
            await self.shared.bus.publish("session:" + self.id, message)
        except StoreUnavailable as exc:
            log.warning("not routed to other replicas session=%s: %s", self.id[:8], exc)

    def on_bus(self, message: bytes) -> None:
        """A message from another replica about this session (see :meth:`publish`)."""
        kind, _, rest = message.partition(b" ")
        origin, _, data = rest.partition(b" ")
        log.debug("bus session=%s kind=%s attached=%s", self.id[:8], kind, self.standing.attached)
        if self.shared is None or origin == self.shared.replica.encode():
            return
        if kind == b"in":
            try:
                self.inbox.send_nowait(data)
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                log.warning("dropped a routed client message session=%s", self.id[:8])
        elif kind == b"out":
            if self.standing.attached:
                event_id, _, payload = data.partition(b" ")
                self.standing.push(event_id.decode() or None, payload)
        elif kind == b"end":
            self.end()

    def route_now(self, store: MemoryEventStore, data: bytes, related: RequestId | None) -> bool:
        """:meth:`route` of one unrelated notification (it goes to the GET stream), for an
        unshared session on the in-memory store: in this step, with no coroutine, context
        or eager start around it. One change to 1,000 sessions is this once per session
        (benchmarks/README.md, "Fan-out over HTTP"). False: not that case, nothing
        done (:meth:`route` it)."""
        if related is not None or probe(data) != (False, None):
            return False
        stream = self.standing
        if stream.lazy_prime and stream.prime_id is None:
            stream.prime_id = store.append_now(self.id, stream.id, None)
        stream.push(store.append_now(self.id, stream.id, data), data)
        return True

    async def route(self, messages: Sequence[tuple[bytes, RequestId | None]]) -> None:
        for data, related in messages:
            is_response, message_id = probe(data)
            ref = related if related is not None else message_id
            stream = self._by_key.get(id_key(ref)) if ref is not None else None
            if isinstance(stream, DirectSlot):
                stream = self.stream_of(stream)
            if stream is None:
                stream = self.standing
                if is_response and not self.legacy:
                    log.info("response without a POST stream session=%s id=%r", self.id[:8], ref)
            if data[:1] == b"[" and stream.batch_errors and data[-1:] == b"]":
                errors, stream.batch_errors = stream.batch_errors, []
                data = data[:-1] + b"," + b",".join(errors) + b"]"
            if is_response and self.shared is not None and self.saved is None:
                data = await self._first_save(data, ref, stream)
            event_id: str | None = None
            if not (is_response and stream.json_first and stream.prime_id is None):
                # (Else the POST's JSON answer, first on its stream: nobody could resume it,
                # so it is not stored, nor kept by an idle session.)
                if stream.lazy_prime and stream.prime_id is None:
                    await self.prime(stream)
                try:
                    event_id = await self.store.append(self.id, stream.id, data)
                except StoreUnavailable as exc:
                    # Delivered without an id: not resumable while the store is away.
                    log.warning("event not stored session=%s: %s", self.id[:8], exc)
            if stream is self.standing or not is_response:
                stream.push(event_id, data)
                if stream is self.standing and self.shared is not None and not stream.attached:
                    # The GET stream may be held by another replica.
                    await self.publish(b"out", (event_id or "").encode() + b" " + data)
                continue
            if data[:1] == b"[":  # a batch reply answers every request of its POST
                finals = list(stream.pending)
                stream.pending = set(finals[:1])
                final: Key | None = finals[0] if finals else None
            else:
                assert ref is not None  # (without one the message went to the standing stream)
                final = id_key(ref)
            stream.push(event_id, data, final)
            if stream.done:
                for key in [k for k, s in self._by_key.items() if s is stream]:
                    del self._by_key[key]
                if not self._by_key:
                    self._by_key.clear()  # (an emptied dict keeps its table; clear() frees it)

    def _on_input(self) -> None:
        if self.connection is not None:  # (before it serves, its first round reads it)
            self.connection.resume()

    def wake(self) -> None:
        """Start a round unless one is under way (``_SessionChannel.wake``)."""
        if not self.in_round and self.registry is not None:
            self.in_round = True
            self.registry.start_round(self)

    async def run(self, port: ServerPort, shutdown: trio.Event) -> bool:
        """Serve the session's connection for one round: True once it ended (shut down,
        ended, or its channel broke), False when it went idle. The first round starts it
        (``port.serve_connection``); later ones, asked for by its channel's ``wake()``, call
        its ``serve()`` again (``SessionConnection``: a channel read only while it has
        input is served in rounds). An idle session holds no task, nursery or cancel scope;
        shutdown reaches it through the registry's one watcher."""

        def started(connection: SessionConnection) -> None:
            self._started(connection)
            if shutdown.is_set():
                connection.stop_reading()

        idle = False
        self.in_round = True
        self.scope = scope = trio.CancelScope()
        if self.ended:
            scope.cancel()
        try:
            with scope:
                if self.connection is None:
                    await port.serve_connection(
                        _SessionChannel(self),
                        session=self.core,
                        connection_id=f"http-{self.id[:8]}",
                        started=started,
                    )
                else:
                    await self.connection.serve()
            idle = self.connection is not None and not self.connection.ended
        finally:
            self.scope = None
            self.in_round = False
            if not idle:
                await self._finish()
        return not idle

    async def _finish(self) -> None:
        """The connection ended: so does the session, with every stream and its events."""
        self.registry = None  # (no round after this one)
        if self.unsubscribe is not None:
            self.unsubscribe()
        self.connection = None
        self.ended = True
        self.inbox.close()
        for stream in self.streams.values():
            stream.finish()
        self._by_key.clear()
        # A shared session's events outlive this replica's copy (until DELETE or expiry).
        if self.shared is None or self.deleted:
            with trio.CancelScope(shield=True), contextlib.suppress(StoreUnavailable):
                await self.store.forget(self.id)

    async def _first_save(
        self, data: bytes, ref: RequestId | None, stream: ResponseStream
    ) -> bytes:
        """Before the ``initialize`` response leaves, save the session for the other
        replicas. If the store cannot (unreachable, too slow), end the session and refuse
        its POST (``ResponseStream.refusal``: 503 + Retry-After, the JSON-RPC error as the
        body) rather than hand out the id of a session no other replica can find (404 on
        its next POST); the error reply goes on the stream for a response already under way."""
        try:
            await self.sync()
        except StoreUnavailable as exc:
            correlation = secrets.token_hex(8)
            log.warning(
                "session not saved session=%s correlation=%s: %s", self.id[:8], correlation, exc
            )
            self.end()
            error = store_unavailable("Session", correlation)
            stream.refusal = HttpError(
                503,
                "Service Unavailable: session store unavailable",
                error_reply(error, ref),
                [("Retry-After", "1")],
            )
            return error_reply(error, ref)
        return data

    def _started(self, connection: SessionConnection) -> None:
        self.connection = connection

    def end(self) -> None:
        """End now (DELETE, expiry): input closes and in-flight requests are cancelled (an
        idle session's connection is woken by its input closing, and its round ends it)."""
        self.ended = True
        self.inbox.close()
        if self.scope is not None:
            self.scope.cancel()


def principal_key(principal: Any) -> str:
    """A session's principal as the shared store keeps it (compared as a string)."""
    try:
        return msgspec.json.encode(principal).decode()
    except TypeError:
        return repr(principal)


class SessionRegistry:
    """Live sessions, capped at ``max_sessions``; idle ones expire and release everything."""

    def __init__(
        self,
        port: ServerPort,
        limits: HttpLimits,
        store: EventStore,
        nursery: trio.Nursery,
        shutdown: trio.Event,
        shared: Store | None = None,
    ) -> None:
        self.port = port
        self.limits = limits
        self.store = store
        self._nursery = nursery
        self._shutdown = shutdown
        self._sessions: dict[str, HttpSession] = {}
        #: A shared store (``Store.shared``): handshake sessions are saved there and any
        #: replica adopts a session it has not seen (``find``).
        self.shared = shared if shared is not None and shared.shared else None
        #: Shared sessions' POST streams this replica produces (``HttpSession.prime``).
        self.holds: dict[tuple[str, str], ResponseStream] = {}
        nursery.start_soon(self._stop_at_shutdown)
        if self.shared is not None:
            nursery.start_soon(self.renew_leases, self.shared.lease)

    async def _stop_at_shutdown(self) -> None:
        """One watcher for every session: at shutdown each stops reading and drains."""
        await self._shutdown.wait()
        for session in list(self._sessions.values()):
            if session.connection is not None:
                session.connection.stop_reading()

    async def renew_leases(self, lease: float) -> None:
        """Renew this replica's lease on each POST stream it still produces, every third of
        ``lease`` (``Store.lease``), in one round trip; ends after shutdown once none is
        left. A stream that ended is let go: a replica following it knows from its stored
        answer, or, without one (cancelled, its session ended here), once the lease ran out."""
        holds = self.holds
        while True:
            await trio.sleep(lease / RENEWALS_PER_LEASE)
            live: list[tuple[str, str]] = []
            for key, stream in list(holds.items()):
                if stream.done:
                    del holds[key]
                else:
                    live.append(key)
            if not live:
                if self._shutdown.is_set():
                    return
                continue
            try:
                await self.store.renew(live, lease)
            except StoreUnavailable as exc:
                log.warning("stream leases not renewed streams=%d: %s", len(live), exc)

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> HttpSession | None:
        session = self._sessions.get(session_id)
        if session is None or session.ended:
            return None
        return session

    async def find(self, session_id: str, principal: Any, token: Any = None) -> HttpSession | None:
        """The live session ``session_id``; with a shared store, one another replica created
        is adopted here (restored from its record, subscribed to its messages). Raises
        ``StoreUnavailable`` when the store cannot say."""
        session = self.get(session_id)
        if session is not None or self.shared is None:
            return session
        if session_id.startswith("sse:"):  # a 2024-11-05 session's record: never adopted
            return None
        record = await self.shared.sessions.load(session_id)
        if record is None:
            return None
        if principal is not None and record.principal != principal_key(principal):
            return None  # bound to someone else: it does not exist for this caller
        if len(self._sessions) >= self.limits.max_sessions and not self._evict():
            return None  # (a 404: the client initializes again)
        core = self.port.import_session("http", token, record)
        session = self.create(principal, token=token, core=core, session_id=session_id)
        assert session is not None
        session.saved = record
        await self.share(session)
        log.info("session adopted session=%s", session_id[:8])
        return session

    async def share(self, session: HttpSession) -> None:
        """Subscribe ``session`` to what other replicas route to it (a no-op unshared)."""
        if session.shared is not None and session.unsubscribe is None:
            try:
                session.unsubscribe = await session.shared.bus.subscribe(
                    "session:" + session.id, session.on_bus
                )
            except StoreUnavailable:
                session.end()
                raise

    def create(
        self,
        principal: Any,
        transport: str = "http",
        *,
        token: Any = None,
        core: ProtocolSession | None = None,
        session_id: str | None = None,
        legacy: bool = False,
    ) -> HttpSession | None:
        """Start a new session, or None when ``max_sessions`` are alive and none can make
        room (``_evict``). ``principal`` is the key the session is bound to; ``token`` what
        handlers see as ``ctx.principal``; ``legacy``: a 2024-11-05 HTTP+SSE session."""
        if len(self._sessions) >= self.limits.max_sessions and not self._evict():
            return None
        # 128 bits from the OS CSPRNG, visible ASCII
        session_id = session_id or secrets.token_hex(16)
        session = HttpSession(
            session_id,
            principal,
            core if core is not None else self.port.new_session(transport, token),
            self.store,
            self.limits,
            self.port.inbound_queue,
            legacy,
        )
        if self.shared is not None and transport == "http":
            session.shared = self.shared
            session.holds = self.holds
            session.port = self.port
            # Stream ids unique across replicas (event ids name their stream).
            session.stream_suffix = "-" + self.shared.replica
            # Its tasks belong to the shared id, not to this replica's copy.
            session.core.shared_id = session_id
        self._sessions[session_id] = session
        session.registry = self
        session.in_round = True
        self.start_round(session)
        log.info("session started session=%s", session_id[:8])
        return session

    def _evict(self) -> bool:
        """At ``max_sessions`` with ``session_eviction="lru"``: end the least recently used
        idle session (``HttpLimits.session_eviction``) and free its place now; False when
        none is idle (or the policy is "refuse"). Idle: no POST or GET being answered
        (``in_use``: a GET stream counts for its whole life), no round serving its
        connection (a request or task running there), no request in flight. Not one of a
        shared store's sessions is lost: only this process's copy ends (as when it expires
        here), and the next request naming it adopts it again (``find``).

        A scan of the sessions, at the cap only (about 1 ms at 10,000): keeping them in use
        order instead would cost every POST a move."""
        if self.limits.session_eviction != "lru":
            return False
        victim: HttpSession | None = None
        for session in self._sessions.values():
            if (
                session.in_use
                or session.in_round
                or session.ended
                or (session.connection is not None and session.connection.in_flight)
            ):
                continue
            if victim is None or session.last_seen < victim.last_seen:
                victim = session
        if victim is None:
            return False
        idle = trio.current_time() - victim.last_seen
        log.info("session evicted session=%s reason=max-sessions idle=%.0fs", victim.id[:8], idle)
        del self._sessions[victim.id]  # (its round, ending it, finds it gone)
        victim.end()
        return True

    def start_round(self, session: HttpSession) -> None:
        """Serve a round of ``session`` in the registry's nursery (the first starts it)."""
        self._nursery.start_soon(self._run, session)

    async def _run(self, session: HttpSession) -> None:
        ended = True
        try:
            ended = await session.run(self.port, self._shutdown)
        finally:
            if ended:
                # (Unless evicted already: its id may name a new copy by now, ``find``.)
                if self._sessions.get(session.id) is session:
                    del self._sessions[session.id]
                log.info("session ended session=%s", session.id[:8])

    async def reap(self) -> None:
        """Expire sessions idle for ``session_idle_timeout`` (run until shutdown)."""
        timeout = self.limits.session_idle_timeout
        if timeout == math.inf:
            return
        interval = max(0.05, min(60.0, timeout / 4))
        with trio.CancelScope() as scope:

            async def stop() -> None:
                await self._shutdown.wait()
                scope.cancel()

            self._nursery.start_soon(stop)
            while True:
                await trio.sleep(interval)
                now = trio.current_time()
                for session in list(self._sessions.values()):
                    if session.in_use == 0 and now - session.last_seen > timeout:
                        log.info("session expired session=%s idle=%ss", session.id[:8], timeout)
                        session.end()


def in_flight(session: HttpSession, keys: Sequence[Key]) -> HttpError:
    """400 for a POST naming a request id whose answer another POST still waits for
    (``HttpSession.taken``); the error, the one any duplicate id gets, names that id."""
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
