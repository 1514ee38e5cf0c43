"""A store held by another process on this machine, reached over a Unix socket.

``mcp-runtime dev`` (runtime/cli/_dev.py) keeps one :class:`MemoryStore` in its supervisor for
its whole life and serves it with :func:`serve_store`; each version of the server (a child
process) gets ``unix:///path/to/socket`` as its store (:class:`UnixStore`), so handshake-era
sessions, their SSE events, task snapshots and the bus outlive the version that made them
and the next version serves the same sessions on. A store that other processes see is
``shared`` (the HTTP transport then saves sessions there and adopts them: docs/deploy.md).

The wire: frames of a 4-byte big-endian length and a msgpack body. A request is
``[id, op, args]`` (``id`` > 0), its reply ``[id, ok, value]`` (``value`` the error message
when not ``ok``); a bus message pushed to a subscriber is ``[0, channel, data]``. Each op has
its argument and result types (``_OPS``), so both ends decode what they expect and a wrong
frame is an error reply, never a crash of the holder. Local only: the socket lives in a
directory only its user may enter (the supervisor makes it with ``tempfile.mkdtemp``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import secrets
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import msgspec
import trio

from ._contracts import SessionRecord, StoreUnavailable, StreamState, TaskSnapshot
from ._memory import MemoryStore

__all__ = ["MAX_FRAME", "UnixStore", "serve_store"]

log = logging.getLogger("mcp_runtime.stores")

#: The largest frame either end accepts (bytes): an SSE event's data with room to spare.
MAX_FRAME: Final = 64 * 1024 * 1024
_LENGTH: Final = struct.Struct(">I")

#: op -> (its arguments' type, its result's type)
_OPS: Final[dict[str, tuple[Any, Any]]] = {
    "sessions.save": (tuple[str, SessionRecord, float], None),
    "sessions.load": (tuple[str], SessionRecord | None),
    "sessions.touch": (tuple[str, float], None),
    "sessions.delete": (tuple[str], None),
    "events.append": (tuple[str, str, bytes | None], str),
    "events.replay": (tuple[str, str], tuple[str, list[tuple[str, bytes]]] | None),
    "events.last_number": (tuple[str, str], int),
    "events.open_stream": (tuple[str, str, bytes, float], str),
    "events.renew": (tuple[list[tuple[str, str]], float], None),
    "events.follow": (tuple[str, str, int], StreamState | None),
    "events.forget": (tuple[str], None),
    "tasks.put": (tuple[str, TaskSnapshot, float], None),
    "tasks.put_many": (tuple[list[tuple[str, TaskSnapshot, float]]], None),
    "tasks.get": (tuple[str], TaskSnapshot | None),
    "tasks.owned": (tuple[str], list[tuple[str, TaskSnapshot]]),
    "shared_secret": (tuple[str], bytes),
    "bus.publish": (tuple[str, bytes], None),
    "bus.subscribe": (tuple[str], None),
    "bus.unsubscribe": (tuple[str], None),
}

_encode: Final = msgspec.msgpack.encode
_frame_decoder: Final = msgspec.msgpack.Decoder(tuple[int, Any, Any])
_ARGS: Final = {op: msgspec.msgpack.Decoder(types[0]) for op, types in _OPS.items()}
_RESULTS: Final = {op: msgspec.msgpack.Decoder(types[1]) for op, types in _OPS.items()}


def _frame(message: Any) -> bytes:
    """``message`` as msgpack behind its 4-byte big-endian length."""
    body = _encode(message)
    return _LENGTH.pack(len(body)) + body


async def _frames(stream: trio.abc.ReceiveStream) -> AsyncIterator[bytes]:
    """The bodies of the frames on ``stream`` until it ends (ValueError: an oversize one)."""
    buffer = bytearray()
    while True:
        while len(buffer) >= 4:
            (length,) = _LENGTH.unpack_from(buffer)
            if length > MAX_FRAME:
                raise ValueError(f"frame of {length} bytes (limit {MAX_FRAME})")
            if len(buffer) < 4 + length:
                break
            body = bytes(buffer[4 : 4 + length])
            del buffer[: 4 + length]
            yield body
        data = await stream.receive_some(65536)
        if not data:
            return
        buffer += data


# -- the holder's side -----------------------------------------------------------------------


async def serve_store(
    store: MemoryStore,
    path: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``store`` on a Unix socket at ``path`` until cancelled.

    Each connection (one per process) gets its requests answered in the order they came, one
    at a time, each op run whole on ``store`` (whose calls never checkpoint: an op of one
    process never interleaves with another's). A frame it cannot read, an unknown op or
    arguments of the wrong type get an error reply and the connection goes on; a frame over
    ``MAX_FRAME`` ends that connection. A process's subscriptions end with its connection.
    """
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(path)
    sock.listen(16)
    listener = trio.SocketListener(sock)
    async with listener, trio.open_nursery() as nursery:
        task_status.started()
        while True:
            stream = await listener.accept()
            nursery.start_soon(_serve_one, store, stream)


