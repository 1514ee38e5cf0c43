"""A small HTTP/1.1 client for the Streamable HTTP link: one connection per exchange.

The response parser is sans-IO (bytes in, events out), like the server's: a status line and
header block capped at ``max_head``, then a body delimited by Content-Length, by chunked
transfer coding (RFC 9112 7.1) or by the end of the connection. Every request carries
``Connection: close``: a POST answered with an SSE stream holds its connection anyway, and
one connection per exchange means a cut connection never affects another request.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ssl
import urllib.parse
from collections.abc import Sequence
from typing import Final

import trio

from ._errors import TransportLost

__all__ = ["HttpResponse", "ResponseParser", "Url", "open_exchange"]

#: Largest response head accepted (status line plus headers), bytes.
MAX_HEAD: Final = 64 * 1024
#: Largest chunk-size line, bytes (hex digits and extensions).
_MAX_CHUNK_LINE: Final = 4096
_RECEIVE: Final = 64 * 1024


class ProtocolViolation(Exception):
    """The server's HTTP/1.1 response is malformed."""


@dataclasses.dataclass(frozen=True, slots=True)
class Url:
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
    the body is complete; None when more input is needed)."""

    def __init__(self, *, head_request: bool = False) -> None:
        self._buf = bytearray()
        self._eof = False
        self._head_request = head_request
        self.status = 0
        self.headers: dict[str, str] = {}
        self._mode = "head"  # head, length, chunked, close, done
        self._remaining = 0
        self._chunk_state = "size"  # size, data, crlf, trailer

    @property
    def started(self) -> bool:
        """Some of the response has arrived (a partial head, or anything after it)."""
        return bool(self._buf) or self._mode != "head"

    def feed(self, data: bytes | bytearray) -> None:
        if not data:
            self._eof = True
        self._buf += data

    def head(self) -> bool:
        if self._mode != "head":
            return True
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
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise ProtocolViolation(f"bad status line {lines[0][:100]!r}")
        self.status = int(code)
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise ProtocolViolation(f"bad header line {line[:100]!r}")
            key = name.lower()
            value = value.strip()
            self.headers[key] = f"{self.headers[key]}, {value}" if key in self.headers else value
        if 100 <= self.status < 200:  # an interim response: read the real one
            self.headers = {}
            return self.head()
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
            if not length.isdigit():
                raise ProtocolViolation(f"bad Content-Length {length[:40]!r}")
            self._remaining = int(length)
            self._mode = "length" if self._remaining else "done"
        else:
            self._mode = "close"
        return True

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
                size_text = line.split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise ProtocolViolation(f"bad chunk size {size_text[:20]!r}") from None
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
    read past ``read_timeout`` included)."""

    def __init__(
        self, stream: trio.abc.Stream, parser: ResponseParser, read_timeout: float | None
    ) -> None:
        self._stream = stream
        self._parser = parser
        self._read_timeout = read_timeout
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
            await _read(
                self._stream, self._parser, self._read_timeout if timeout is None else timeout
            )

    async def read_all(self, limit: int) -> bytes:
        body = bytearray()
        while chunk := await self.receive_some():
            body += chunk
            if len(body) > limit:
                raise TransportLost(f"HTTP response body exceeds {limit} bytes")
        return bytes(body)

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True), contextlib.suppress(trio.BrokenResourceError, OSError):
            await self._stream.aclose()


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


async def open_exchange(
    url: Url,
    method: str,
    headers: Sequence[tuple[str, str]],
    body: bytes = b"",
    *,
    connect_timeout: float = 10.0,
    read_timeout: float | None = 30.0,
    ssl_context: ssl.SSLContext | None = None,
) -> HttpResponse:
    """Send one request and return the response with its head read (body still to read).

    Raises :class:`ConnectFailed` when no connection was made, :class:`TransportLost` when
    the connection broke after the request was (maybe) sent.
    """
    try:
        with trio.fail_after(connect_timeout):
            stream: trio.abc.Stream = await trio.open_tcp_stream(url.host, url.port)
            if url.scheme == "https":
                context = ssl_context or ssl.create_default_context()
                tls = trio.SSLStream(stream, context, server_hostname=url.host)
                await tls.do_handshake()
                stream = tls
    except (OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
        raise ConnectFailed(f"cannot connect to {url.authority}: {exc!r}") from None
    lines = [f"{method} {url.target} HTTP/1.1", f"Host: {url.authority}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    parser = ResponseParser(head_request=method == "HEAD")
    try:
        try:
            await stream.send_all(head + body)
        except (trio.BrokenResourceError, OSError) as exc:
            raise TransportLost(f"connection lost while sending: {exc!r}") from None
        while True:
            try:
                if parser.head():
                    break
            except ProtocolViolation as exc:
                raise TransportLost(f"bad HTTP response: {exc}") from None
            # Until the first byte the server is working (a tool answered as JSON sends its
            # head when done): only the request's own timeout applies. Once a response has
            # started, it must keep coming within read_timeout.
            await _read(stream, parser, read_timeout if parser.started else None)
    except BaseException:
        with trio.CancelScope(shield=True), contextlib.suppress(trio.BrokenResourceError, OSError):
            await stream.aclose()
        raise
    return HttpResponse(stream, parser, read_timeout)
