"""The in-memory store: one process, no dependency (the default).

What every part here promises, beyond the contracts of ``_contracts.py``:

- **Atomic**: no method reaches a trio checkpoint (they are ``async`` for the protocol's
  sake), so each runs whole in the trio task that calls it: no other task sees a half-done
  call. Call them from the trio thread only; they take no lock.
- **Cancellation**: having no checkpoint, a call in a cancelled scope still completes; the
  caller's next checkpoint raises ``Cancelled``.
- **Never unreachable**: nothing here raises :class:`StoreUnavailable`; ``timeout`` is
  infinite and ``ready`` always True.
- **Expiry** is on the trio clock (``trio.current_time()``), checked when an entry is read:
  an expired session record or task snapshot is dropped by the read that finds it so (or by
  ``delete``); until then it holds its memory. Nothing outlives the process.
"""

from __future__ import annotations

import contextlib
import math
import secrets
from collections import deque
from collections.abc import AsyncIterator, Callable

import trio

from ._contracts import (
    Bus,
    EventStore,
    SessionRecord,
    SessionStore,
    StreamState,
    TaskSnapshot,
    TaskStore,
    split_event_id,
)

__all__ = [
    "MemoryBus",
    "MemoryEventStore",
    "MemorySessionStore",
    "MemoryStore",
    "MemoryTaskStore",
]


#: One stored event: (stream id, its number in the stream, data; None for a priming event).
_Event = tuple[str, int, bytes | None]