async def _serve_one(store: MemoryStore, stream: trio.SocketStream) -> None:
    """One process's connection: its requests answered in order, its subscriptions
    pushed; ends (and unsubscribes) when the process goes."""
    send, receive = trio.open_memory_channel[bytes](math.inf)
    subscribed: dict[str, Callable[[], None]] = {}

    def deliver(channel: str) -> Callable[[bytes], None]:
        return lambda data: send.send_nowait(_frame([0, channel, data]))

    async def write() -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            async for frame in receive:
                await stream.send_all(frame)

    try:
        async with stream, trio.open_nursery() as nursery:
            nursery.start_soon(write)
            await _answer(store, _frames(stream), send, subscribed, deliver)
            nursery.cancel_scope.cancel()
    finally:
        for unsubscribe in subscribed.values():
            unsubscribe()


async def _answer(
    store: MemoryStore,
    frames: AsyncIterator[bytes],
    send: trio.MemorySendChannel[bytes],
    subscribed: dict[str, Callable[[], None]],
    deliver: Callable[[str], Callable[[bytes], None]],
) -> None:
    """Answer one connection's requests in order until it ends. Each reply is queued at
    once (``send``, unbounded: the holder never waits on a slow reader, as an op never
    waits on ``store``). What a frame gets wrong (undecodable, an unknown op, arguments of
    the wrong type) is an error reply naming it; only a lost connection or an oversize
    frame ends the loop."""
    targets: dict[str, Any] = {
        "sessions": store.sessions,
        "events": store.events,
        "tasks": store.tasks,
    }
    try:
        async for body in frames:
            request_id, op, value = -1, "", None  # -1: a frame too broken to name its id
            reply: list[Any]
            try:
                request_id, op, raw_args = _frame_decoder.decode(body)
                decoder = _ARGS.get(op)
                if decoder is None:
                    raise ValueError(f"unknown op {op!r}")
                args = decoder.decode(_encode(raw_args))
                if op == "bus.subscribe":
                    if args[0] not in subscribed:
                        subscribed[args[0]] = await store.bus.subscribe(args[0], deliver(args[0]))
                elif op == "bus.unsubscribe":
                    unsubscribe = subscribed.pop(args[0], None)
                    if unsubscribe is not None:
                        unsubscribe()
                elif op == "bus.publish":
                    await store.bus.publish(*args)
                elif op == "shared_secret":
                    value = await store.shared_secret(*args)
                else:
                    kind, _, method = op.partition(".")
                    value = await getattr(targets[kind], method)(*args)
                reply = [request_id, True, value]
            except (ValueError, TypeError, msgspec.MsgspecError) as exc:
                reply = [request_id, False, f"{type(exc).__name__}: {exc}"]
            send.send_nowait(_frame(reply))
    except (trio.BrokenResourceError, trio.ClosedResourceError, ValueError) as exc:
        log.debug("store connection ended: %s", exc)


# -- a server's side -------------------------------------------------------------------------


class _Part:
    """``store.sessions``, ``.events``, ``.tasks``: each method one round trip."""

    def __init__(self, store: UnixStore, kind: str) -> None:
        self._store = store
        self._kind = kind

    def __getattr__(self, method: str) -> Callable[..., Any]:
        op = f"{self._kind}.{method}"
        if op not in _OPS:
            raise AttributeError(method)

        async def call(*args: Any) -> Any:
            return await self._store._call(op, args)

        return call


class _Bus:
    """``UnixStore.bus``: this process's subscribers, one subscription per channel at the
    holder (made by the first local subscriber, ended after the last unsubscribes).

    Messages the holder pushes are delivered in the connection's reading task, to each
    subscriber of the channel in the order they subscribed; one that raises is logged and
    the others still get the message. A ``subscribe`` whose holder subscription fails or
    is cancelled leaves nothing behind. An unsubscribe is synchronous (the contract's
    function), so the holder hears of it soon after, in a task of the store's.
    """

    def __init__(self, store: UnixStore) -> None:
        self._store = store
        self._handlers: dict[str, list[Callable[[bytes], None]]] = {}

    async def publish(self, channel: str, data: bytes) -> None:
        await self._store._call("bus.publish", (channel, data))

    async def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Callable[[], None]:
        handlers = self._handlers.setdefault(channel, [])
        handlers.append(deliver)
        if len(handlers) == 1:
            try:
                await self._store._call("bus.subscribe", (channel,))
            except BaseException:
                handlers.remove(deliver)
                if not handlers:
                    self._handlers.pop(channel, None)
                raise

        def unsubscribe() -> None:
            listeners = self._handlers.get(channel, [])
            with contextlib.suppress(ValueError):
                listeners.remove(deliver)
            if not listeners and self._handlers.pop(channel, None) is not None:
                self._store._send_soon("bus.unsubscribe", (channel,))

        return unsubscribe

    def _deliver(self, channel: str, data: bytes) -> None:
        for deliver in list(self._handlers.get(channel, ())):
            try:
                deliver(data)
            except Exception:
                log.exception("bus subscriber failed on %s", channel)


