"""The Redis store: sessions, SSE events, the bus and shared secrets for many replicas.

Keys (all under ``prefix``, default ``mcp:``):

- ``s:<session>``: the session record (msgspec JSON), with the idle timeout as its TTL;
- ``ec:<session>`` (hash stream -> counter), ``ev:<session>`` (list of ``<id> <data>``,
  trimmed to ``max_events``) and ``er:<session>`` (hash POST stream -> the JSON array of the
  request ids it answers): the replay store, expiring with the session's record (its TTL is
  copied on every write and set with the record's; ``event_ttl`` before the record exists);
- ``el:<session>:<stream>``: a POST stream's lease, held by the replica that produces it
  (``PX``: the store's ``lease``, renewed every third of it);
- ``t:<task>``: a task's snapshot (TTL: the task's), ``to:<owner>``: the set of an owner's
  task ids (a handshake session's, for ``tasks/list``);
- ``secret:<name>``: shared secrets (``SET NX``: the first replica's wins);
- pub/sub channels ``<prefix><channel>``.

Round trips: ``append``, ``open_stream``, ``replay`` and ``follow`` are one each (a script,
a pipeline); ``load`` and ``last_number`` one; a session's ``save`` and ``touch`` one each
(a pipeline that sets its events' TTL with the record's).

Every call goes through :class:`~runtime.stores._resp.RedisClient`, whose contract holds for
all of them: bounded by ``timeout``, :class:`StoreUnavailable` when Redis cannot be reached
or cannot serve now (an error reply inside a pipeline here too), a fast failure during the
backoff that follows, and after a cancelled call no knowledge of whether Redis ran it.
Atomic are the scripts only (``append``, ``open_stream``) and single commands; a pipeline
(``save``, ``touch``, ``put_many``, ``replay``, ``follow``, ``renew``) may be cut anywhere.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import msgspec
import trio

from ._contracts import (
    Bus,
    EventStore,
    SessionRecord,
    SessionStore,
    StoreUnavailable,
    StreamState,
    TaskSnapshot,
    TaskStore,
    split_event_id,
)
from ._resp import RedisClient, RedisError, RespConnection

__all__ = ["RedisBus", "RedisEventStore", "RedisSessionStore", "RedisStore", "RedisTaskStore"]

log = logging.getLogger("mcp_runtime.stores")

_record_decoder = msgspec.json.Decoder(SessionRecord)
_task_decoder = msgspec.json.Decoder(TaskSnapshot)


# A session's events expire with its record: each write gives them the record's remaining
# TTL (PTTL: -2 without a record, as for initialize's stream before the record is saved;
# then ``event_ttl``, until the record's save sets theirs).
def _session_ttl(ttl_arg: int) -> str:
    """Lua: ``ttl``, in ms, from the record at KEYS[3], else ``ARGV[ttl_arg]`` seconds."""
    return f"""