class MemoryEventStore:
    """In-memory event store, at most ``max_events`` per session (oldest dropped).

    Event ids are ``<stream>_<n>``: ``n`` counts up within the stream, from 1, and a stream's
    counter lives as long as its session (``forget``), so an id is never given twice. Events
    do not expire by age here: a session's go when it ends (``forget``), the oldest sooner
    when the session holds ``max_events``. A POST stream's lease (``open_stream``,
    ``renew``) ends on the trio clock; ``follow`` reports it held until then.
    """

    def __init__(self, max_events: int = 1000) -> None:
        self.max_events = max_events
        #: A list while short (most sessions hold their GET stream's priming event alone:
        #: an empty deque is several times a short list), a bounded deque once full.
        self._events: dict[str, list[_Event] | deque[_Event]] = {}
        #: session -> stream -> its last event number (per session, so that ``forget`` is
        #: one pop, not a scan of every session's streams)
        self._counters: dict[str, dict[str, int]] = {}
        #: session -> POST stream -> (the requests it answers, its lease's end on the trio
        #: clock); only a shared store's (``open_stream``: another process holds this one)
        self._streams: dict[str, dict[str, tuple[bytes, float]]] = {}

    async def append(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        return self.append_now(session_id, stream_id, data)

    def append_now(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        """:meth:`append` in this step (it never waits): a session routes one change to its
        GET stream without a coroutine per session (a fan-out to many sessions)."""
        counters = self._counters.get(session_id)
        if counters is None:
            counters = self._counters[session_id] = {}
        counter = counters[stream_id] = counters.get(stream_id, 0) + 1
        events = self._events.get(session_id)
        if events is None:
            self._events[session_id] = [(stream_id, counter, data)]
        else:
            events.append((stream_id, counter, data))  # (a full deque drops its oldest)
            if len(events) > self.max_events:  # a list past the bound: a deque from now on
                assert isinstance(events, list)  # (a deque never grows past its maxlen)
                self._events[session_id] = deque(events[1:], maxlen=self.max_events)
        return f"{stream_id}_{counter}"

    async def replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        split = split_event_id(last_event_id)
        if split is None or split[0] not in self._counters.get(session_id, ()):
            return None
        stream_id, after = split
        found = [
            (f"{s}_{n}", data)
            for s, n, data in self._events.get(session_id, ())
            if s == stream_id and n > after and data is not None
        ]
        return stream_id, found

    async def last_number(self, session_id: str, stream_id: str) -> int:
        return self._counters.get(session_id, {}).get(stream_id, 0)

    async def open_stream(
        self, session_id: str, stream_id: str, requests: bytes, lease: float
    ) -> str:
        streams = self._streams.setdefault(session_id, {})
        streams[stream_id] = (requests, trio.current_time() + lease)
        return self.append_now(session_id, stream_id, None)

    async def renew(self, streams: list[tuple[str, str]], lease: float) -> None:
        until = trio.current_time() + lease
        for session_id, stream_id in streams:
            held = self._streams.get(session_id, {})
            if stream_id in held:
                held[stream_id] = (held[stream_id][0], until)

    async def follow(self, session_id: str, stream_id: str, after: int) -> StreamState | None:
        if stream_id not in self._counters.get(session_id, ()):
            return None
        found = await self.replay(session_id, f"{stream_id}_{after}")
        opened = self._streams.get(session_id, {}).get(stream_id)
        return StreamState(
            requests=None if opened is None else opened[0],
            held=opened is not None and opened[1] > trio.current_time(),
            events=[] if found is None else found[1],
        )

    async def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)
        self._counters.pop(session_id, None)
        self._streams.pop(session_id, None)


class MemorySessionStore:
    """Session records in a dict, expiring on the trio clock: ``load`` of a record past its
    ``ttl`` drops it and answers None. ``touch`` moves a record's end; ``save`` replaces
    the record and its end."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[SessionRecord, float]] = {}

    async def save(self, session_id: str, record: SessionRecord, ttl: float) -> None:
        self._records[session_id] = (record, trio.current_time() + ttl)

    async def load(self, session_id: str) -> SessionRecord | None:
        found = self._records.get(session_id)
        if found is None:
            return None
        if found[1] <= trio.current_time():
            del self._records[session_id]
            return None
        return found[0]

    async def touch(self, session_id: str, ttl: float) -> None:
        found = self._records.get(session_id)
        if found is not None:
            self._records[session_id] = (found[0], trio.current_time() + ttl)

    async def delete(self, session_id: str) -> None:
        self._records.pop(session_id, None)


class MemoryTaskStore:
    """Task snapshots in a dict (one process: nobody else reads them), each expiring
    ``ttl`` seconds after its last ``put`` on the trio clock: ``get`` drops an expired one,
    ``owned`` leaves expired ones out. ``put_many`` is the ``put``s one after the other,
    with no checkpoint between them."""

    def __init__(self) -> None:
        self._snapshots: dict[str, tuple[TaskSnapshot, float]] = {}

    async def put(self, task_id: str, snapshot: TaskSnapshot, ttl: float) -> None:
        self._snapshots[task_id] = (snapshot, trio.current_time() + ttl)

    async def put_many(self, items: list[tuple[str, TaskSnapshot, float]]) -> None:
        for task_id, snapshot, ttl in items:
            await self.put(task_id, snapshot, ttl)

    async def get(self, task_id: str) -> TaskSnapshot | None:
        found = self._snapshots.get(task_id)
        if found is None or found[1] <= trio.current_time():
            self._snapshots.pop(task_id, None)
            return None
        return found[0]

    async def owned(self, owner: str) -> list[tuple[str, TaskSnapshot]]:
        now = trio.current_time()
        return [
            (task_id, snap)
            for task_id, (snap, until) in self._snapshots.items()
            if snap.owner == owner and until > now
        ]


class MemoryBus:
    """In-process channels: ``publish`` calls each current subscriber of the channel at once,
    in the publisher's task and in the order they subscribed, before it returns (exactly
    once, where the contract allows at most once). A subscriber that raises stops the
    publish there: the publisher gets the exception. ``subscribe`` takes effect before it
    returns; the unsubscribe function it returns may be called any number of times."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[Callable[[bytes], None]]] = {}

    async def publish(self, channel: str, data: bytes) -> None:
        for deliver in list(self._subscribers.get(channel, ())):
            deliver(data)

    async def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Callable[[], None]:
        self._subscribers.setdefault(channel, []).append(deliver)

        def unsubscribe() -> None:
            listeners = self._subscribers.get(channel, [])
            with contextlib.suppress(ValueError):
                listeners.remove(deliver)
            if not listeners:
                self._subscribers.pop(channel, None)

        return unsubscribe


class MemoryStore:
    """Everything in this process's memory: nothing is shared (``shared`` is False), so a
    second process sees none of it. The default. ``running`` holds nothing open;
    ``shared_secret`` makes each named secret once, for the life of the process. (``mcp-runtime
    dev`` shares one between the versions of a server: ``runtime.stores._unix``.)"""

    shared: bool = False
    timeout: float = math.inf

    def __init__(self, max_events: int = 1000, *, lease: float = 6.0) -> None:
        self.replica = secrets.token_urlsafe(4)
        self.lease = lease
        self.sessions: SessionStore = MemorySessionStore()
        self.events: EventStore = MemoryEventStore(max_events)
        self.bus: Bus = MemoryBus()
        self.tasks: TaskStore = MemoryTaskStore()
        self._secrets: dict[str, bytes] = {}

    @property
    def ready(self) -> bool:
        return True

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield

    async def shared_secret(self, name: str) -> bytes:
        return self._secrets.setdefault(name, secrets.token_bytes(32))
