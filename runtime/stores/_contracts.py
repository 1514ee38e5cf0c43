"""The store seam: what a replica shares with the others, as protocols with their contracts.

One process keeps everything in memory (``runtime.stores.MemoryStore``, the default, today's
behaviour). Several workers or machines share a Redis (``RedisStore``). Every call below
promises the same three things, so callers can rely on them without knowing the backend:

- **Bounded**: it returns or raises within ``Store.timeout`` seconds (default 1 s); it never
  hangs on a slow or absent server.
- **One error**: when the backend cannot be reached or does not answer in time it raises
  :class:`StoreUnavailable` (never ``OSError``, never ``trio.TooSlowError``). HTTP turns that
  into ``503 Service Unavailable`` with a JSON-RPC error body.
- **Recovering**: after a failure the next call tries again (after a short backoff); nothing
  needs a restart once the backend is back.

A replica that runs something others may come to read (a task, the answer of a POST stream)
vouches for it with a **lease** of ``Store.lease`` seconds, renewed every third of it; when
the lease runs out before the work ended, the others know its replica is gone (killed, or
cut off from the store for that long) and end it for the client with an error.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol

import msgspec

__all__ = [
    "RENEWALS_PER_LEASE",
    "Bus",
    "EventStore",
    "SessionRecord",
    "SessionStore",
    "Store",
    "StoreUnavailable",
    "StreamState",
    "TaskSnapshot",
    "TaskStore",
    "split_event_id",
]


#: A lease (``Store.lease``) is renewed this many times within its length: a replica misses
#: as many renewals in a row (a slow store, a long pause) before the others take it for gone.
RENEWALS_PER_LEASE: Final = 3
#: The most digits an event number has: the counters are 64-bit (Redis ``HINCRBY`` stops at
#: 9,223,372,036,854,775,807, 19 digits), so a longer number names no event. The bound also
#: keeps ``int`` off a client's digits: past 4,300 of them CPython refuses the conversion
#: (``ValueError``, its guard against quadratic-time parsing), and below that it is slow.
MAX_EVENT_NUMBER_DIGITS: Final = 19
#: The longest event id read: ids are a stream id of a few characters (``g0``, ``p12``, or
#: ``p12-<replica>`` on a shared store), "_" and a number. ``Last-Event-ID`` is a client's
#: header (up to the head's 16 KiB): a longer one names no stream and is not looked up.
MAX_EVENT_ID_LENGTH: Final = 256


def split_event_id(event_id: str) -> tuple[str, int] | None:
    """``<stream>_<n>``, the form ``EventStore.append`` gives ids, as (stream, n); None when
    ``event_id`` is not of that form (``n`` ASCII digits: ``"\u00b2".isdigit()`` is True,
    but ``int`` refuses it) or longer than any id given (``MAX_EVENT_ID_LENGTH``,
    ``MAX_EVENT_NUMBER_DIGITS``): such an id is unknown, as one of another session is."""
    if len(event_id) > MAX_EVENT_ID_LENGTH:
        return None
    stream_id, _, number = event_id.rpartition("_")
    if (
        not stream_id
        or len(number) > MAX_EVENT_NUMBER_DIGITS
        or not (number.isascii() and number.isdigit())
    ):
        return None
    return stream_id, int(number)


class StoreUnavailable(Exception):
    """The shared store cannot be reached or did not answer within its timeout.

    The one exception a store call raises for its backend (see the module docstring), so a
    caller has one thing to catch. Where the answer needs the store, it becomes an error
    (HTTP 503 with a JSON-RPC error body; a task request's JSON-RPC error); where it does
    not (an SSE event kept for resumption, a change relayed to other replicas), it is
    logged and the request goes on without it."""


class SessionRecord(msgspec.Struct, omit_defaults=True):
    """What a handshake-era session negotiated (MCP 2025-11-25 basic/lifecycle), enough for
    any replica to serve its next POST: the version, the client's capabilities and info, the
    log level it set (``logging/setLevel``) and the principal it is bound to (an opaque
    string, compared as is)."""

    version: str
    client_capabilities: dict[str, Any] = {}
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    principal: str | None = None


class SessionStore(Protocol):
    """Handshake-era session records, keyed by ``Mcp-Session-Id``; each expires after ``ttl``
    seconds without a ``save`` or ``touch`` (the session idle timeout)."""

    async def save(self, session_id: str, record: SessionRecord, ttl: float) -> None:
        """Create or replace the record; it lives ``ttl`` more seconds."""
        ...

    async def load(self, session_id: str) -> SessionRecord | None:
        """The record, or None when there is none (never created, ended or expired)."""
        ...

    async def touch(self, session_id: str, ttl: float) -> None:
        """The session was used: it lives ``ttl`` more seconds (no-op when absent)."""
        ...

    async def delete(self, session_id: str) -> None:
        """The session ended (DELETE, expiry): the record is gone for every replica."""
        ...


class StreamState(msgspec.Struct):
    """A POST's response stream as a replica that does not hold it reads it
    (``EventStore.follow``): what it answers, whether its producer still vouches for it,
    and its stored events after a point."""

    #: The JSON array of the ids of the requests the stream answers (None: not recorded).
    requests: bytes | None
    #: Its producer's lease has not run out (``EventStore.open_stream``, ``renew``).
    held: bool
    #: Its stored events after the number asked for, in order.
    events: list[tuple[str, bytes]]


class EventStore(Protocol):
    """Where SSE events wait for a client that may resume with ``Last-Event-ID`` (MCP
    2025-11-25 basic/transports, "Resumability and Redelivery"); the HTTP transport's, with
    ``MemoryEventStore`` as its default. Event ids are ``<stream>_<n>``, ``n`` counting up
    within the stream, unique across replicas when the store is shared. Bounded per session
    (oldest dropped first) and by age (a shared store expires a session's events with it)."""

    async def append(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        """Store one event of ``stream_id`` (None: a priming event, counted, not replayed)
        and return its id."""
        ...

    async def replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream of ``last_event_id`` and its stored events after it, in order, or None
        when the id names no stream of this session."""
        ...

    async def last_number(self, session_id: str, stream_id: str) -> int:
        """The number of the latest id given to ``stream_id`` (0 when none was): where a
        stream stands when a reader starts from "now" rather than from a ``Last-Event-ID``
        (a handshake-era GET stream fed by several replicas). Reads only; one round trip."""
        ...

    async def open_stream(
        self, session_id: str, stream_id: str, requests: bytes, lease: float
    ) -> str:
        """The priming event of a POST's response stream (as ``append(session_id,
        stream_id, None)``), recording the requests it answers (``requests``: the JSON array
        of their ids) and that its producer holds it for ``lease`` seconds, in the same
        write: an id the client may resume from is never known without them."""
        ...

    async def renew(self, streams: list[tuple[str, str]], lease: float) -> None:
        """The producer still holds these POST streams (``(session, stream)`` pairs): each
        is held ``lease`` more seconds. One round trip."""
        ...

    async def follow(self, session_id: str, stream_id: str, after: int) -> StreamState | None:
        """POST stream ``stream_id`` as another replica sees it: its events numbered above
        ``after``, the requests it answers and whether it is held; None when the session
        has no such stream. One round trip (a resumed stream polls it)."""
        ...

    async def forget(self, session_id: str) -> None:
        """Drop everything kept for a session (it ended)."""
        ...


class TaskSnapshot(msgspec.Struct):
    """A task as every replica may read it (2026-07-28 tasks extension, SEP-2663): the
    ``DetailedTask`` that ``tasks/get`` answers, whose it is, which replica runs it, and until
    when that replica vouches for it (wall-clock seconds; renewed while it runs)."""

    task: dict[str, Any]
    owner: str | None
    replica: str
    lease_until: float


class TaskStore(Protocol):
    """Task snapshots, keyed by task id, each expiring after ``ttl`` seconds (the task's
    TTL). Written by the replica that runs the task on every status change and lease renewal;
    read by the others for ``tasks/get``, ``tasks/update`` and ``tasks/cancel``."""

    async def put(self, task_id: str, snapshot: TaskSnapshot, ttl: float) -> None:
        """Create or replace the snapshot."""
        ...

    async def put_many(self, items: list[tuple[str, TaskSnapshot, float]]) -> None:
        """Several ``put``s in one round trip (lease renewals)."""
        ...

    async def get(self, task_id: str) -> TaskSnapshot | None:
        """The snapshot, or None (unknown, expired)."""
        ...

    async def owned(self, owner: str) -> list[tuple[str, TaskSnapshot]]:
        """Every live snapshot whose ``owner`` is ``owner`` (by task id; any order): a
        handshake session's ``tasks/list`` on any replica."""
        ...


class Bus(Protocol):
    """Messages between replicas: at-most-once, in order per channel and publisher, to the
    replicas subscribed when it is published (Redis pub/sub semantics). Used to route a
    session's messages to the replica that holds its GET stream or runs the request a client
    response answers, and to fan out list-changed / resource-updated events."""

    async def publish(self, channel: str, data: bytes) -> None:
        """Send ``data`` to every current subscriber of ``channel`` on every replica."""
        ...

    async def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Callable[[], None]:
        """Call ``deliver(data)`` (synchronously, in the bus's task: it must not block) for
        each message on ``channel``, from when this returns; returns the unsubscribe
        function. Raises :class:`StoreUnavailable` if the subscription is not confirmed in
        time. After a reconnection the bus subscribes again by itself (messages published
        meanwhile are lost)."""
        ...


class Store(Protocol):
    """The bundle a server is given (``Server(store=...)``, ``--store URL``; ``open_store``
    reads the URL).

    Who uses which part: the HTTP transport its ``sessions`` (handshake-era sessions any
    replica may adopt) and ``events`` (SSE resumption, POST streams another replica
    follows); ``runtime.ensemble`` its ``tasks`` and ``bus`` (tasks and list changes seen by
    every replica) and ``shared_secret`` (the ``requestState`` key). The server enters
    ``running`` once per serve over sockets (HTTP, WebSocket, TCP, Unix) and calls the
    parts only inside it; a stdio or named-pipe server opens none. ``ready`` feeds the HTTP
    readiness probe and costs no round trip.
    """

    #: True when other processes see what this one stores (then sessions are adopted by any
    #: replica, and messages are routed through the bus).
    shared: bool
    #: This process's id among the replicas (random, short, URL-safe).
    replica: str
    #: The bound of every call, in seconds.
    timeout: float
    #: How long a replica vouches for its running tasks and POST streams, in seconds
    #: (renewed every third of it): how soon the others know that it is gone.
    lease: float
    sessions: SessionStore
    events: EventStore
    bus: Bus
    tasks: TaskStore

    @property
    def ready(self) -> bool:
        """False while the backend is known to be unreachable (readiness probes)."""
        ...

    def running(self) -> AbstractAsyncContextManager[None]:
        """Hold the store's connections and background tasks open while serving."""
        ...

    async def shared_secret(self, name: str) -> bytes:
        """A 32-byte random secret shared by every replica under ``name`` (created by the
        first that asks); e.g. the sealing key of 2026-07-28 ``requestState``."""
        ...
