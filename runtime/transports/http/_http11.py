"""HTTP/1.1 for the server side, sans-IO: request heads and bodies in, response bytes out.

Written for this server's needs and its hot path (a generic library such as h11 spends
about 200 us per request/response pair on this class of machine; this spends a tenth).
Strict where leniency would be a risk (RFC 9112): one Host, a valid Content-Length or
exactly ``chunked``, never both (request smuggling), no obsolete line folding, no bare CR
or LF or NUL in a field; limits on the head's size and field count. Anything else gets a
precise 4xx/5xx and the connection closes. HTTP/1.0 is served too, one request per connection
unless the client asks for ``Connection: keep-alive`` (RFC 9112 appendix C.2.2).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from types import MappingProxyType
from typing import Final
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "BodyReader",
    "ProtocolError",
    "RequestHead",
    "RequestParser",
    "chunk",
    "end_chunks",
    "response_head",
    "simple_response",
    "simple_response_head",
]

_TOKEN: Final = rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+"
#: method SP request-target SP HTTP/1.x
_REQUEST_LINE: Final = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e\x80-\xff]+) HTTP/1\.([01])")
#: Every field line: CRLF name ":" value, the value visible characters, SP and HT only.
_FIELDS: Final = re.compile(rb"(?:\r\n" + _TOKEN + rb":[\t\x20-\x7e\x80-\xff]*)*")
_HEX: Final = re.compile(rb"[0-9A-Fa-f]{1,16}")
_REASONS: Final = {s.value: s.phrase for s in HTTPStatus}
_NO_BODY_STATUS: Final = frozenset({204, 304})


class ProtocolError(Exception):
    """The peer broke HTTP/1.1: answer ``status`` and close the connection."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RequestHead:
    """A parsed request head. Immutable (its fields too): the parser hands the same object
    out again for the same head bytes (keep-alive clients repeat their heads)."""

    method: str
    target: str
    #: The target's path and its query parameters (split once per distinct head).
    path: str
    query: Mapping[str, str]
    #: (1, 1) or (1, 0).
    version: tuple[int, int]
    #: Lower-cased names, values with surrounding whitespace removed (latin-1).
    headers: tuple[tuple[str, str], ...]
    #: The same by name; a repeated field's values joined with ", " (RFC 9110 5.3).
    index: Mapping[str, str]
    #: None: no body; -1: chunked; else its length.
    content_length: int | None
    keep_alive: bool
    expect_continue: bool


class RequestParser:
    """Buffers bytes from the peer and cuts request heads off the front."""

    __slots__ = ("buffer", "max_count", "max_size")

    def __init__(self, max_head_size: int, max_header_count: int) -> None:
        self.buffer = bytearray()
        self.max_size = max_head_size
        self.max_count = max_header_count

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def next_head(self) -> RequestHead | None:
        """The next complete request head (consumed), None if more bytes are needed."""
        buf = self.buffer
        start = 0
        while buf.startswith(b"\r\n", start):  # RFC 9112 2.2: ignore leading empty lines
            start += 2
        end = buf.find(b"\r\n\r\n", start)
        if end < 0:
            if len(buf) - start > self.max_size:
                raise ProtocolError(
                    431, f"Request header fields too large (limit {self.max_size} bytes)"
                )
            if buf.find(b"\n\n", start) >= 0 or buf.find(b"\n\r\n", start) >= 0:
                raise ProtocolError(400, "Bad request: line ends must be CRLF")
            if start:
                del buf[:start]
            return None
        if end - start > self.max_size:
            raise ProtocolError(
                431, f"Request header fields too large (limit {self.max_size} bytes)"
            )
        head = bytes(buf[start:end])
        del buf[: end + 4]
        # A client sends the same head request after request (only Content-Length or an
        # Mcp-Name may change): a head seen before is not parsed again, and its parse,
        # immutable, is handed out as it is. The parse depends on the head's bytes and on
        # the field-count limit alone, checked here.
        known = _HEADS.get(head)
        if known is not None and len(known.headers) <= self.max_count:
            return known
        parsed = self._parse(head)
        if len(head) <= _HEAD_MAX_LENGTH:
            if len(_HEADS) >= _HEADS_MAX:
                _HEADS.clear()
            _HEADS[head] = parsed
        return parsed

    def _parse(self, head: bytes) -> RequestHead:
        line_end = head.find(b"\r\n")
        if line_end < 0:
            line_end = len(head)
        request_line = _REQUEST_LINE.fullmatch(head, 0, line_end)
        if request_line is None:
            parts = head[:line_end].split(b" ")
            if len(parts) == 3 and parts[2].startswith(b"HTTP/") and parts[2][5:6] != b"1":
                raise ProtocolError(505, "HTTP Version Not Supported")
            raise ProtocolError(400, "Bad request: malformed request line")
        # One C-speed match checks every field line: token names, a colon, and values of
        # visible characters, spaces and tabs only (so no bare CR, LF or NUL anywhere).
        if _FIELDS.fullmatch(head, line_end) is None:
            raise ProtocolError(400, _field_error(head[line_end:]))
        if head.count(b"\r\n") > self.max_count:
            raise ProtocolError(431, f"Too many header fields (limit {self.max_count})")
        method, target, minor = request_line.groups()
        lines = head[line_end + 2 :].decode("latin-1").split("\r\n") if line_end < len(head) else []
        # Clients repeat the same field lines request after request (Host, Accept, the MCP
        # headers...): each distinct line is cut and cleaned once, then found by its text.
        headers = tuple([_FIELD_LINES.get(line) or _field(line) for line in lines])
        index = dict(headers)
        many_hosts = False
        if len(index) != len(headers):  # RFC 9110 5.3: repeated fields combine with ", "
            index, many_hosts = _combined(headers)
        return _head(
            method.decode("ascii"),
            target.decode("latin-1"),
            (1, minor[0] - 48),
            headers,
            index,
            many_hosts,
        )


