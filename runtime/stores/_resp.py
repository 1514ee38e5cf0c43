"""A small RESP2 client for Redis on trio sockets: commands on a bounded pool of connections,
and one pub/sub connection. Why our own and not coredis: see docs/deploy.md ("Why not
coredis"): the runtime is trio-only (no anyio in the runtime), and this is all it needs.

Every call is bounded by ``timeout`` (connect, write and read together) and fails with
:class:`StoreUnavailable`; after a failure, calls fail fast for a backoff window (doubling
from ``backoff_min`` to ``backoff_max``), then the next call connects again.

A pipeline is one round trip, not a transaction: Redis runs its commands in order, but other
clients' commands may run between them, and a call that fails or is cancelled may have run
all, some or none of them. What must happen at once is a Lua script (``EVAL``), which Redis
runs whole (``runtime.stores._redis``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import trio

from ._contracts import StoreUnavailable

__all__ = ["RedisClient", "RedisError", "RespConnection", "encode_command"]

log = logging.getLogger("mcp_runtime.stores")

Arg = bytes | str | int | float

#: Error replies that say the server cannot serve now rather than that the command is wrong.
_UNAVAILABLE = ("LOADING", "BUSY", "MASTERDOWN")


class RedisError(Exception):
    """An error reply (``-ERR ...``): the command was wrong, the server is fine."""


class _Incomplete(Exception):
    """Internal: the buffer holds only part of a reply; read more and parse again from the
    reply's start (nothing is consumed until a whole reply is there)."""


def encode_command(args: Sequence[Arg]) -> bytes:
    """One command as RESP2 sends it: an array of bulk strings, so any bytes go through
    (no quoting, no escaping: a session id or an SSE event's data is never read as
    syntax). ``str`` is UTF-8; a number is its ``str``."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        else:
            data = str(arg).encode()
        parts.append(b"$%d\r\n" % len(data))
        parts.append(data)
        parts.append(b"\r\n")
    return b"".join(parts)


#: The largest bulk string a reply may announce: Redis's own ceiling (``proto-max-bulk-len``,
#: 512 MB by default); a bigger length is not Redis talking.
_MAX_BULK: Final = 512 * 1024 * 1024
#: How deeply arrays may nest in a reply: the store's commands get flat arrays, or arrays of
#: arrays (a pub/sub message, an EVAL's table); deeper would only recurse.
_MAX_DEPTH: Final = 8


def _integer(line: bytes, what: str) -> int:
    """A RESP integer (an optional minus, then digits; at most 20 characters, past any 64-bit
    value), or :class:`StoreUnavailable`: what sent it is not Redis."""
    digits = line[1:] if line[:1] == b"-" else line
    if not (0 < len(digits) <= 19 and digits.isdigit()):
        raise StoreUnavailable(f"redis protocol error: bad {what} {line[:40]!r}")
    return int(line)


def _parse(buf: bytearray, pos: int, depth: int = 0) -> tuple[Any, int]:
    """The reply that starts at ``pos`` and where it ends: simple strings and bulk strings
    as bytes, integers as int, nil as None, arrays as lists, and an error reply as a
    :class:`RedisError` value (returned, not raised: a pipeline keeps each command's
    outcome in its place). :class:`_Incomplete` until the whole reply is in ``buf``; an
    unknown type byte, a malformed number, a bulk string past :data:`_MAX_BULK` or arrays
    nested past :data:`_MAX_DEPTH` are :class:`StoreUnavailable` (what answers is not
    Redis)."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete
    kind = buf[pos : pos + 1]
    line = bytes(buf[pos + 1 : end])
    pos = end + 2
    if kind == b"+":
        return line, pos
    if kind == b"-":
        return RedisError(line.decode(errors="replace")), pos
    if kind == b":":
        return _integer(line, "integer"), pos
    if kind == b"$":
        size = _integer(line, "bulk length")
        if size > _MAX_BULK:
            raise StoreUnavailable(f"redis protocol error: a bulk string of {size} bytes")
        if size < 0:
            return None, pos
        if len(buf) < pos + size + 2:
            raise _Incomplete
        return bytes(buf[pos : pos + size]), pos + size + 2
    if kind == b"*":
        count = _integer(line, "array length")
        if count < 0:
            return None, pos
        if depth >= _MAX_DEPTH:
            raise StoreUnavailable("redis protocol error: arrays nested too deeply")
        items = []
        for _ in range(count):
            item, pos = _parse(buf, pos, depth + 1)
            items.append(item)
        return items, pos
    raise StoreUnavailable(f"redis protocol error: unexpected {kind!r}")


