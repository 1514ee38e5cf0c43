"""Content-Length framing: the LSP base protocol, as spoken by some MCP peers over stdio.

Language Server Protocol specification 3.17, "Base Protocol": a message is a header part and a
content part separated by ``\\r\\n``; each header field is ``name: value`` terminated by
``\\r\\n``; ``Content-Length`` (required) is the length of the content part in bytes;
``Content-Type`` is optional. Header names are compared case-insensitively (as in HTTP, RFC 9110
section 5.1) and unknown headers are ignored.

Liberal in what we accept: bare ``\\n`` line endings and optional whitespace around names and
values. Strict in what we send: ``Content-Length: N\\r\\n\\r\\n`` then the payload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NoReturn

from ._errors import EXCERPT_LIMIT, FramingError, escape_excerpt
from ._protocol import DEFAULT_MAX_FRAME_SIZE

__all__ = ["DEFAULT_MAX_HEADER_SIZE", "ContentLengthFramer"]

#: Largest header block accepted, in bytes. LSP peers send one or two short headers; 8 KiB is
#: the header limit common HTTP servers use (nginx's default large_client_header_buffers line).
DEFAULT_MAX_HEADER_SIZE: Final = 8 * 1024

_CR: Final = 0x0D
# 18 digits stay below 2**63 and far above any sane frame; longer values are refused rather than
# handed to int() (whose digit limit would raise a ValueError of its own).
_MAX_LENGTH_DIGITS: Final = 18
_OWS: Final = b" \t"  # RFC 9110 section 5.6.3, optional whitespace around a field value

_HEADERS: Final = 0  # reading a header block
_BODY: Final = 1  # reading the body, up to self._body_end
_SKIP: Final = 2  # discarding the body of an over-long frame


class ContentLengthFramer:
    """Split a byte stream into Content-Length framed messages (see :class:`Framer`).

    Fatal (sticky) errors: a header block over ``max_header_size``; a header line without a
    colon; a missing, malformed (not plain ASCII digits) or conflicting ``Content-Length``; EOF
    inside a header block or a body. Non-fatal: a ``Content-Length`` over ``max_frame_size``;
    the error is raised once and exactly that many body bytes are then discarded as they arrive
    (never buffered) before the next header block is read.
    """

    max_frame_size: int
    max_header_size: int

    def __init__(
        self,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
    ) -> None:
        if max_frame_size < 0 or max_header_size < 2:
            raise ValueError("max_frame_size must be >= 0 and max_header_size >= 2")
        self.max_frame_size = max_frame_size
        self.max_header_size = max_header_size
        self._buf = bytearray()
        self._base = 0  # stream offset of _buf[0]
        self._start = 0  # index in _buf of the current frame's header block
        self._line = 0  # index in _buf of the next header line to parse
        self._scan = 0  # index in _buf up to which no b"\n" exists (never rescanned)
        self._state = _HEADERS
        self._length: int | None = None  # Content-Length seen in the current header block
        self._length_text = b""
        self._body = 0  # index in _buf of the body (state _BODY)
        self._body_end = 0  # index in _buf just past the body (state _BODY)
        self._skip_left = 0  # body bytes still to discard (state _SKIP)
        self._skip_done = 0  # bytes of the over-long frame consumed so far (state _SKIP)
        self._skip_offset = 0  # stream offset of the over-long frame's header block
        self._skip_excerpt = b""
        self._error: FramingError | None = None  # the sticky fatal error
        self._eof = False
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def buffered(self) -> int:
        pending = len(self._buf) - self._start
        return pending + self._skip_done if self._state == _SKIP else pending

    def feed(self, data: bytes | bytearray) -> None:
        if self._eof:
            raise RuntimeError("feed() called after EOF")
        if not data:
            self._eof = True
            return
        if self._error is not None:
            return  # the stream is dead; keep nothing
        if self._state == _SKIP and self._start == len(self._buf):
            # Discard the over-long body before it is ever buffered.
            taken = min(self._skip_left, len(data))
            self._skip_left -= taken
            self._skip_done += taken
            self._base += taken
            if self._skip_left == 0:
                self._state = _HEADERS
                self._line = self._scan = self._start
            data = data[taken:]
        self._buf += data

    def next_frame(self) -> bytes | None:
        if self._error is not None:
            raise self._error
        buf = self._buf
        while True:
            state = self._state
            if state == _BODY:
                end = self._body_end
                if len(buf) < end:
                    break
                # One copy: slicing the bytearray itself would copy once more.
                frame = bytes(memoryview(buf)[self._body : end])
                self._start = self._line = self._scan = end
                self._state = _HEADERS
                return frame
            if state == _SKIP:
                taken = min(self._skip_left, len(buf) - self._start)
                self._skip_left -= taken
                self._skip_done += taken
                self._start += taken
                if self._skip_left:
                    break
                self._line = self._scan = self._start
                self._state = _HEADERS
                continue
            newline = buf.find(b"\n", self._scan)
            if newline < 0:
                break
            self._scan = newline + 1
            if self._scan - self._start > self.max_header_size:
                self._header_block_too_big()
            frame_or_none = self._header_line(self._line, newline)
            self._line = self._scan
            if frame_or_none is not None:
                return frame_or_none

        # Nothing whole is left: compact up to the current frame, then check the tail.
        if self._start:
            del buf[: self._start]  # amortised O(1): bytearray drops a prefix by moving a pointer
            self._base += self._start
            shift = self._start
            self._line = max(0, self._line - shift)
            self._scan = max(0, self._scan - shift)
            self._body = max(0, self._body - shift)
            self._body_end = max(0, self._body_end - shift)
            self._start = 0
        pending = len(buf)
        if self._state == _HEADERS and pending >= self.max_header_size:
            # The block still needs at least one more byte: it will exceed the cap. Deciding
            # now bounds the buffer and gives every chunking of the stream the same error.
            self._header_block_too_big()
        if self._eof and not self._finished:
            if self._state == _SKIP:
                self._start = self._skip_offset - self._base
                self._fail(
                    f"EOF inside a frame ({self._skip_left} bytes of an oversized body missing)",
                    self._skip_excerpt,
                )
            if self._state == _BODY:
                self._fail(
                    f"EOF inside a frame (body has {pending - self._body} of "
                    f"{self._body_end - self._body} bytes)",
                    buf[:EXCERPT_LIMIT],
                )
            if pending:
                self._fail(
                    f"EOF inside a frame ({pending} bytes of an unterminated header block)",
                    buf[:EXCERPT_LIMIT],
                )
            self._finished = True
        return None

    def _header_line(self, line: int, newline: int) -> bytes | None:
        """Parse the header line buf[line:newline]; at the blank line, start the body and return
        an empty frame when Content-Length is 0."""
        buf = self._buf
        end = newline - 1 if newline > line and buf[newline - 1] == _CR else newline
        if end == line:
            return self._end_of_headers()
        name, colon, value = bytes(buf[line:end]).partition(b":")
        if not colon:
            self._fail(
                f"header line without a colon: '{escape_excerpt(name, 64)}'",
                buf[self._start : newline + 1],
            )
        if name.strip(_OWS).lower() != b"content-length":
            return None  # Content-Type and anything else: tolerated, ignored (LSP 3.17)
        value = value.strip(_OWS)
        excerpt = buf[self._start : newline + 1]
        if not value.isdigit():  # ASCII digits only: no sign, no inner spaces, not empty
            self._fail(f"invalid Content-Length: '{escape_excerpt(value, 64)}'", excerpt)
        digits = value.lstrip(b"0") or b"0"
        if len(digits) > _MAX_LENGTH_DIGITS:
            self._fail(f"Content-Length out of range: '{escape_excerpt(value, 64)}'", excerpt)
        length = int(digits)
        if self._length is not None and self._length != length:
            self._fail(
                "conflicting Content-Length headers: "
                f"'{escape_excerpt(self._length_text, 64)}' and '{escape_excerpt(value, 64)}'",
                excerpt,
            )
        self._length = length
        self._length_text = value
        return None

    def _end_of_headers(self) -> bytes | None:
        length = self._length
        block_end = self._scan
        if length is None:
            self._fail("missing Content-Length header", self._buf[self._start : block_end])
        self._length = None
        if length > self.max_frame_size:
            excerpt = bytes(self._buf[self._start : min(block_end, self._start + EXCERPT_LIMIT)])
            error = FramingError(
                f"frame exceeds {self.max_frame_size} bytes (Content-Length: {length})",
                fatal=False,
                offset=self._base + self._start,
                excerpt=excerpt,
            )
            self._state = _SKIP
            self._skip_left = length
            self._skip_done = block_end - self._start
            self._skip_offset = self._base + self._start
            self._skip_excerpt = excerpt
            self._start = self._line = block_end
            raise error
        if length == 0:
            self._start = self._line = block_end
            return b""
        self._body = block_end
        self._body_end = block_end + length
        self._state = _BODY
        return None

    def _header_block_too_big(self) -> NoReturn:
        # max_header_size bytes of the block are always buffered here, whatever the chunking.
        keep = min(EXCERPT_LIMIT, self.max_header_size)
        self._fail(
            f"header block exceeds {self.max_header_size} bytes",
            self._buf[self._start : self._start + keep],
        )

    def _fail(self, reason: str, excerpt: bytes | bytearray) -> NoReturn:
        """Raise a fatal error and make it sticky; free the buffer."""
        self._error = FramingError(
            reason, fatal=True, offset=self._base + self._start, excerpt=bytes(excerpt)
        )
        self._buf = bytearray()
        self._start = self._line = self._scan = self._skip_done = 0
        self._state = _HEADERS
        raise self._error

    def encode(self, payload: bytes) -> bytes:
        """Return ``Content-Length: N\\r\\n\\r\\n`` + payload (N counts bytes, per LSP 3.17)."""
        return b"Content-Length: %d\r\n\r\n" % len(payload) + payload

    def encode_parts(self, payload: bytes) -> tuple[bytes, bytes, bytes]:
        """The header, ``payload`` itself and no tail."""
        return b"Content-Length: %d\r\n\r\n" % len(payload), payload, b""

    def encode_around(self, parts: Sequence[bytes | bytearray]) -> tuple[bytes, bytes]:
        """The header for the payload ``parts`` make, and no tail."""
        return b"Content-Length: %d\r\n\r\n" % sum(len(part) for part in parts), b""