_NO_QUERY: Final[Mapping[str, str]] = MappingProxyType({})

#: Request head (bytes) -> its parse, kept private (callers get copies). Bounded like the
#: field-line memo below: at most 256 heads of at most 1 KiB, cleared when full (about
#: 0.5 MiB at most); a longer head is parsed each time.
_HEADS: dict[bytes, RequestHead] = {}
_HEADS_MAX: Final = 256
_HEAD_MAX_LENGTH: Final = 1024

#: Field line -> (lower-cased name, value without surrounding whitespace). Bounded in count
#: (cleared when full: a client sending ever-new lines costs a re-parse) and in line length
#: (longer lines are cut each time), so it holds at most about 0.5 MiB.
_FIELD_LINES: dict[str, tuple[str, str]] = {}
_FIELD_LINES_MAX: Final = 1024
_FIELD_LINE_MAX_LENGTH: Final = 512


def _field(line: str) -> tuple[str, str]:
    name, _, value = line.partition(":")
    field = (name.lower(), value.strip(" \t"))
    if len(line) <= _FIELD_LINE_MAX_LENGTH:
        if len(_FIELD_LINES) >= _FIELD_LINES_MAX:
            _FIELD_LINES.clear()
        _FIELD_LINES[line] = field
    return field


def _combined(headers: tuple[tuple[str, str], ...]) -> tuple[dict[str, str], bool]:
    """The index of fields some of which repeat, and whether Host is one of them."""
    index: dict[str, str] = {}
    repeated: set[str] = set()
    for name, value in headers:
        if name in index:
            index[name] = f"{index[name]}, {value}"
            repeated.add(name)
        else:
            index[name] = value
    return index, "host" in repeated


def _field_error(fields: bytes) -> str:
    for line in fields.split(b"\r\n")[1:]:
        if line[:1] in (b" ", b"\t"):
            return "Bad request: obsolete line folding"
    return "Bad request: malformed header field"


def _tokens(value: str | None) -> list[str]:
    return [v.strip().lower() for v in value.split(",") if v.strip()] if value else []


