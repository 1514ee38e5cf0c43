"""The interface every byte framer offers to the transports, and the default frame cap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

__all__ = ["DEFAULT_MAX_FRAME_SIZE", "Framer"]

#: Largest frame accepted by default, in bytes. Matches ``runtime.core.Limits.max_frame_size``:
#: 4 MiB holds any realistic MCP message (base64 images included) while bounding the memory one
#: connection can pin (DESIGN.md "Bounded everything").
DEFAULT_MAX_FRAME_SIZE: Final = 4 * 1024 * 1024


class Framer(Protocol):
    """A sans-IO framer: bytes in, whole frames out. No I/O, no clock, no trio.

    The driver feeds whatever ``receive_some`` returned, then calls :meth:`next_frame` until it
    returns None. Framers are plain objects; they never block and are not thread-safe.
    """

    #: Largest frame body accepted, in bytes; longer frames raise a non-fatal FramingError.
    max_frame_size: int

    def feed(self, data: bytes | bytearray) -> None:
        """Append received bytes. ``feed(b"")`` means EOF: no more bytes will come.

        Raises RuntimeError when called after EOF was fed.
        """
        ...

    def next_frame(self) -> bytes | None:
        """Return the next whole frame, or None when more data is needed or the stream ended.

        Raises FramingError. When ``err.fatal`` is False the bad frame was already skipped and
        the caller may call ``next_frame()`` again; after a fatal error every later call raises
        the same error (sticky).
        """
        ...

    @property
    def finished(self) -> bool:
        """True once EOF was fed and every frame was returned: a clean end of stream."""
        ...

    @property
    def buffered(self) -> int:
        """Bytes received that no returned frame, skipped blank line or finished skip accounts
        for yet (bytes of an oversized frame discarded so far included). Non-zero means a frame
        is partly received (or whole but not yet returned): the driver applies its read timeout
        rather than its idle timeout."""
        ...

    def encode(self, payload: bytes) -> bytes:
        """Frame one outgoing message. Raises ValueError for a payload the peer could not read
        back unchanged."""
        ...

    def encode_parts(self, payload: bytes) -> tuple[bytes, bytes, bytes]:
        """:meth:`encode` as (head, payload, tail), ``payload`` itself uncopied: a driver
        writes a big message as three writes rather than building a copy of it with its
        frame around (a 16 MiB reply: one 16 MiB copy less). Same ValueError as ``encode``."""
        ...

    def encode_around(self, parts: Sequence[bytes | bytearray]) -> tuple[bytes, bytes]:
        """The (head, tail) of the frame of one payload given as ``parts`` in order, which a
        driver writes between them uncopied (a reply whose long text was encoded apart: the
        text is never joined to its envelope). Same ValueError as ``encode`` for the payload
        the parts make."""
        ...
