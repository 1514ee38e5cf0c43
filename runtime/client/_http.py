"""A small HTTP/1.1 client for the HTTP links: a pool of persistent connections.

The response parser is sans-IO (bytes in, events out), like the server's: a status line and
header block capped at ``max_head``, then a body delimited by Content-Length, by chunked
transfer coding (RFC 9112 7.1) or by the end of the connection.

Connections are persistent (RFC 9112 9.3: HTTP/1.1's default) and kept in a
:class:`HttpPool`, one per client: an exchange takes an idle connection to its origin or opens
one; a response read to its end goes back to the pool, unless the server said
``Connection: close``, spoke HTTP/1.0, or delimited the body by closing. A response given up
before its end (an SSE stream the client stopped reading, a cancelled request) closes its
connection: what remains of it cannot be told apart from the next response. One exchange at a
time per connection (no pipelining); concurrent requests use parallel connections.

A pool holds at most ``max_connections`` connections (busy and idle). Exchanges that may
stream (a request's POST, whose answer can be an SSE stream held open for as long as the
request runs; a GET stream) take at most ``max_connections - 1`` of them, waiting for one
to come free past that; the last one is kept for the short exchanges such a stream may be
waiting on (``reserved``: the client's answer to the server's question, a cancellation), so
that a full pool can always make progress.

A server may close an idle connection at any time (RFC 9112 9.5). Before reusing one the pool
checks, without blocking, that the server has not closed it (a readable idle socket is either
EOF or bytes nobody asked for; either way it is dropped) and opens a fresh one instead: the
request was not sent yet, so nothing is lost and no error surfaces. The race left (the server
closes in the instant between that check and the request) is RFC 9112 9.3.1's: the request
may or may not have been seen, so it is retried on a fresh connection only for a method HTTP
calls idempotent (GET, HEAD, DELETE); a POST fails with :class:`TransportLost` and the link's
rules (repeat only what is safe to repeat) decide.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import select
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import trio

from ..transports import lifted
from ._errors import BadMessage, TransportLost
from ._link import socket_of
from ._unreached import connect_failure

__all__ = [
    "DEFAULT_IDLE_CONNECTION_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_IDLE_CONNECTIONS",
    "HttpPool",
    "HttpResponse",
    "ResponseParser",
    "Url",
    "check_pool_limits",
]

#: Idle keep-alive connections a pool keeps per origin (``open_client(max_idle_connections=)``):
#: enough for a client's usual overlap of a POST, a GET stream's reconnection and a retry.
DEFAULT_MAX_IDLE_CONNECTIONS: Final = 4
#: Seconds an idle connection may wait for reuse (``open_client(idle_connection_timeout=)``):
#: under our server's 30 s ``HttpLimits.keep_alive_timeout``, so the client drops a connection
#: before the server does rather than racing its close with a new request.
DEFAULT_IDLE_CONNECTION_TIMEOUT: Final = 20.0
#: Connections a pool holds at once, busy and idle (``open_client(max_connections=)``):
#: httpx's default for its pool. A client's concurrent requests each hold one while their
#: answer streams, so this bounds them too; a server flooding the client with requests to
#: answer cannot make it open more (each answer is a POST of its own).
DEFAULT_MAX_CONNECTIONS: Final = 100
#: The fewest ``max_connections`` that can work: a handshake-era session's standing GET
#: stream, one request, and the connection kept for answers.
MIN_CONNECTIONS: Final = 3


def check_pool_limits(
    max_idle_connections: int,
    idle_connection_timeout: float,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> None:
    """Raise ValueError naming the argument when a pool limit is out of range."""
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise ValueError(
            f"max_connections must be an int >= {MIN_CONNECTIONS}, not {max_connections!r}"
        )
    if max_connections < MIN_CONNECTIONS:
        raise ValueError(f"max_connections must be >= {MIN_CONNECTIONS}, not {max_connections}")
    if isinstance(max_idle_connections, bool) or not isinstance(max_idle_connections, int):
        raise ValueError(f"max_idle_connections must be an int >= 0, not {max_idle_connections!r}")
    if max_idle_connections < 0:
        raise ValueError(f"max_idle_connections must be >= 0, not {max_idle_connections}")
    if not idle_connection_timeout > 0:  # also refuses NaN
        raise ValueError(
            f"idle_connection_timeout must be a number of seconds > 0, "
            f"not {idle_connection_timeout!r}"
        )


#: Largest response head accepted (status line plus headers), bytes.
MAX_HEAD: Final = 64 * 1024
#: Largest chunk-size line, bytes (hex digits and extensions).
_MAX_CHUNK_LINE: Final = 4096
#: A Content-Length longer than this is refused before it is read as a number: 18 digits is
#: past any body (an exabyte), and ``int()`` refuses a string of over 4,300 digits with a
#: ValueError of its own.
_MAX_LENGTH_DIGITS: Final = 18
#: A chunk size (RFC 9112 7.1): hex digits only, at most 16 of them.
_HEX: Final = re.compile(rb"[0-9A-Fa-f]{1,16}")
_RECEIVE: Final = 64 * 1024
#: Methods RFC 9110 9.2.2 calls idempotent that the client sends: a reused connection that
#: the server closed under them is retried once on a fresh connection.
_IDEMPOTENT: Final = frozenset({"GET", "HEAD", "DELETE"})


class ProtocolViolation(Exception):
    """The server's HTTP/1.1 response is malformed."""


