"""Server-sent events: encoder and sans-IO decoder.

WHATWG HTML Living Standard, section 9.2 "Server-sent events", subsections "Parsing an event
stream" and "Interpreting an event stream". The MCP Streamable HTTP transport (2025-03-26 and
later) and the legacy HTTP+SSE transport (2024-11-05) carry JSON-RPC messages as SSE ``data``;
event ids let a client resume with ``Last-Event-ID``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, NoReturn

from ._errors import EXCERPT_LIMIT, FramingError
from ._protocol import DEFAULT_MAX_FRAME_SIZE

__all__ = ["SSEDecoder", "SSEEvent", "encode_sse_comment", "encode_sse_event"]

# "end-of-line = ( cr lf / cr / lf )" in the stream grammar.
_EOL: Final = re.compile(rb"[\r\n]")
_SPLIT_LINES: Final = re.compile(r"\r\n|\r|\n")
_BOM: Final = b"\xef\xbb\xbf"  # the UTF-8 decode algorithm strips one leading BOM
_LF: Final = 0x0A
_CR: Final = 0x0D
# A reconnection time of more than 18 digits (over 31 million years in ms) is ignored rather than
# handed to int(), whose digit limit would raise.
_MAX_RETRY_DIGITS: Final = 18


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event.

    ``event`` is the event type ("message" when the stream named none); ``data`` the data lines
    joined with ``\\n``; ``id`` the last event id in force when the event was dispatched (it
    persists across events; "" when none was ever set); ``retry`` the reconnection time in
    milliseconds set by a ``retry`` field inside this event's block, else None (the value in force
    is :attr:`SSEDecoder.retry`).
    """

    event: str
    data: str
    id: str
    retry: int | None = None


def _check_field(name: str, value: str, forbidden: str) -> None:
    for char in forbidden:
        if char in value:
            raise ValueError(f"SSE {name} must not contain {char!r}")


def encode_sse_event(
    data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None
) -> bytes:
    """Encode one event, UTF-8, fields in the order ``event``, ``id``, ``retry``, ``data``.

    Every line break in ``data`` (CRLF, CR or LF alike, as the parser sees them) starts a new
    ``data:`` line, so a decoder returns the data with each break turned into ``\\n``. Raises
    ValueError when ``event`` or ``id`` holds CR or LF (they would end the field early), when
    ``id`` holds NUL (the parser ignores such an id) or when ``retry`` is negative;
    UnicodeEncodeError (a ValueError) for a lone surrogate.
    """
    parts: list[str] = []
    if event is not None:
        _check_field("event", event, "\r\n")
        parts.append(f"event: {event}\n")
    if id is not None:
        _check_field("id", id, "\r\n\0")
        parts.append(f"id: {id}\n")
    if retry is not None:
        if retry < 0:
            raise ValueError("SSE retry must be >= 0")
        parts.append(f"retry: {int(retry)}\n")
    for line in _SPLIT_LINES.split(data):
        parts.append(f"data: {line}\n")
    parts.append("\n")
    return "".join(parts).encode("utf-8")


def encode_sse_comment(text: str = "") -> bytes:
    """Encode a comment block (``: text`` then a blank line): a keep-alive that parsers ignore.

    Each line of a multi-line ``text`` becomes its own ``:`` line.
    """
    lines = "".join(f": {line}\n" if line else ":\n" for line in _SPLIT_LINES.split(text))
    return (lines + "\n").encode("utf-8")