class UnixStore:
    """The store a holder serves at ``path`` (``unix:///path``): shared with every other
    process that uses it. Open while serving (``running``); a call that gets no answer
    within ``timeout`` seconds, or while the holder is gone, raises StoreUnavailable.

    Every call is one round trip, and as atomic as the holder's store makes it (each op runs
    whole there). One connection for the life of ``running``, never reopened: once it is
    lost (the holder ended), every call fails at once with :class:`StoreUnavailable` and
    ``ready`` is False; ``mcp-runtime dev`` keeps the holder alive for longer than any
    server version that uses it. A call cancelled while it waits for its answer abandons the
    answer; the op may still run in the holder. One cancelled while its frame is being
    written (a frame larger than the socket's buffer) can leave part of it on the
    connection, after which the holder no longer reads frames in step and the calls after it
    fail with :class:`StoreUnavailable`. The bus delivers in the task that reads the
    connection; a ``deliver`` that raises is logged.
    """

    shared: bool = True

    def __init__(self, path: str, *, timeout: float = 5.0, lease: float = 6.0) -> None:
        self.path = path
        self.timeout = timeout
        self.lease = lease
        self.replica = secrets.token_urlsafe(4)
        self.sessions: Any = _Part(self, "sessions")
        self.events: Any = _Part(self, "events")
        self.tasks: Any = _Part(self, "tasks")
        self.bus: Any = _Bus(self)
        self._stream: trio.SocketStream | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[trio.Event, list[Any]]] = {}
        self._send_lock = trio.Lock()
        self._nursery: trio.Nursery | None = None

    @classmethod
    def from_url(cls, url: str, **options: Any) -> UnixStore:
        path = url.removeprefix("unix://")
        if not path.startswith("/"):
            raise ValueError(f"unix store {url!r}: expected unix:///absolute/path")
        return cls(path, **options)

    @property
    def ready(self) -> bool:
        return self._stream is not None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Connect to the holder and read its answers and bus messages while open;
        StoreUnavailable at once when nothing listens at ``path``."""
        try:
            stream = await trio.open_unix_socket(self.path)
        except OSError as exc:
            raise StoreUnavailable(f"store at {self.path}: {exc}") from exc
        async with stream, trio.open_nursery() as nursery:
            self._stream = stream
            self._nursery = nursery
            nursery.start_soon(self._read, stream)
            try:
                yield
            finally:
                self._stream = None
                self._nursery = None
                nursery.cancel_scope.cancel()

    async def shared_secret(self, name: str) -> bytes:
        secret: bytes = await self._call("shared_secret", (name,))
        return secret

    async def _read(self, stream: trio.SocketStream) -> None:
        """Hand each answer to the call waiting for its id (an answer nobody waits for any
        more is dropped) and each bus push to :class:`_Bus`; once the connection is lost,
        every call still waiting is woken without an answer (StoreUnavailable)."""
        try:
            async for body in _frames(stream):
                request_id, first, value = _frame_decoder.decode(body)
                if request_id == 0:
                    self.bus._deliver(first, value)
                    continue
                waiting = self._waiting.pop(request_id, None)
                if waiting is not None:
                    waiting[1][:] = [first, value]
                    waiting[0].set()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ValueError) as exc:
            log.warning("store at %s: connection lost: %s", self.path, exc)
        finally:
            self._stream = None
            for event, _ in self._waiting.values():
                event.set()  # no answer: StoreUnavailable in each caller
            self._waiting.clear()

    async def _call(self, op: str, args: tuple[Any, ...]) -> Any:
        """``op`` run by the holder: its result, decoded to the op's result type.
        StoreUnavailable when not connected, when the answer does not come within
        ``timeout`` or the connection is lost first, and when the holder refused the op."""
        stream = self._stream
        if stream is None:
            raise StoreUnavailable(f"store at {self.path} is not connected")
        request_id = next(self._ids)
        event, answer = trio.Event(), list[Any]()
        self._waiting[request_id] = (event, answer)
        try:
            with trio.fail_after(self.timeout):
                async with self._send_lock:
                    await stream.send_all(_frame([request_id, op, args]))
                await event.wait()
        except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise StoreUnavailable(f"store at {self.path}: {op}: {exc!r}") from exc
        finally:
            self._waiting.pop(request_id, None)
        if not answer:
            raise StoreUnavailable(f"store at {self.path}: connection lost during {op}")
        ok, value = answer
        if not ok:
            raise StoreUnavailable(f"store at {self.path}: {op}: {value}")
        return _RESULTS[op].decode(_encode(value))

    def _send_soon(self, op: str, args: tuple[Any, ...]) -> None:
        """A call nobody waits for (an unsubscribe, from a synchronous function)."""
        nursery = self._nursery
        if nursery is None:
            return

        async def send() -> None:
            with contextlib.suppress(StoreUnavailable):
                await self._call(op, args)

        nursery.start_soon(send)
