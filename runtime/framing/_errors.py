"""The one exception the framing layer raises, and a log-safe rendering of offending bytes.

DESIGN.md "Framing resilience": framing errors are logged with the byte offset and a short
escaped excerpt (first ~200 bytes) of the offending data, never a whole body.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXCERPT_LIMIT", "FramingError", "escape_excerpt"]

#: Bytes of offending data kept on an error and shown in logs (DESIGN.md "Framing resilience":
#: "a short escaped excerpt of the offending bytes (first ~200)").
EXCERPT_LIMIT: Final = 200


class FramingError(Exception):
    """A byte stream that does not frame.

    ``reason`` names the problem; ``fatal`` says the stream cannot be resynchronised and the
    connection must close (when False the framer has already skipped the bad frame and
    ``next_frame()`` may be called again); ``offset`` is the stream offset, counted from the first
    byte ever fed, where the offending frame or header block starts; ``excerpt`` holds at most
    :data:`EXCERPT_LIMIT` bytes of the offending data, for logs (render it with
    :func:`escape_excerpt`).
    """

    reason: str
    fatal: bool
    offset: int
    excerpt: bytes

    def __init__(
        self, reason: str, *, fatal: bool, offset: int, excerpt: bytes | bytearray = b""
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fatal = fatal
        self.offset = offset
        self.excerpt = bytes(excerpt[:EXCERPT_LIMIT])

    def __str__(self) -> str:
        return self.reason

    def __repr__(self) -> str:
        return (
            f"FramingError({self.reason!r}, fatal={self.fatal}, offset={self.offset}, "
            f"excerpt={self.excerpt!r})"
        )


def _escape_byte(value: int) -> str:
    if value == 0x5C:  # the backslash itself, so that escapes stay unambiguous
        return "\\\\"
    if 0x20 <= value < 0x7F:
        return chr(value)
    return {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(value, f"\\x{value:02x}")


# One precomputed rendering per byte value: escaping is a table lookup per byte.
_ESCAPES: Final = tuple(_escape_byte(value) for value in range(256))


def escape_excerpt(data: bytes | bytearray, limit: int = EXCERPT_LIMIT) -> str:
    """Render at most ``limit`` bytes of ``data`` as one printable ASCII line for logs.

    Printable ASCII passes through; backslash, tab, CR and LF get ``repr``-style escapes and every
    other byte (controls, DEL, non-ASCII) becomes ``\\xNN``, so the result never contains a line
    break or a terminal control sequence. Quotes are not escaped: a log formatter that wraps the
    text in quotes should quote it itself (for example with ``json.dumps``). When ``data`` is
    longer than ``limit`` the result ends with ``...``.
    """
    if limit < 0:
        raise ValueError("limit must be >= 0")
    text = "".join([_ESCAPES[value] for value in data[:limit]])
    return text + "..." if len(data) > limit else text