class SSEDecoder:
    """Parse an event stream into :class:`SSEEvent` objects (WHATWG "Parsing an event stream").

    Same shape as a :class:`Framer`: ``feed(data)`` (``b""`` is EOF), ``next_event()`` (alias
    ``next_frame()``) returns an event or None, ``finished``. Per the standard, an event block
    still open at EOF is discarded silently, and a block without ``data`` lines dispatches
    nothing.

    One event block (its lines' bytes, each counted with one line ending) is capped at
    ``max_frame_size``: past it a non-fatal FramingError ("event exceeds N bytes") is raised once
    and the rest of that block is discarded, up to its blank line, without being buffered. There
    are no fatal errors.
    """

    max_frame_size: int

    def __init__(
        self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, last_event_id: str = ""
    ) -> None:
        if max_frame_size < 1:
            raise ValueError("max_frame_size must be at least 1")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._base = 0  # stream offset of _buf[0]
        self._pos = 0  # index in _buf of the next line
        self._scan = 0  # index in _buf up to which no CR or LF exists (never rescanned)
        self._block: int | None = None  # index in _buf of the current block's first line
        self._block_size = 0  # bytes of the current block's lines, one per line ending
        self._bom_checked = False
        self._skip_lf = False  # the last line ended in CR: a following LF belongs to it
        self._discarding = False  # the current block overflowed: skip to its blank line
        self._mid_line = False  # discarding, and part of a line was already dropped
        self._dropped = 0  # bytes of the discarded block dropped so far
        self._data: list[str] = []
        self._event_type = ""
        self._block_retry: int | None = None
        self._last_event_id = last_event_id
        self._retry: int | None = None
        self._eof = False
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def buffered(self) -> int:
        """Bytes of an event still open (a partial line, or a block not yet dispatched)."""
        open_from = self._pos if self._block is None else self._block
        return len(self._buf) - open_from + self._dropped

    @property
    def last_event_id(self) -> str:
        """The last event id buffer: what a reconnecting client sends as ``Last-Event-ID``."""
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds last set by the stream, or None."""
        return self._retry

    def feed(self, data: bytes | bytearray) -> None:
        if self._eof:
            raise RuntimeError("feed() called after EOF")
        if not data:
            self._eof = True
            return
        self._buf += data

    def next_event(self) -> SSEEvent | None:
        """Return the next dispatched event, or None when more data is needed (or the stream
        ended). Raises a non-fatal FramingError for an oversized event block."""
        buf = self._buf
        if not self._bom_checked:
            if len(buf) < len(_BOM) and _BOM.startswith(buf) and not self._eof:
                return None
            self._bom_checked = True
            if buf.startswith(_BOM):
                self._pos = len(_BOM)
        while True:
            pos = self._pos
            if self._skip_lf and pos < len(buf):
                self._skip_lf = False
                if buf[pos] == _LF:
                    pos = self._pos = pos + 1
            match = _EOL.search(buf, max(pos, self._scan))
            if match is None:
                self._scan = len(buf)
                break
            eol = match.start()
            self._skip_lf = buf[eol] == _CR
            self._pos = self._scan = eol + 1
            if self._discarding:
                if eol == pos and not self._mid_line:
                    self._discarding = False  # the blank line that ends the dropped block
                    self._dropped = 0
                    self._reset_block()
                else:
                    self._dropped += eol + 1 - pos
                self._mid_line = False
                continue
            if eol == pos:
                event = self._dispatch()
                if event is not None:
                    return event
                continue
            if self._block is None:
                self._block = pos
            size = self._block_size + (eol - pos) + 1
            if size > self.max_frame_size:
                self._overflow()
            self._block_size = size
            self._field(bytes(buf[pos:eol]))

        # No complete line left. Keep the open block's lines (for an error excerpt; they are
        # bounded by the cap), drop the rest, then check the unterminated tail.
        keep = self._pos if self._block is None else self._block
        if keep:
            del buf[:keep]  # amortised O(1): bytearray drops a prefix by moving a pointer
            self._base += keep
            self._pos -= keep
            self._scan -= keep
            if self._block is not None:
                self._block = 0
        pending = len(buf) - self._pos
        if self._discarding:
            if pending:
                self._mid_line = True
                self._dropped += pending
                self._base += len(buf)
                buf.clear()
                self._pos = self._scan = 0
        elif pending and self._block_size + pending >= self.max_frame_size:
            # With its line ending the block will exceed the cap: decide now, before buffering
            # more, so that every chunking of the stream raises the same error.
            if self._block is None:
                self._block = self._pos
            self._overflow(mid_line=True)
        if self._eof:
            # "Once the end of the file is reached, any pending data must be discarded."
            self._finished = True
            self._dropped = 0
            self._reset_block()
            self._base += len(buf)
            buf.clear()
            self._pos = self._scan = 0
        return None

    next_frame = next_event

    def _overflow(self, *, mid_line: bool = False) -> NoReturn:
        block = self._block if self._block is not None else self._pos
        keep = min(EXCERPT_LIMIT, self.max_frame_size)
        error = FramingError(
            f"event exceeds {self.max_frame_size} bytes",
            fatal=False,
            offset=self._base + block,
            excerpt=bytes(self._buf[block : block + keep]),
        )
        self._reset_block()
        self._discarding = True
        self._dropped = self._pos - block
        if mid_line:
            self._dropped = len(self._buf) - block
            self._mid_line = True
            self._base += len(self._buf)
            self._buf.clear()
            self._pos = self._scan = 0
        raise error

    def _reset_block(self) -> None:
        self._data.clear()
        self._event_type = ""
        self._block_retry = None
        self._block = None
        self._block_size = 0

    def _dispatch(self) -> SSEEvent | None:
        # "Dispatch the event": nothing when the data buffer is empty; otherwise drop the one
        # trailing LF, i.e. join the data lines with LF.
        event = None
        if self._data:
            event = SSEEvent(
                self._event_type or "message",
                "\n".join(self._data),
                self._last_event_id,
                self._block_retry,
            )
        self._reset_block()
        return event

    def _field(self, line: bytes) -> None:
        # "Interpreting an event stream": a leading colon is a comment; otherwise split at the
        # first colon (a line without one is a field name with an empty value) and drop one
        # space after the colon. Unknown fields are ignored.
        if line[0] == 0x3A:
            return
        name, _, raw = line.partition(b":")
        if raw[:1] == b" ":
            raw = raw[1:]
        if name == b"data":
            self._data.append(raw.decode("utf-8", "replace"))
        elif name == b"event":
            self._event_type = raw.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in raw:  # an id containing NULL is ignored
                self._last_event_id = raw.decode("utf-8", "replace")
        elif name == b"retry" and raw.isdigit():  # ASCII digits only
            digits = raw.lstrip(b"0") or b"0"
            if len(digits) <= _MAX_RETRY_DIGITS:
                self._retry = self._block_retry = int(digits)