local ttl = redis.call('PTTL', KEYS[3])
if ttl <= 0 then ttl = tonumber(ARGV[{ttl_arg}]) * 1000 end
"""


# KEYS: counters, events, session record; ARGV: stream, has-data, data, max events, ttl
# seconds.
_APPEND = (
    _session_ttl(5)
    + """
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
local id = ARGV[1] .. '_' .. n
if ARGV[2] == '1' then
  redis.call('RPUSH', KEYS[2], id .. ' ' .. ARGV[3])
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
redis.call('PEXPIRE', KEYS[1], ttl)
return id
"""
)

# KEYS: counters, requests, session record, lease; ARGV: stream, requests, lease ms, ttl
# seconds. The priming event, what the stream answers and its lease in one step.
_OPEN = (
    _session_ttl(4)
    + """
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
return ARGV[1] .. '_' .. n
"""
)


#: What a ``redis://`` URL's query may set (``RedisStore.from_url``), in seconds.
_URL_OPTIONS = ("timeout", "lease")


def _seconds(ttl: float) -> int:
    """``ttl`` as whole seconds for ``EX``/``EXPIRE``, rounded up and at least 1: a key
    never expires sooner than asked (0 would delete it, a negative TTL is an error)."""
    return max(1, int(ttl + 0.999))


class RedisEventStore:
    """The replay store in Redis, at most ``max_events`` per session (``LTRIM``: oldest
    dropped), expiring with the session's record (``ttl`` seconds after the last event
    while there is no record).

    ``append`` and ``open_stream`` are Lua scripts: the counter's increment, the event, the
    trim and the TTLs happen at once, so an id is never given twice, by any replica, and a
    POST stream is never seen without the requests it answers and its lease. ``replay`` and
    ``follow`` read in one pipeline: an event appended meanwhile may or may not be in the
    answer, never half of one. A lease (``open_stream``, ``renew``) expires by itself
    (``PX``), so a replica that stops renewing is noticed without any replica cleaning up.
    """

    def __init__(self, client: RedisClient, prefix: str, max_events: int, ttl: float) -> None:
        self.client = client
        self.prefix = prefix
        self.max_events = max_events
        self.ttl = ttl

    async def append(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        prefix = self.prefix
        reply = await self.client.call(
            "EVAL",
            _APPEND,
            3,
            prefix + "ec:" + session_id,
            prefix + "ev:" + session_id,
            prefix + "s:" + session_id,
            stream_id,
            "0" if data is None else "1",
            data or b"",
            self.max_events,
            _seconds(self.ttl),
        )
        return bytes(reply).decode()

    async def open_stream(
        self, session_id: str, stream_id: str, requests: bytes, lease: float
    ) -> str:
        prefix = self.prefix
        reply = await self.client.call(
            "EVAL",
            _OPEN,
            4,
            prefix + "ec:" + session_id,
            prefix + "er:" + session_id,
            prefix + "s:" + session_id,
            self._lease_key(session_id, stream_id),
            stream_id,
            requests,
            _milliseconds(lease),
            _seconds(self.ttl),
        )
        return bytes(reply).decode()

    async def renew(self, streams: list[tuple[str, str]], lease: float) -> None:
        if not streams:
            return
        ms = _milliseconds(lease)
        commands: list[list[Any]] = [
            ["SET", self._lease_key(session_id, stream_id), "1", "PX", ms]
            for session_id, stream_id in streams
        ]
        for reply in await self.client.pipeline(commands):
            if isinstance(reply, RedisError):
                raise StoreUnavailable(f"redis refused a lease renewal: {reply}")

    async def follow(self, session_id: str, stream_id: str, after: int) -> StreamState | None:
        prefix = self.prefix
        exists, entries, requests, held = await self.client.pipeline(
            [
                ["HEXISTS", prefix + "ec:" + session_id, stream_id],
                ["LRANGE", prefix + "ev:" + session_id, 0, -1],
                ["HGET", prefix + "er:" + session_id, stream_id],
                ["EXISTS", self._lease_key(session_id, stream_id)],
            ]
        )
        for reply in (exists, entries, requests, held):
            if isinstance(reply, RedisError):
                raise StoreUnavailable(f"redis error on follow: {reply}")
        if not exists:
            return None
        return StreamState(
            requests=requests, held=bool(held), events=_after(entries, stream_id, after)
        )

    def _lease_key(self, session_id: str, stream_id: str) -> str:
        return self.prefix + "el:" + session_id + ":" + stream_id

    async def replay(
        self, session_id: str, last_event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        split = split_event_id(last_event_id)
        if split is None:
            return None
        stream_id, after = split
        exists, entries = await self.client.pipeline(
            [
                ["HEXISTS", self.prefix + "ec:" + session_id, stream_id],
                ["LRANGE", self.prefix + "ev:" + session_id, 0, -1],
            ]
        )
        if isinstance(exists, RedisError) or isinstance(entries, RedisError):
            raise StoreUnavailable(f"redis error on replay: {exists!r} {entries!r}")
        if not exists:
            return None
        return stream_id, _after(entries, stream_id, after)

    async def last_number(self, session_id: str, stream_id: str) -> int:
        number = await self.client.call("HGET", self.prefix + "ec:" + session_id, stream_id)
        return 0 if number is None else int(bytes(number))

    async def forget(self, session_id: str) -> None:
        await self.client.call("DEL", *_event_keys(self.prefix, session_id))


def _after(entries: list[Any], stream_id: str, after: int) -> list[tuple[str, bytes]]:
    """The events of ``stream_id`` numbered above ``after`` in an ``LRANGE`` of ``ev:``."""
    found: list[tuple[str, bytes]] = []
    for entry in entries:
        event_id, _, data = bytes(entry).partition(b" ")
        stream, _, n = event_id.decode().rpartition("_")
        if stream == stream_id and int(n) > after:
            found.append((event_id.decode(), data))
    return found


def _event_keys(prefix: str, session_id: str) -> tuple[str, str, str]:
    """What ``RedisEventStore`` keeps for a session (its streams' leases expire alone)."""
    return (prefix + "ec:" + session_id, prefix + "ev:" + session_id, prefix + "er:" + session_id)


def _milliseconds(seconds: float) -> int:
    """``seconds`` for ``PX``, at least 1 ms (``PX 0`` is an error reply)."""
    return max(1, int(seconds * 1000))


class RedisSessionStore:
    """Session records; each write of a record's TTL sets its events' too (they expire with
    the session: a client may resume an event only while its session lives).

    The record and its events' TTLs are one pipeline, not one step: a call that fails may
    have moved the record's end and not its events' (these then end sooner or later than
    the session, never leaving anything forever). ``load`` treats a record it cannot decode
    (not written by this runtime) as absent, and logs it; ``delete`` removes the record only
    (``EventStore.forget`` the events)."""

    def __init__(self, client: RedisClient, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    async def _with_events(self, command: list[Any], session_id: str, seconds: int) -> None:
        commands: list[list[Any]] = [command]
        commands += [["EXPIRE", key, seconds] for key in _event_keys(self.prefix, session_id)]
        for reply in await self.client.pipeline(commands):
            if isinstance(reply, RedisError):
                raise StoreUnavailable(f"redis refused a session write: {reply}")

    async def save(self, session_id: str, record: SessionRecord, ttl: float) -> None:
        data = msgspec.json.encode(record)
        seconds = _seconds(ttl)
        await self._with_events(
            ["SET", self.prefix + "s:" + session_id, data, "EX", seconds], session_id, seconds
        )

    async def load(self, session_id: str) -> SessionRecord | None:
        data = await self.client.call("GET", self.prefix + "s:" + session_id)
        if data is None:
            return None
        try:
            return _record_decoder.decode(data)
        except msgspec.DecodeError:
            log.warning("unreadable session record session=%s", session_id[:8])
            return None

    async def touch(self, session_id: str, ttl: float) -> None:
        seconds = _seconds(ttl)
        await self._with_events(
            ["EXPIRE", self.prefix + "s:" + session_id, seconds], session_id, seconds
        )

    async def delete(self, session_id: str) -> None:
        await self.client.call("DEL", self.prefix + "s:" + session_id)


class RedisTaskStore:
    """Task snapshots under ``t:<task>``, each expiring ``ttl`` seconds after its last
    ``put``, and per owner an index of task ids (``to:<owner>``) that lives as long as the
    owner's longest-lived task. ``put_many`` is one pipeline (renewals of many leases), not
    one step. ``owned`` reads the index, then the snapshots: ids whose snapshot expired, or
    that another owner's ``put`` took over, are left out and leave the index lazily (best
    effort: a failure there is ignored). A snapshot it cannot decode reads as absent."""

    def __init__(self, client: RedisClient, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    async def put(self, task_id: str, snapshot: TaskSnapshot, ttl: float) -> None:
        await self.put_many([(task_id, snapshot, ttl)])

    async def put_many(self, items: list[tuple[str, TaskSnapshot, float]]) -> None:
        if not items:
            return
        commands: list[list[Any]] = []
        for task_id, snap, ttl in items:
            seconds = _seconds(ttl)
            commands.append(
                ["SET", self.prefix + "t:" + task_id, msgspec.json.encode(snap), "EX", seconds]
            )
            if snap.owner is not None:
                # The owner's index lives as long as its longest-lived task (NX: a new
                # index gets a TTL at all; GT: only ever lengthened).
                index = self.prefix + "to:" + snap.owner
                commands.append(["SADD", index, task_id])
                commands.append(["EXPIRE", index, seconds, "NX"])
                commands.append(["EXPIRE", index, seconds, "GT"])
        for reply in await self.client.pipeline(commands):
            if isinstance(reply, RedisError):
                raise StoreUnavailable(f"redis refused a task write: {reply}")

    async def get(self, task_id: str) -> TaskSnapshot | None:
        data = await self.client.call("GET", self.prefix + "t:" + task_id)
        return None if data is None else _decode_task(data)

    async def owned(self, owner: str) -> list[tuple[str, TaskSnapshot]]:
        index = self.prefix + "to:" + owner
        ids = [bytes(member).decode() for member in await self.client.call("SMEMBERS", index)]
        if not ids:
            return []
        values = await self.client.call("MGET", *[self.prefix + "t:" + i for i in ids])
        found: list[tuple[str, TaskSnapshot]] = []
        gone: list[str] = []
        for task_id, data in zip(ids, values, strict=True):
            snap = None if data is None else _decode_task(data)
            if snap is None or snap.owner != owner:
                gone.append(task_id)
            else:
                found.append((task_id, snap))
        if gone:  # expired tasks leave the index lazily
            with contextlib.suppress(StoreUnavailable, RedisError):
                await self.client.call("SREM", index, *gone)
        return found


def _decode_task(data: bytes) -> TaskSnapshot | None:
    try:
        return _task_decoder.decode(data)
    except msgspec.DecodeError:
        return None


class RedisBus:
    """Redis pub/sub on one dedicated connection, reconnected with backoff by :meth:`serve`.

    ``publish`` is one ``PUBLISH`` on the client's pool: at most once, to the replicas
    subscribed at that moment. Deliveries run in :meth:`serve`'s task, one message at a
    time in channel order; a ``deliver`` that raises is logged and the others still get the
    message. After the connection is lost, :meth:`serve` connects again (backoff doubling
    from the client's ``backoff_min`` to ``backoff_max``) and subscribes to every channel
    that has a subscriber; messages published meanwhile are lost. ``subscribe`` waits for
    Redis's confirmation at most ``timeout`` seconds (:class:`StoreUnavailable` past it);
    failed or cancelled, it leaves nothing subscribed.
    """

    def __init__(self, client: RedisClient, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self._handlers: dict[str, list[Callable[[bytes], None]]] = {}
        self._confirmed: dict[str, trio.Event] = {}
        self._commands_send, self._commands_recv = trio.open_memory_channel[list[Any]](1 << 16)
        self.connected = False
        self._conn: RespConnection | None = None

    async def publish(self, channel: str, data: bytes) -> None:
        await self.client.call("PUBLISH", self.prefix + channel, data)

    async def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Callable[[], None]:
        name = self.prefix + channel
        handlers = self._handlers.setdefault(name, [])
        handlers.append(deliver)
        if len(handlers) == 1:
            self._confirmed[name] = trio.Event()
            self._commands_send.send_nowait(["SUBSCRIBE", name])
        confirmed = self._confirmed.get(name)
        if confirmed is not None and not confirmed.is_set():
            try:
                with trio.move_on_after(self.client.timeout):
                    await confirmed.wait()
            except BaseException:
                # Cancelled: the caller never gets the unsubscribe function, so nothing of
                # this subscription may stay.
                self._unsubscribe(name, deliver)
                raise
            if not confirmed.is_set():
                self._unsubscribe(name, deliver)
                raise StoreUnavailable(f"redis did not confirm SUBSCRIBE {channel} in time")

        def unsubscribe() -> None:
            self._unsubscribe(name, deliver)

        return unsubscribe

    def _unsubscribe(self, name: str, deliver: Callable[[bytes], None]) -> None:
        handlers = self._handlers.get(name, [])
        with contextlib.suppress(ValueError):
            handlers.remove(deliver)
        if not handlers and name in self._handlers:
            del self._handlers[name]
            self._confirmed.pop(name, None)
            with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
                self._commands_send.send_nowait(["UNSUBSCRIBE", name])

    async def serve(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep the pub/sub connection up until cancelled (reconnecting with backoff)."""
        client = self.client
        backoff = client.backoff_min
        started = False
        while True:
            conn: RespConnection | None = None
            try:
                with trio.fail_after(client.timeout):
                    conn = await RespConnection.open(
                        client.host, client.port, client.db, client.password
                    )
                    # From here the writer sends new (un)subscribes; the current set goes
                    # whole (a duplicate SUBSCRIBE is harmless).
                    self._conn = conn
                    if self._handlers:
                        await conn.send([["SUBSCRIBE", *self._handlers]])
                self.connected = True
                backoff = client.backoff_min
                if not started:
                    started = True
                    task_status.started()
                log.info("redis pub/sub connected")
                await self._read(conn)
            except (
                OSError,
                trio.BrokenResourceError,
                trio.ClosedResourceError,
                trio.TooSlowError,
                StoreUnavailable,
            ) as exc:
                if self.connected:
                    log.warning("redis pub/sub lost: %s", exc)
            finally:
                self.connected = False
                self._conn = None
                if conn is not None:
                    await conn.aclose()
            if not started:
                started = True
                task_status.started()  # serve degraded; readiness says so
            await trio.sleep(backoff)
            backoff = min(client.backoff_max, backoff * 2)

    async def write(self) -> None:
        """Send queued (un)subscribes on the current connection (run until cancelled); with
        none, they wait: a new connection subscribes to the whole current set."""
        async for command in self._commands_recv:
            name = command[1]
            if command[0] == "SUBSCRIBE" and name not in self._handlers:
                continue
            if command[0] == "UNSUBSCRIBE" and name in self._handlers:
                continue
            conn = self._conn
            if conn is None:
                continue
            try:
                with trio.fail_after(self.client.timeout):
                    await conn.send([command])
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
                continue  # the reader notices and reconnects, subscribing to the whole set

    async def _read(self, conn: RespConnection) -> None:
        """Deliver the pub/sub connection's pushes until it breaks: a ``message`` to the
        channel's subscribers, a ``subscribe`` confirmation to the ``subscribe`` waiting on
        it; anything else (an ``unsubscribe`` confirmation) is ignored."""
        while True:
            reply = await conn.read()
            if not isinstance(reply, list) or len(reply) < 3:
                continue
            kind = reply[0]
            name = bytes(reply[1]).decode()
            if kind == b"message":
                for deliver in list(self._handlers.get(name, ())):
                    try:
                        deliver(reply[2])
                    except Exception:
                        log.exception("bus subscriber failed channel=%s", name)
            elif kind == b"subscribe":
                confirmed = self._confirmed.get(name)
                if confirmed is not None:
                    confirmed.set()


class RedisStore:
    """Sessions, events, the bus and shared secrets in one Redis (``redis://host:port/db``).

    ``running`` keeps the bus's connection up, and PINGs Redis every ``health_interval``
    seconds so that ``ready`` (the last call succeeded and the bus is connected) notices an
    outage no request hit; leaving it closes the pool. ``shared_secret`` is a ``SET NX`` and
    a ``GET`` in one pipeline: the first replica's secret wins and every replica reads it.
    """

    shared: bool = True

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 6379,
        db: int = 0,
        *,
        password: str | None = None,
        prefix: str = "mcp:",
        timeout: float = 1.0,
        max_events: int = 1000,
        event_ttl: float = 30 * 60.0,
        health_interval: float = 1.0,
        lease: float = 6.0,
    ) -> None:
        if not lease > 0:
            raise ValueError(f"lease must be a positive number of seconds, not {lease!r}")
        self.replica = secrets.token_urlsafe(4).replace("_", "")
        self.timeout = timeout
        self.lease = lease
        self.prefix = prefix
        self.health_interval = health_interval
        self.client = RedisClient(host, port, db, password, timeout=timeout)
        self.sessions: SessionStore = RedisSessionStore(self.client, prefix)
        self.events: EventStore = RedisEventStore(self.client, prefix, max_events, event_ttl)
        self.tasks: TaskStore = RedisTaskStore(self.client, prefix)
        self.redis_bus = RedisBus(self.client, prefix)
        self.bus: Bus = self.redis_bus

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStore:
        """``redis://[:password@]host[:port][/db][?timeout=S&lease=S]``: the query sets
        ``timeout`` and ``lease`` (seconds; ``options`` given here win)."""
        parts = urlsplit(url)
        if parts.scheme != "redis":
            raise ValueError(f"not a redis:// URL: {url!r}")
        db_text = parts.path.lstrip("/") or "0"
        if not (db_text.isascii() and db_text.isdigit()):
            raise ValueError(f"bad database number in {url!r}")
        password = unquote(parts.password) if parts.password else None
        query: dict[str, Any] = {}
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name not in _URL_OPTIONS:
                raise ValueError(
                    f"unknown option {name!r} in the store URL (known: {', '.join(_URL_OPTIONS)})"
                )
            try:
                seconds = float(value)
            except ValueError:
                seconds = math.nan
            if not (seconds > 0 and math.isfinite(seconds)):
                raise ValueError(f"{name} in the store URL: expected seconds > 0, not {value!r}")
            query[name] = seconds
        return cls(
            parts.hostname or "127.0.0.1",
            parts.port or 6379,
            int(db_text),
            password=password,
            **{**query, **options},
        )

    def __repr__(self) -> str:
        c = self.client
        return f"<RedisStore {c.host}:{c.port}/{c.db} replica={self.replica}>"

    @property
    def ready(self) -> bool:
        return self.client.up and self.redis_bus.connected

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The bus's writer and reader and the health PING, until left; then the pool is
        closed. It waits for the bus's first connection attempt only (within ``timeout``):
        a Redis down at start-up makes the server serve degraded (``ready`` False), and the
        bus connects and subscribes once Redis is back."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.redis_bus.write)
            await nursery.start(self.redis_bus.serve)
            nursery.start_soon(self._watch)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()
                await self.client.aclose()

    async def _watch(self) -> None:
        """PING now and then, so readiness notices an outage nobody else hit (a failed PING
        sets the client's backoff as any failed call does)."""
        while True:
            with contextlib.suppress(StoreUnavailable, RedisError):
                await self.client.call("PING")
            await trio.sleep(self.health_interval)

    async def shared_secret(self, name: str) -> bytes:
        key = self.prefix + "secret:" + name
        mine = secrets.token_bytes(32)
        _set, value = await self.client.pipeline([["SET", key, mine, "NX"], ["GET", key]])
        if not isinstance(value, bytes) or len(value) != 32:
            raise StoreUnavailable(f"redis returned no usable secret for {name!r}")
        return value