class RespConnection:
    """One connection: write commands, read replies, in order (no timeouts here: callers
    bound them). One task at a time. Cancelled between a write and its last reply, the
    connection is out of step (the next read would get an earlier command's reply): close
    it, never reuse it. ``aclose`` completes even in a cancelled scope."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._buf = bytearray()

    @classmethod
    async def open(cls, host: str, port: int, db: int, password: str | None) -> RespConnection:
        """Connect, then ``AUTH`` and ``SELECT`` as configured, in one round trip; a refusal
        of either is :class:`StoreUnavailable` (the store cannot be used), and the
        connection is closed on any failure."""
        conn = cls(await trio.open_tcp_stream(host, port))
        try:
            setup: list[list[Arg]] = []
            if password is not None:
                setup.append(["AUTH", password])
            if db:
                setup.append(["SELECT", db])
            if setup:
                for reply in await conn.pipeline(setup):
                    if isinstance(reply, RedisError):
                        raise StoreUnavailable(f"redis refused the connection setup: {reply}")
        except BaseException:
            await conn.aclose()
            raise
        return conn

    async def send(self, commands: Sequence[Sequence[Arg]]) -> None:
        """Write ``commands`` in one ``send_all``; their replies are read by :meth:`read`."""
        await self.stream.send_all(b"".join(encode_command(c) for c in commands))

    async def read(self) -> Any:
        """The next reply (see :func:`_parse`); ``trio.BrokenResourceError`` when Redis
        closed the connection."""
        while True:
            if self._buf:
                try:
                    value, used = _parse(self._buf, 0)
                except _Incomplete:
                    pass
                else:
                    del self._buf[:used]
                    return value
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise trio.BrokenResourceError("redis closed the connection")
            self._buf += chunk

    async def pipeline(self, commands: Sequence[Sequence[Arg]]) -> list[Any]:
        await self.send(commands)
        return [await self.read() for _ in commands]

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            await self.stream.aclose()


class RedisClient:
    """Commands on a pool of at most ``pool_size`` connections.

    At most ``pool_size`` calls hold a connection at once; more wait for one, inside their
    ``timeout``. A call that succeeds gives its connection back to the pool. One that fails
    (refused, reset, no answer in time, or a server that cannot serve now: ``-LOADING``,
    ``-BUSY``, ``-MASTERDOWN``) raises :class:`StoreUnavailable`, closes its connection and
    every idle one, and starts the backoff window: calls fail fast until it ends, and the
    first after it connects again (``up`` says which side of that the client is on). A
    cancelled call closes the connection it held (it may be mid-reply); whether Redis ran its
    commands is not known. Other error replies mean a wrong command, not an unreachable
    server: ``pipeline`` returns them in place, ``call`` raises :class:`RedisError`.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        *,
        timeout: float = 1.0,
        pool_size: int = 16,
        backoff_min: float = 0.05,
        backoff_max: float = 2.0,
    ) -> None:
        self.host, self.port, self.db, self.password = host, port, db, password
        self.timeout = timeout
        self.backoff_min = backoff_min
        self.backoff_max = backoff_max
        self._idle: list[RespConnection] = []
        self._limit = trio.CapacityLimiter(pool_size)
        self._backoff = 0.0
        self._down_until = -1.0
        #: False after a failure, True after the next success.
        self.up = True

    async def call(self, *args: Arg) -> Any:
        """One command; an error reply raises :class:`RedisError` (one that says Redis
        cannot serve now raises :class:`StoreUnavailable`, as every failure to reach it)."""
        reply = (await self.pipeline([args]))[0]
        if isinstance(reply, RedisError):
            raise reply
        return reply

    async def pipeline(self, commands: Sequence[Sequence[Arg]]) -> list[Any]:
        """Several commands in one round trip, their replies in order; error replies are
        returned in place, not raised. Bounded by ``timeout`` from the first byte of the
        connect to the last reply (waiting for a pooled connection included)."""
        now = trio.current_time()
        if now < self._down_until:
            raise StoreUnavailable(
                f"redis at {self.host}:{self.port} is unreachable "
                f"(retrying in {self._down_until - now:.2f}s)"
            )
        conn: RespConnection | None = None
        try:
            with trio.fail_after(self.timeout):
                async with self._limit:
                    conn = self._idle.pop() if self._idle else None
                    if conn is None:
                        conn = await RespConnection.open(
                            self.host, self.port, self.db, self.password
                        )
                    replies = await conn.pipeline(commands)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise self._failed(conn, f"{type(exc).__name__}: {exc}") from None
        except trio.TooSlowError:
            raise self._failed(conn, f"no answer within {self.timeout}s") from None
        except BaseException:
            if conn is not None:  # cancelled mid-reply: the connection is out of step
                await conn.aclose()
            raise
        for reply in replies:
            # A Redis still reading its data at start-up (``-LOADING``), or stuck in a
            # script (``-BUSY``), is unavailable for now, not refusing the command.
            if isinstance(reply, RedisError) and str(reply).startswith(_UNAVAILABLE):
                raise self._failed(conn, str(reply))
        self._idle.append(conn)
        if not self.up:
            log.info("redis is reachable again at %s:%s", self.host, self.port)
        self.up = True
        self._backoff = 0.0
        return replies

    def _failed(self, conn: RespConnection | None, why: str) -> StoreUnavailable:
        """A call failed: close its connection and the idle ones (in system tasks: no
        caller waits on it), widen the backoff window, log the outage once (its first
        failure), and return the error for the caller to raise."""
        if conn is not None:
            trio.lowlevel.spawn_system_task(conn.aclose)
        for idle in self._idle:
            trio.lowlevel.spawn_system_task(idle.aclose)
        self._idle.clear()
        self._backoff = min(self.backoff_max, max(self.backoff_min, self._backoff * 2))
        self._down_until = trio.current_time() + self._backoff
        if self.up:
            log.warning("redis at %s:%s unavailable: %s", self.host, self.port, why)
        self.up = False
        return StoreUnavailable(f"redis at {self.host}:{self.port} unavailable: {why}")

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.aclose()