def _head(
    method: str,
    target: str,
    version: tuple[int, int],
    headers: tuple[tuple[str, str], ...],
    index: dict[str, str],
    many_hosts: bool,
) -> RequestHead:
    if version == (1, 1) and ("host" not in index or many_hosts):
        raise ProtocolError(400, "Bad request: exactly one Host header is required")
    expect = index.get("expect")
    if expect is not None and expect.lower() != "100-continue":
        raise ProtocolError(417, "Expectation Failed")
    length: int | None = None
    declared = index.get("content-length")
    if (
        declared is not None
        and declared.isdigit()
        and declared.isascii()
        and len(declared) <= 18
        and "transfer-encoding" not in index
    ):  # the common case, one plain length; anything else is checked in full below
        length = int(declared)
        lengths: set[str] = set()
        codings: list[str] = []
    else:
        lengths = set(_tokens(declared))
        codings = _tokens(index.get("transfer-encoding"))
    if codings:
        if lengths:
            raise ProtocolError(400, "Bad request: both Content-Length and Transfer-Encoding")
        if version == (1, 0):
            raise ProtocolError(400, "Bad request: Transfer-Encoding in HTTP/1.0")
        if codings != ["chunked"]:
            raise ProtocolError(501, "Not Implemented: only chunked transfer coding")
        length = -1
    elif lengths:
        value = lengths.pop()
        if lengths or not value.isdigit() or not value.isascii() or len(value) > 18:
            raise ProtocolError(400, "Bad request: invalid Content-Length")
        length = int(value)
    connection = index.get("connection")
    options = _tokens(connection)
    # RFC 9112 section 9.3: an HTTP/1.1 connection persists unless "close" is sent; an
    # HTTP/1.0 one only when the client sent "keep-alive" (appendix C.2.2: the 1.0
    # persistent connections of RFC 2068 section 19.7.1, which load tools such as ab use).
    keep_alive = "close" not in options and (version == (1, 1) or "keep-alive" in options)
    if target.startswith("/") and "?" not in target and "#" not in target:
        path, query = target, _NO_QUERY
    else:
        try:
            split = urlsplit(target)
        except ValueError:  # e.g. an absolute-form target with an unclosed "[" host
            raise ProtocolError(400, "Bad request: invalid request target") from None
        path, query = split.path, MappingProxyType(dict(parse_qsl(split.query)))
    return RequestHead(
        method,
        target,
        path,
        query,
        version,
        headers,
        MappingProxyType(index),
        length,
        keep_alive,
        expect is not None and bool(length),
    )


class BodyReader:
    """Takes one request's body off the front of a parser's buffer as it arrives."""

    __slots__ = ("_chunk_left", "_chunked", "_in_trailers", "_left", "body", "done", "max_size")

    def __init__(self, head: RequestHead, max_size: int) -> None:
        #: The body so far (chunked) or all of it once ``done`` (Content-Length).
        self.body: bytes | bytearray = bytearray()
        self.max_size = max_size
        length = head.content_length
        self._chunked = length == -1
        self._left = 0 if length is None or length == -1 else length
        self._chunk_left = -1  # -1: a chunk-size line is due next
        self._in_trailers = False
        self.done = length is None or length == 0
        if self._left > max_size:
            raise ProtocolError(413, f"Payload Too Large: body exceeds {max_size} bytes")

    @staticmethod
    def whole(head: RequestHead, buf: bytearray, max_size: int) -> bytes | None:
        """The body, taken off ``buf``, when it has a Content-Length within ``max_size`` and
        all of it is there (the common case: no reader needed); else None."""
        length = head.content_length
        if length is None or not 0 < length <= len(buf) or length > max_size:
            return None
        if length == len(buf):  # the body is all that was read after the head: the common case
            body = bytes(buf)
            buf.clear()
            return body
        with memoryview(buf) as view:  # one copy (a slice of the bytearray would be two)
            body = bytes(view[:length])
        del buf[:length]
        return body

    def read(self, buf: bytearray) -> bool:
        """Consume what ``buf`` holds of the body; True once the body is complete."""
        if self.done:
            return True
        if not self._chunked:
            # A Content-Length body stays in ``buf`` until all of it is there, then is taken
            # in one copy (appending each read, then ``bytes()`` of the whole, would make two
            # more copies of a 1 MiB body). ``buf`` holds no more than the body would.
            left = self._left
            if len(buf) < left:
                return False
            with memoryview(buf) as view:
                self.body = bytes(view[:left])
            del buf[:left]
            self._left = 0
            self.done = True
            return True
        return self._read_chunks(buf)

    def _read_chunks(self, buf: bytearray) -> bool:
        while self._chunk_step(buf):
            if self.done:
                return True
        return False

    def _chunk_step(self, buf: bytearray) -> bool:
        if self._in_trailers:
            end = buf.find(b"\r\n")
            if end < 0:
                return self._need(buf, "trailer field")
            del buf[: end + 2]
            self.done = end == 0  # an empty line ends the trailers
            return True
        if self._chunk_left == -1:
            end = buf.find(b"\r\n")
            if end < 0:
                return self._need(buf, "chunk size line")
            size = bytes(buf[:end]).split(b";", 1)[0].strip(b" \t")
            if not _HEX.fullmatch(size):
                raise ProtocolError(400, "Bad request: invalid chunk size")
            del buf[: end + 2]
            self._chunk_left = int(size, 16)
            if len(self.body) + self._chunk_left > self.max_size:
                raise ProtocolError(413, f"Payload Too Large: body exceeds {self.max_size} bytes")
            if self._chunk_left == 0:
                self._in_trailers = True
            return True
        if len(buf) < self._chunk_left + 2:
            take = min(self._chunk_left, len(buf))
            self.body += buf[:take]
            del buf[:take]
            self._chunk_left -= take
            return False
        if buf[self._chunk_left : self._chunk_left + 2] != b"\r\n":
            raise ProtocolError(400, "Bad request: chunk data not followed by CRLF")
        self.body += buf[: self._chunk_left]
        del buf[: self._chunk_left + 2]
        self._chunk_left = -1
        return True

    @staticmethod
    def _need(buf: bytearray, what: str) -> bool:
        if len(buf) > 4096:
            raise ProtocolError(400, f"Bad request: {what} too long")
        return False