@dataclasses.dataclass(frozen=True, slots=True)
class Url:
    """An ``http(s)://`` URL as the pool needs it: the origin it pools connections by
    (``scheme``, ``host``, ``port``, the scheme's default filled in) and the request target
    (path and query; the fragment dropped: it is never part of a request).
    ``parse`` raises ValueError for another scheme or no host, so a connector refuses a bad
    URL when it is made, before anything is connected."""

    scheme: str
    host: str
    port: int
    target: str  # path and query

    @classmethod
    def parse(cls, url: str) -> Url:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return cls(parts.scheme, parts.hostname, port, target)

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def join(self, reference: str) -> Url:
        """Resolve ``reference`` (e.g. a legacy SSE ``endpoint``) against this URL."""
        base = f"{self.scheme}://{self.authority}{self.target}"
        return Url.parse(urllib.parse.urljoin(base, reference))


class ResponseParser:
    """Sans-IO HTTP/1.1 response reader: ``feed(data)`` (``b""`` at EOF), then ``head()``
    until it returns the status and headers, then ``body()`` for body bytes (``b""`` when
    the body is complete; None when more input is needed).

    What it holds is bounded: a head over ``MAX_HEAD`` bytes, a chunk-size line over
    ``_MAX_CHUNK_LINE`` and a body cut before its announced end are a
    :class:`ProtocolViolation`, which the pool turns into :class:`TransportLost`. It never
    gathers a body: ``body()`` hands out what was fed as it comes, and the caller bounds
    the total (``HttpResponse.read_all``). Headers repeated are joined with ", " (RFC 9110
    5.3); names are lower-cased.
    """

    def __init__(self, *, head_request: bool = False) -> None:
        self._buf = bytearray()
        self._eof = False
        self._head_request = head_request
        self.status = 0
        self.headers: dict[str, str] = {}
        self._mode = "head"  # head, length, chunked, close, done
        self._remaining = 0
        self._chunk_state = "size"  # size, data, crlf, trailer
        self._http10 = False

    @property
    def complete(self) -> bool:
        """The whole response has been read."""
        return self._mode == "done"

    @property
    def reusable(self) -> bool:
        """The response was read to its end and its connection may carry the next exchange
        (RFC 9112 9.3: HTTP/1.1 without ``Connection: close``, a self-delimited body, and no
        bytes past its end)."""
        if self._mode != "done" or self._buf or self._eof or self._http10:
            return False
        tokens = {token.strip().lower() for token in self.headers.get("connection", "").split(",")}
        return "close" not in tokens

    @property
    def started(self) -> bool:
        """Some of the response has arrived (a partial head, or anything after it)."""
        return bool(self._buf) or self._mode != "head"

    def feed(self, data: bytes | bytearray) -> None:
        if not data:
            self._eof = True
        self._buf += data

    def head(self) -> bool:
        """True once the final response's head is read (interim 1xx ones are skipped)."""
        while self._mode == "head":
            if not self._read_head():
                return False
            if not 100 <= self.status < 200:
                self._start_body()
            else:  # an interim response: read the real one (a loop: a server may send many)
                self.headers = {}
        return True

    def _read_head(self) -> bool:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > MAX_HEAD:
                raise ProtocolViolation(f"response head exceeds {MAX_HEAD} bytes")
            if self._eof:
                raise ProtocolViolation("connection closed before the response head")
            return False
        lines = bytes(self._buf[:end]).decode("latin-1").split("\r\n")
        del self._buf[: end + 4]
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if (
            not version.startswith("HTTP/1.")
            or len(code) != 3
            or not (code.isascii() and code.isdigit())  # ("²" is a digit to isdigit)
            or rest[3:4] not in ("", " ")
        ):
            raise ProtocolViolation(f"bad status line {lines[0][:100]!r}")
        self.status = int(code)
        self._http10 = version == "HTTP/1.0"
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise ProtocolViolation(f"bad header line {line[:100]!r}")
            key = name.lower()
            value = value.strip()
            self.headers[key] = f"{self.headers[key]}, {value}" if key in self.headers else value
        return True

    def _start_body(self) -> None:
        coding = self.headers.get("transfer-encoding", "").lower()
        if self._head_request or self.status in (204, 304):
            self._mode = "done"
        elif coding:
            if coding.split(",")[-1].strip() != "chunked":
                self._mode = "close"
            else:
                self._mode = "chunked"
        elif "content-length" in self.headers:
            length = self.headers["content-length"]
            if not (length.isascii() and length.isdigit()):
                raise ProtocolViolation(f"bad Content-Length {length[:40]!r}")
            if len(length) > _MAX_LENGTH_DIGITS:
                raise ProtocolViolation(f"Content-Length of {len(length)} digits")
            self._remaining = int(length)
            self._mode = "length" if self._remaining else "done"
        else:
            self._mode = "close"

    def body(self) -> bytes | None:
        mode = self._mode
        buf = self._buf
        if mode == "done":
            return b""
        if mode == "close":
            if buf:
                data = bytes(buf)
                buf.clear()
                return data
            if self._eof:
                self._mode = "done"
                return b""
            return None
        if mode == "length":
            if buf:
                data = bytes(buf[: self._remaining])
                del buf[: len(data)]
                self._remaining -= len(data)
                if not self._remaining:
                    self._mode = "done"
                return data
            if self._eof:
                raise ProtocolViolation("connection closed mid-body")
            return None
        return self._chunked()

    def _chunked(self) -> bytes | None:
        buf = self._buf
        while True:
            state = self._chunk_state
            if state == "data":
                if not buf:
                    break
                data = bytes(buf[: self._remaining])
                del buf[: len(data)]
                self._remaining -= len(data)
                if not self._remaining:
                    self._chunk_state = "crlf"
                return data
            end = buf.find(b"\r\n")
            if end < 0:
                if len(buf) > _MAX_CHUNK_LINE:
                    raise ProtocolViolation("chunk line too long")
                break
            line = bytes(buf[:end])
            del buf[: end + 2]
            if state == "crlf":
                if line:
                    raise ProtocolViolation("missing CRLF after chunk data")
                self._chunk_state = "size"
            elif state == "size":
                size_text = line.split(b";", 1)[0].strip(b" \t")
                if _HEX.fullmatch(size_text) is None:  # (int() takes "-5", "0x5" and "1_0")
                    raise ProtocolViolation(f"bad chunk size {size_text[:20]!r}")
                size = int(size_text, 16)
                if size == 0:
                    self._chunk_state = "trailer"
                else:
                    self._remaining = size
                    self._chunk_state = "data"
            elif not line:  # the blank line that ends the trailer section
                self._mode = "done"
                return b""
        if self._eof:
            raise ProtocolViolation("connection closed mid-body")
        return None


