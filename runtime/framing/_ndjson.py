"""Newline-delimited JSON framing: the MCP stdio transport.

MCP specification, "Transports" > "stdio" (2024-11-05 through 2025-11-25 and the 2026-07-28
revision): "Messages are delimited by newlines, and MUST NOT contain embedded newlines." The
same framing serves the TCP and Unix socket transports.

Liberal in what we accept: a trailing CR is stripped (peers on Windows write CRLF), and lines
holding only JSON whitespace (RFC 8259 section 2: space, tab, CR; LF is the delimiter) are not
frames. Strict in what we send: exactly ``payload + b"\\n"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ._errors import EXCERPT_LIMIT, FramingError
from ._protocol import DEFAULT_MAX_FRAME_SIZE

__all__ = ["NdjsonFramer"]

_LF: Final = 0x0A
_CR: Final = 0x0D
# RFC 8259 section 2, "insignificant whitespace" minus LF (the delimiter itself).
_BLANK: Final = b" \t\r"
_BLANK_CODES: Final = frozenset(_BLANK)
#: A line whose unterminated start is buffered this long already keeps its further chunks as
#: they came, and joins them once when its newline arrives: the frame is then one copy of
#: the chunks, where appending them to the buffer and copying the line out of it would make
#: two, plus the buffer's growth: a 1 MiB buffer grown and freed per request and its pages
#: faulted in again (benchmarks/README.md, "Big lines over stdio"). One pipe read (64 KiB):
#: ordinary messages never get here.
_HOLD_CHUNKS_OVER: Final = 64 * 1024


def _is_blank(line: bytes | bytearray) -> bool:
    # First-byte test so that ordinary frames ("{...") never pay for a strip() copy.
    return not line or (line[0] in _BLANK_CODES and not line.strip(_BLANK))


class NdjsonFramer:
    """Split a byte stream into newline-terminated frames (see :class:`Framer`).

    Errors are never fatal: NDJSON resynchronises at the next ``\\n``.

    * A line whose content (without ``\\n`` and one trailing ``\\r``) is longer than
      ``max_frame_size`` raises ``FramingError("frame exceeds N bytes")`` once, as soon as the
      buffered, unterminated part proves it too long; its bytes are then discarded up to and
      including the next ``\\n`` without being buffered.
    * EOF after a non-blank unterminated line raises ``FramingError("EOF inside a frame ...")``
      once; the framer is then finished. A blank unterminated tail is ignored.
    """

    max_frame_size: int

    def __init__(self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 1:
            raise ValueError("max_frame_size must be at least 1")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._start = 0  # index in _buf of the first byte of the current line
        self._scan = 0  # index in _buf up to which no b"\n" exists (never rescanned)
        self._base = 0  # stream offset of _buf[0]
        self._discarding = False  # inside an over-long line: drop bytes until the next b"\n"
        self._dropped = 0  # bytes of that over-long line dropped so far
        self._eof = False
        self._finished = False
        #: Chunks of a long line fed after its start (see _HOLD_CHUNKS_OVER), not yet in _buf
        self._hold_over = _HOLD_CHUNKS_OVER
        self._held: list[bytes] = []
        self._held_size = 0
        self._held_scan = 0  # chunks of _held searched for a b"\n" already

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._start + self._dropped + self._held_size

    def feed(self, data: bytes | bytearray) -> None:
        if self._eof:
            raise RuntimeError("feed() called after EOF")
        if not data:
            self._eof = True
            return
        if self._discarding:
            # The buffer is empty while discarding: drop the rest of the over-long line here,
            # before it is ever buffered.
            newline = data.find(b"\n")
            if newline < 0:
                self._base += len(data)
                self._dropped += len(data)
                return
            self._discarding = False
            self._dropped = 0
            self._base += newline + 1
            data = data[newline + 1 :]
        buf = self._buf
        if self._held or (
            len(buf) >= self._hold_over and self._scan == len(buf) and not self._start
        ):
            self._held.append(bytes(data))  # (no copy of ``bytes``, what a read gives)
            self._held_size += len(data)
            return
        buf += data

    def next_frame(self) -> bytes | None:
        if self._held:
            frame = self._line_from_held()
            if frame is not None or self._held:
                return frame  # a line, or its start still held (no newline, not too long)
            # Put back into the buffer: judged below, as if it had never been held.
        buf = self._buf
        if self._scan == len(buf) and not self._start and not self._eof:
            # Nothing fed since the tail was judged (a reader asks again before it reads):
            # no line, and nothing to compact or to find too long.
            return None
        limit = self.max_frame_size
        while True:
            newline = buf.find(b"\n", self._scan)
            if newline < 0:
                break
            start = self._start
            end = newline - 1 if newline > start and buf[newline - 1] == _CR else newline
            self._start = self._scan = newline + 1
            if end - start > limit:
                raise self._too_long(start)
            if end == start or (buf[start] in _BLANK_CODES and _is_blank(buf[start:end])):
                continue
            # One copy: slicing the bytearray itself would copy once more.
            frame = bytes(memoryview(buf)[start:end])
            if self._start == len(buf):
                # The buffer ended with this line (a lone request, the last of a burst):
                # empty it now, so that the reader's next asks take the early return above
                # rather than a failed search and a compaction.
                self._base += self._start
                buf.clear()
                self._start = self._scan = 0
            return frame

        # No complete line left: compact, then look at the unterminated tail.
        if self._start:
            del buf[: self._start]  # amortised O(1): bytearray drops a prefix by moving a pointer
            self._base += self._start
            self._start = 0
        self._scan = pending = len(buf)
        # The tail's content is at least `pending` bytes, minus one if it ends in a CR that a
        # following LF would make a line ending. Decide now so that nothing grows unbounded and
        # so that every chunking of the same stream raises the same error.
        if pending > limit + 1 or (pending == limit + 1 and buf[-1] != _CR):
            error = self._too_long(0)
            self._base += pending
            buf.clear()
            self._scan = 0
            self._discarding = not self._eof
            self._dropped = pending if self._discarding else 0
            if self._eof:
                self._finished = True
            raise error
        if self._eof and not self._finished:
            self._finished = True
            self._discarding = False  # an over-long line cut by EOF was already reported
            self._dropped = 0
            eof_error = None
            if pending and not _is_blank(buf):
                eof_error = FramingError(
                    f"EOF inside a frame ({pending} bytes without a terminating newline)",
                    fatal=False,
                    offset=self._base,
                    excerpt=buf[:EXCERPT_LIMIT],
                )
            self._base += pending
            buf.clear()
            self._scan = 0
            if eof_error is not None:
                raise eof_error
        return None

    def _line_from_held(self) -> bytes | None:
        """The line that the held chunks end (the buffer holds its start), joined in one copy;
        else None with the chunks still held, or, for whatever the general path must judge
        (a line too long, blank, or cut by EOF), None with them put back into the buffer."""
        held = self._held
        for k in range(self._held_scan, len(held)):
            newline = held[k].find(b"\n")
            if newline >= 0:
                break
        else:
            self._held_scan = len(held)
            if self._eof or len(self._buf) + self._held_size > self.max_frame_size:
                self._unhold()
            return None
        buf = self._buf
        views = [memoryview(buf), *[memoryview(c) for c in held[:k]], memoryview(held[k])[:newline]]
        if newline:
            if held[k][newline - 1] == _CR:
                views[-1] = views[-1][:-1]
        elif views[-2][-1] == _CR:  # (the newline opens its chunk: the CR ends the one before)
            views[-2] = views[-2][:-1]
        size = sum(map(len, views))
        if size > self.max_frame_size or buf[0] in _BLANK_CODES:
            del views
            self._unhold()
            return None
        frame = b"".join(views)
        del views  # (releases the buffer, replaced below)
        self._base += len(buf) + self._held_size - len(held[k]) + newline + 1
        for later in held[k + 1 :]:
            self._base -= len(later)
        rest = bytearray(memoryview(held[k])[newline + 1 :])
        for later in held[k + 1 :]:
            rest += later
        self._buf = rest
        self._start = self._scan = 0
        held.clear()
        self._held_size = self._held_scan = 0
        return frame

    def _unhold(self) -> None:
        buf = self._buf
        for chunk in self._held:
            buf += chunk
        self._held.clear()
        self._held_size = self._held_scan = 0

    def _too_long(self, start: int) -> FramingError:
        # The excerpt length must not depend on how the stream was chunked: at least
        # max_frame_size + 1 bytes of the line are always available here.
        keep = min(EXCERPT_LIMIT, self.max_frame_size)
        return FramingError(
            f"frame exceeds {self.max_frame_size} bytes",
            fatal=False,
            offset=self._base + start,
            excerpt=self._buf[start : start + keep],
        )

    def encode(self, payload: bytes) -> bytes:
        """Return ``payload + b"\\n"``.

        Raises ValueError when the peer could not read the payload back unchanged: it contains
        a newline (the MCP stdio transport forbids embedded newlines), ends with a CR (a reader
        strips it), or is empty or blank (a reader skips it).
        """
        self._check(payload)
        return payload + b"\n"

    def encode_parts(self, payload: bytes) -> tuple[bytes, bytes, bytes]:
        """``(b"", payload, b"\\n")`` after the checks of :meth:`encode`."""
        self._check(payload)
        return b"", payload, b"\n"

    def encode_around(self, parts: Sequence[bytes | bytearray]) -> tuple[bytes, bytes]:
        """``(b"", b"\\n")`` after the checks of :meth:`encode` on the payload ``parts``
        make, part by part (none is joined)."""
        for part in parts:
            if part.find(b"\n") >= 0:
                raise ValueError("an NDJSON payload must not contain b'\\n'")
        filled = [part for part in parts if part]
        if filled and filled[-1].endswith(b"\r"):
            raise ValueError("an NDJSON payload must not end with b'\\r'")
        if all(_is_blank(part) for part in filled):
            raise ValueError("an NDJSON payload must not be empty or whitespace-only")
        return b"", b"\n"

    @staticmethod
    def _check(payload: bytes) -> None:
        if payload.find(b"\n") >= 0:  # (cheaper than ``in`` on bytes)
            raise ValueError("an NDJSON payload must not contain b'\\n'")
        if payload.endswith(b"\r"):
            raise ValueError("an NDJSON payload must not end with b'\\r'")
        if _is_blank(payload):
            raise ValueError("an NDJSON payload must not be empty or whitespace-only")
