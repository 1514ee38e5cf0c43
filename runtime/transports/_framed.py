"""A message channel over a byte stream and a sans-IO framer (stdio, TCP, Unix sockets)."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Sequence
from typing import Final, Literal

import trio

from ..framing import Framer, FramingError, NdjsonFramer
from ..protocol import Pieces
from ._fdio import FdIO

__all__ = ["FramedChannel", "FramingName", "make_framer"]

FramingName = Literal["ndjson", "content-length"]
_RECEIVE_SIZE: Final = 64 * 1024
#: Read size while a frame is partly received and at least _RECEIVE_SIZE of it is buffered
#: already: a big message (a 1 MiB tools/call argument) then comes in a few reads rather than
#: one event-loop trip per 64 KiB (17 for 1 MiB, each a feed, a newline search and a
#: wait_readable). Small messages keep the small buffer (``os.read`` allocates the size asked).
_BIG_RECEIVE_SIZE: Final = 1024 * 1024
#: Except from a pipe (``FdIO``: stdio): a read there gives at most the pipe's capacity
#: (64 KiB on Linux by default), and asking for 1 MiB only allocates a 1 MiB buffer per read,
#: which malloc maps and unmaps each time: page faults in the server's kernel time
#: (benchmarks/README.md, "Reads of a pipe's capacity"; glibc's default thresholds, which an
#: embedding program keeps, while ``mcp-runtime serve`` fixes them: runtime/cli/_heap.py).
#: So a pipe's big reads are its capacity (``big_receive_size``: stdio grows its pipes).
#: A single outgoing message longer than this is written as its frame's parts (head, the
#: payload itself, tail) instead of one joined copy (framer.encode_parts).
_WRITE_PARTS_OVER: Final = 64 * 1024


def make_framer(framing: FramingName, max_frame_size: int) -> Framer:
    if framing == "ndjson":
        return NdjsonFramer(max_frame_size=max_frame_size)
    if framing == "content-length":
        # Imported here: an NDJSON channel never needs it (start-up time).
        from ..framing import ContentLengthFramer

        return ContentLengthFramer(max_frame_size=max_frame_size)
    raise ValueError(f"unknown framing {framing!r} (expected 'ndjson' or 'content-length')")


class FramedChannel:
    """Implements ``runtime.core.MessageChannel`` on trio streams.

    ``receive`` raises ``trio.TooSlowError("read-timeout")`` when a partly received frame
    is not complete ``read_timeout`` seconds after its first byte (however steadily it
    trickles, or a slow peer would hold the connection for ever), and
    ``trio.TooSlowError("idle-timeout")`` when no byte arrives for ``idle_timeout`` seconds
    between frames (None disables either).
    ``big_receive_size``: the read size once 64 KiB of a frame are buffered (default 1 MiB,
    64 KiB from an ``FdIO``, whose pipe may hold no more: stdio passes its pipe's capacity).
    Framing errors propagate as ``FramingError`` from the framer (see its ``fatal`` flag).
    """

    __slots__ = (
        "_big_read",
        "_direct",
        "_eof",
        "_framer",
        "_idle_timeout",
        "_partial",
        "_partial_since",
        "_read_timeout",
        "_receive_stream",
        "_send_stream",
    )

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        framer: Framer,
        *,
        read_timeout: float | None = None,
        idle_timeout: float | None = None,
        big_receive_size: int | None = None,
    ) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._framer = framer
        self._read_timeout = math.inf if read_timeout is None else read_timeout
        self._idle_timeout = math.inf if idle_timeout is None else idle_timeout
        self._eof = False
        self._partial = False
        self._partial_since = math.inf  # when the partly received frame began
        # A stream that writes without waiting when it can (``FdIO``: stdio) lets
        # ``send_now`` skip the outbox's scope and the scheduler for a write that fits.
        self._direct = send_stream if isinstance(send_stream, FdIO) else None
        if big_receive_size is None:
            pipe = isinstance(receive_stream, FdIO) and receive_stream.pipe
            big_receive_size = _RECEIVE_SIZE if pipe else _BIG_RECEIVE_SIZE
        self._big_read = max(_RECEIVE_SIZE, big_receive_size)

    @classmethod
    def over_socket(
        cls,
        stream: trio.SocketStream,
        framer: Framer,
        *,
        read_timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> FramedChannel:
        """A channel that owns ``stream``'s socket (detached: ``stream`` is spent) and reads
        and writes its descriptor directly (``FdIO``), as stdio does: an idle connection
        then waits in one frame over ``wait_readable``, not in trio's socket layers, which
        kept frames, a context manager and conflict detectors per idle TCP connection
        (benchmarks/README.md, "Memory per idle connection"), and a reply that fits the
        socket buffer is written
        without a pass through the scheduler. ``stream`` has set TCP_NODELAY already."""
        io = FdIO(stream.socket.detach(), pipe=False)
        return cls(io, io, framer, read_timeout=read_timeout, idle_timeout=idle_timeout)

    def _note_partial(self) -> None:
        if self._framer.buffered:
            if not self._partial:
                self._partial_since = trio.current_time()
                self._partial = True
        else:
            self._partial = False

    def ready_frame(self) -> bytes | None:
        """The next frame when it can be had without reading; else None.

        Never awaits. Raises what ``receive`` would raise for what is already buffered
        (``FramingError``, ``trio.EndOfChannel`` after EOF). The supervisor uses it to answer a
        burst of pipelined requests in one coalesced write: it holds replies back while frames
        are ready and flushes just before a read would wait. A partly received frame counts
        as not ready, so its missing bytes never wait behind unwritten replies. (None rather
        than trio's ``WouldBlock``: the reader asks once per wake-up, and a lone request, or
        its refusal under overload, always finds nothing, and raising and catching that
        costs a refusal measurably: benchmarks/README.md, "ready_frame returns None".)
        """
        frame = self._framer.next_frame()
        if frame is None:
            if self._eof:
                raise trio.EndOfChannel
            return None
        self._note_partial()
        return frame

    async def receive(self) -> bytes:
        framer = self._framer
        frame = framer.next_frame()
        while frame is None:
            if self._eof:
                raise trio.EndOfChannel
            # ``_partial`` is current here: noted after the last frame and after a read that
            # completed none (not after every read: a read that completes a frame, the usual
            # case, would ask the clock for a partial frame that is gone a line later).
            if self._partial:
                timeout = self._partial_since + self._read_timeout - trio.current_time()
                size = self._big_read if framer.buffered >= _RECEIVE_SIZE else _RECEIVE_SIZE
            else:
                timeout = self._idle_timeout
                size = _RECEIVE_SIZE
            if timeout == math.inf:
                data = await self._receive_stream.receive_some(size)
            else:
                with trio.move_on_after(timeout) as scope:
                    data = await self._receive_stream.receive_some(size)
                if scope.cancelled_caught:
                    raise trio.TooSlowError("read-timeout" if self._partial else "idle-timeout")
            if not data:
                self._eof = True
            framer.feed(data)
            try:
                frame = framer.next_frame()
            except FramingError:
                self._note_partial()  # (an over-long line being dropped is still partial)
                raise
            if frame is None:
                self._note_partial()
        self._note_partial()
        return frame

    #: A reply may be given as ``runtime.protocol.Pieces`` (the reader asks for them only
    #: from a channel that says so): a lone one is written as its parts, uncopied, between
    #: its frame's head and tail; among other messages it is joined (a long text's bytes
    #: are never copied into a whole: benchmarks/README.md, "Long texts as pieces").
    takes_pieces: Final = True

    async def send(self, messages: Sequence[tuple[bytes | Pieces, object]]) -> None:
        """Write messages (``(payload, related_id)`` pairs; the id is ignored here)."""
        encode = self._framer.encode
        if len(messages) == 1:
            payload = messages[0][0]
            if type(payload) is Pieces:
                head, tail = self._framer.encode_around(payload.parts)
                for part in (head, *payload.parts, tail):
                    if part:
                        await self._send_stream.send_all(part)
                return
            if len(payload) > _WRITE_PARTS_OVER:
                for part in self._framer.encode_parts(payload):
                    if part:
                        await self._send_stream.send_all(part)
                return
            await self._send_stream.send_all(encode(payload))
        else:
            await self._send_stream.send_all(
                b"".join([encode(m.join() if type(m) is Pieces else m) for m, _ in messages])
            )

    def send_now(self, messages: Sequence[tuple[bytes | Pieces, object]]) -> Awaitable[None] | None:
        """Write ``messages`` now if the stream takes them without waiting: None when it
        did, else what is left to await (all of ``send`` for a stream that always waits).
        The outbox bounds only that wait with its scope (``runtime.core`` Outbox)."""
        direct = self._direct
        if direct is None or (len(messages) == 1 and len(messages[0][0]) > _WRITE_PARTS_OVER):
            return self.send(messages)  # (a big message goes out as its parts, uncopied)
        encode = self._framer.encode
        if len(messages) == 1:
            # (Pieces are over _WRITE_PARTS_OVER, sent above: this one is bytes.)
            data = encode(messages[0][0])  # type: ignore[arg-type]
        else:
            data = b"".join([encode(m.join() if type(m) is Pieces else m) for m, _ in messages])
        rest = direct.write_now(data)
        return None if rest is None else direct.write_rest(rest)

    async def aclose(self) -> None:
        try:
            await self._send_stream.aclose()
        finally:
            if self._receive_stream is not self._send_stream:  # type: ignore[comparison-overlap]
                await self._receive_stream.aclose()