class HttpResponse:
    """A response whose body is read as it arrives. ``receive_some()`` returns body bytes,
    ``b""`` at the end. Raises :class:`TransportLost` when the connection breaks (a stalled
    read past ``read_timeout`` included). ``aclose()`` hands the connection to ``finish``
    with whether it may carry another exchange (the response was read to its end), or
    closes it when there is no ``finish``."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        parser: ResponseParser,
        read_timeout: float | None,
        finish: Callable[[trio.abc.Stream, bool], Awaitable[None]] | None = None,
    ) -> None:
        self._stream: trio.abc.Stream | None = stream
        self._parser = parser
        self._read_timeout = read_timeout
        self._finish = finish
        self.status = parser.status
        self.headers = parser.headers

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def receive_some(self, *, timeout: float | None = None) -> bytes:
        """Next body bytes; ``timeout`` overrides the read timeout (None: the default;
        ``math.inf``: wait indefinitely, for a standing event stream)."""
        while True:
            try:
                data = self._parser.body()
            except ProtocolViolation as exc:
                raise TransportLost(f"bad HTTP response body: {exc}") from None
            if data is not None:
                return data
            if self._stream is None:
                raise TransportLost("the response was closed")
            await _read(
                self._stream, self._parser, self._read_timeout if timeout is None else timeout
            )

    async def read_all(self, limit: int) -> bytes:
        """The whole body. Past ``limit`` bytes: :class:`BadMessage` (the server sent more
        than the client takes, which no retry changes), at once when ``Content-Length``
        announces it, before any of the body is read."""
        length = self.headers.get("content-length", "")
        if (
            length.isascii()
            and length.isdigit()
            and (len(length) > _MAX_LENGTH_DIGITS or int(length) > limit)
        ):
            raise BadMessage(f"the response body is larger than {limit} bytes ({length})")
        body = bytearray()
        while chunk := await self.receive_some():
            body += chunk
            if len(body) > limit:
                raise BadMessage(f"the response body is larger than {limit} bytes")
        return bytes(body)

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:
            return
        if self._finish is not None:
            await self._finish(stream, self._parser.reusable)
            return
        await _close(stream)


async def _close(stream: trio.abc.Stream) -> None:
    with trio.CancelScope(shield=True), contextlib.suppress(trio.BrokenResourceError, OSError):
        await stream.aclose()


async def _read(stream: trio.abc.Stream, parser: ResponseParser, timeout: float | None) -> None:
    try:
        if timeout is None or timeout == float("inf"):
            data = await stream.receive_some(_RECEIVE)
        else:
            with trio.move_on_after(timeout) as scope:
                data = await stream.receive_some(_RECEIVE)
            if scope.cancelled_caught:
                raise TransportLost(f"the server stalled mid-response for {timeout:g} s")
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
        raise TransportLost(f"connection lost: {exc or type(exc).__name__}") from None
    parser.feed(data)


class ConnectFailed(TransportLost):
    """The connection could not be made: nothing was sent, any request may be retried."""


class _Stale(TransportLost):
    """A reused connection broke before any byte of the response: the server had closed it
    (or did so as the request went out)."""


def _closed_by_peer(stream: trio.abc.Stream) -> bool:
    """An idle connection is readable only when the server closed it (EOF, a reset) or sent
    bytes nobody asked for: either way it cannot carry a request. Checked without blocking."""
    sock = socket_of(stream)
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


@dataclasses.dataclass(slots=True)
class _Idle:
    """An idle connection in the pool, and since when (on the trio clock) it waits: one
    idle longer than ``idle_timeout`` is closed rather than reused."""

    stream: trio.abc.Stream
    since: float


class HttpPool:
    """Persistent HTTP/1.1 connections of one client (see the module docstring).

    ``max_idle``: idle connections kept per origin (more are closed when released).
    ``idle_timeout``: an idle connection older than this is closed rather than reused (servers
    close idle connections too: ours after ``HttpLimits.keep_alive_timeout``, 30 s).
    ``max_connections``: connections open at once, busy and idle (see the module docstring
    for the one kept for ``reserved`` exchanges). ``aclose()`` closes every idle connection;
    one still carrying a response is closed when that response is. ``opened`` counts the
    connections made, ``most_open`` the most open at once (diagnostics and the tests).
    """

    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        read_timeout: float | None = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        max_idle: int = DEFAULT_MAX_IDLE_CONNECTIONS,
        idle_timeout: float = DEFAULT_IDLE_CONNECTION_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        check_pool_limits(max_idle, idle_timeout, max_connections)
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.ssl_context = ssl_context
        self.max_idle = max_idle
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.opened = 0
        self.most_open = 0
        self._idle: dict[tuple[str, str, int], list[_Idle]] = {}
        self._closed = False
        #: Connections open (busy or idle), and those carrying exchanges that may stream.
        self._open = 0
        self._streaming = 0
        #: Where exchanges wait for a connection to come free.
        self._room = trio.lowlevel.ParkingLot()

    async def _connect(self, url: Url) -> trio.abc.Stream:
        """A new connection to ``url``'s origin (TCP, then TLS for ``https``, verified with
        the default context unless one was given), both within ``connect_timeout``;
        :class:`ConnectFailed` (``refused`` when no wait can mend it) otherwise."""
        try:
            with trio.fail_after(self.connect_timeout):
                stream: trio.abc.Stream = await trio.open_tcp_stream(url.host, url.port)
                if url.scheme == "https":
                    context = self.ssl_context or ssl.create_default_context()
                    tls = trio.SSLStream(stream, context, server_hostname=url.host)
                    await tls.do_handshake()
                    stream = tls
        except (OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
            reason, refused = connect_failure(exc, self.connect_timeout)
            raise ConnectFailed(
                f"cannot connect to {url.authority}: {reason}", refused=refused
            ) from None
        self.opened += 1
        return stream

    async def _take(self, url: Url) -> trio.abc.Stream | None:
        """An idle connection to ``url``'s origin still usable, else None."""
        idle = self._idle.get((url.scheme, url.host, url.port))
        now = trio.current_time()
        while idle:
            entry = idle.pop()  # the most recently used: the least likely to be closed
            if now - entry.since <= self.idle_timeout and not _closed_by_peer(entry.stream):
                return entry.stream
            await self._discard(entry.stream)
        return None

    async def _discard(self, stream: trio.abc.Stream) -> None:
        """Close a connection of the pool and make its room available."""
        self._open -= 1
        self._room.unpark_all()
        await _close(stream)

    async def _acquire(self, url: Url, *, fresh: bool = False) -> tuple[trio.abc.Stream, bool]:
        """A connection to ``url``'s origin: an idle one (True: reused; not when ``fresh``),
        else a new one once the pool has room for it (an idle connection is closed to make
        room; else this waits for one to be released or closed)."""
        while True:
            stream = None if fresh else await self._take(url)
            if stream is not None:
                return stream, True
            if self._open < self.max_connections:
                self._open += 1
                self.most_open = max(self.most_open, self._open)
                try:
                    return await self._connect(url), False
                except BaseException:
                    self._open -= 1
                    self._room.unpark_all()
                    raise
            oldest = min(
                (entries[0] for entries in self._idle.values() if entries),
                key=lambda entry: entry.since,
                default=None,
            )
            if oldest is None:
                await self._room.park()
                continue
            for entries in self._idle.values():
                if oldest in entries:
                    entries.remove(oldest)
            await self._discard(oldest.stream)

    def _finisher(
        self, url: Url, streaming: bool
    ) -> Callable[[trio.abc.Stream, bool], Awaitable[None]]:
        """What a response's ``aclose`` calls with its connection: idle again (up to
        ``max_idle`` per origin) when the response was read to its end and the pool is
        open, else closed; either way a waiting exchange is woken."""
        key = (url.scheme, url.host, url.port)

        async def finish(stream: trio.abc.Stream, reusable: bool) -> None:
            if streaming:
                self._streaming -= 1
                self._room.unpark_all()
            idle = self._idle.setdefault(key, [])
            if not reusable or self._closed or len(idle) >= self.max_idle:
                await self._discard(stream)
            else:
                idle.append(_Idle(stream, trio.current_time()))
                self._room.unpark_all()

        return finish

    async def exchange(
        self,
        url: Url,
        method: str,
        headers: Sequence[tuple[str, str]],
        body: bytes = b"",
        *,
        reserved: bool = False,
    ) -> HttpResponse:
        """Send one request and return the response with its head read (body still to read).

        ``reserved``: a short exchange (an answer to the server, a notification, a DELETE)
        that may use the connection kept for such; any other waits while ``max_connections
        - 1`` connections carry exchanges like it. The wait counts against the caller's
        own timeout.

        Raises :class:`ConnectFailed` when no connection was made (nothing was sent) and
        :class:`TransportLost` when the connection broke after the request was (maybe) sent.
        Cancelled: the connection is closed, never reused.
        """
        if self._closed:
            raise TransportLost("the HTTP client is closed")
        lines = [f"{method} {url.target} HTTP/1.1", f"Host: {url.authority}"]
        lines += [f"{name}: {value}" for name, value in headers]
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        streaming = not reserved
        if streaming:
            while self._streaming >= self.max_connections - 1:
                await self._room.park()
            self._streaming += 1
        try:
            stream, reused = await self._acquire(url)
            if reused:
                try:
                    return await self._send(url, stream, method, request, True, streaming)
                except _Stale:
                    if method not in _IDEMPOTENT:
                        raise
                stream, reused = await self._acquire(url, fresh=True)
            return await self._send(url, stream, method, request, reused, streaming)
        except BaseException:
            if streaming:
                self._streaming -= 1
                self._room.unpark_all()
            raise

    async def _send(
        self,
        url: Url,
        stream: trio.abc.Stream,
        method: str,
        request: bytes,
        reused: bool,
        streaming: bool,
    ) -> HttpResponse:
        """Write ``request`` and read the response's head. On a ``reused`` connection a
        failure before any byte of the response is ``_Stale`` (the server had closed it:
        ``exchange`` decides whether to try a fresh one); any failure closes the
        connection."""
        parser = ResponseParser(head_request=method == "HEAD")
        lost = _Stale if reused else TransportLost
        try:
            try:
                # A big request (a tools/call with big arguments) goes out with the send
                # low-water mark lifted, not trio's 16 KiB at a time (a scheduler pass per
                # 16 KiB).
                with lifted(socket_of(stream), len(request)):
                    await stream.send_all(request)
            except (trio.BrokenResourceError, OSError) as exc:
                raise lost(f"connection lost while sending: {exc!r}") from None
            while True:
                try:
                    if parser.head():
                        break
                except ProtocolViolation as exc:
                    if reused and not parser.started:  # EOF before any byte
                        raise _Stale(f"bad HTTP response: {exc}") from None
                    raise TransportLost(f"bad HTTP response: {exc}") from None
                # Until the first byte the server is working (a tool answered as JSON sends
                # its head when done): only the request's own timeout applies. Once a
                # response has started, it must keep coming within read_timeout.
                try:
                    await _read(stream, parser, self.read_timeout if parser.started else None)
                except TransportLost as exc:
                    if reused and not parser.started:
                        raise _Stale(str(exc)) from None
                    raise
        except BaseException:
            await self._discard(stream)
            raise
        return HttpResponse(stream, parser, self.read_timeout, self._finisher(url, streaming))

    async def aclose(self) -> None:
        """Close every idle connection; later releases close theirs. Idempotent."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for entries in idle.values():
            for entry in entries:
                await self._discard(entry.stream)