def response_head(
    status: int,
    headers: list[tuple[str, str]],
    *,
    length: int | None,
    close: bool,
    version: tuple[int, int] = (1, 1),
) -> bytes:
    """The status line and fields of a response. ``length`` None: a streamed body (chunked
    for HTTP/1.1, up to the close for HTTP/1.0). Field values must not hold CR, LF or NUL."""
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}"]
    for name, value in headers:
        if "\r" in value or "\n" in value or "\0" in value or ":" in name:
            raise ValueError(f"invalid response header {name!r}")
        lines.append(f"{name}: {value}")
    if status not in _NO_BODY_STATUS and status >= 200:
        if length is not None:
            lines.append(f"Content-Length: {length}")
        elif version == (1, 1):
            lines.append("Transfer-Encoding: chunked")
    if close:
        lines.append("Connection: close")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("latin-1")


def simple_response_head(
    status: int,
    content_type: str | None,
    length: int,
    close: bool,
    headers: tuple[tuple[str, str], ...] = (),
) -> bytes:
    """``response_head`` of a whole response whose fields are ``headers`` then Content-Type:
    the same bytes, the part before the length built once per (status, content type,
    fields)."""
    if status in _NO_BODY_STATUS or status < 200:
        fields = [*headers, ("Content-Type", content_type)] if content_type else [*headers]
        return response_head(status, fields, length=length, close=close)
    return b"%b%d\r\n%b\r\n" % (
        _prefix(status, content_type, headers),
        length,
        b"Connection: close\r\n" if close else b"",
    )


def simple_response(
    status: int,
    content_type: str | None,
    body: bytes,
    close: bool,
    headers: tuple[tuple[str, str], ...] = (),
) -> bytes:
    """A whole response, ``simple_response_head`` and ``body``, built in one step: the
    head is not built and then copied again to join the body."""
    if status in _NO_BODY_STATUS or status < 200:
        return simple_response_head(status, content_type, len(body), close, headers) + body
    return b"%b%d\r\n%b\r\n%b" % (
        _prefix(status, content_type, headers),
        len(body),
        b"Connection: close\r\n" if close else b"",
        body,
    )


@functools.lru_cache(maxsize=256)
def _prefix(status: int, content_type: str | None, headers: tuple[tuple[str, str], ...]) -> bytes:
    fields = [*headers, ("Content-Type", content_type)] if content_type else [*headers]
    head = response_head(status, fields, length=0, close=False)
    return head[: head.rindex(b"Content-Length: ") + 16]


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (empty data makes no chunk: that would end the body)."""
    return b"%x\r\n%b\r\n" % (len(data), data) if data else b""


def end_chunks() -> bytes:
    return b"0\r\n\r\n"
