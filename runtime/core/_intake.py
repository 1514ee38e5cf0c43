"""The intake: the frames of one connection's channel, and every way reading them ends.

The reader's generations take their frames here (``next``), one at a time and one generation
at a time. This is the only place a connection waits for input, so it is also where the
replies the reader held back are written (``Outbox.release``): a burst of pipelined requests
gets one write, and a lone request its answer at once.

What the channel raises instead of a frame is settled here:

- a bad frame (``FramingError``) is answered with its JSON-RPC error under id null
  (JSON-RPC 2.0 section 5: its id could not be read) and logged with a short escaped
  excerpt; reading goes on unless the framer says the stream is lost (``fatal``);
- the end of input, a fatal framing error, a read or idle timeout, a peer gone, and
  shutdown (``stopping``, seen before each wait) end reading, with the reason in
  ``end_reason`` ("eof", "framing-error", "read-timeout", "idle-timeout", "peer-gone",
  "shutdown").

A channel read only while it has input (``MessageChannel.receive_nowait``) is never waited
on: with nothing to read, reading parks (``parked``) and no task is left waiting; whoever
feeds the channel resumes the connection, which starts a generation again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from ..framing import FramingError, escape_excerpt
from ..protocol import DecodedFrame, error_reply, framing_error
from ._assembler import Assembler
from ._channel import MessageChannel
from ._outbox import Outbox
from ._session import Session

__all__ = ["Intake"]

log = logging.getLogger("mcp_runtime.connection")


class Intake:
    """Reads one channel for the reader. ``stopping`` (shutdown) is seen before each wait for
    input; ``waiting`` is True while a wait for input may be interrupted by it (the reader
    cancels its generation's scope then, and only then). ``on_settle()``, when set, is called
    when reading parks or ends."""

    __slots__ = (
        "_assembler",
        "_channel",
        "_ended",
        "_id",
        "_out",
        "_ready_frame",
        "_receive_nowait",
        "_session",
        "end_reason",
        "ended",
        "on_settle",
        "parked",
        "stopping",
        "waiting",
    )

    def __init__(
        self,
        channel: MessageChannel,
        outbox: Outbox,
        assembler: Assembler,
        session: Session,
        connection_id: str,
    ) -> None:
        self._channel = channel
        # Channels that can tell a ready frame from one that needs a read (FramedChannel)
        # let the reader coalesce the replies to pipelined requests; others flush each one.
        self._ready_frame: Callable[[], bytes | None] | None = getattr(channel, "ready_frame", None)
        # Channels read only while they have input: with none the generation ends instead of
        # parking a task, so an idle HTTP session holds no task.
        self._receive_nowait: Callable[[], bytes | DecodedFrame] | None = getattr(
            channel, "receive_nowait", None
        )
        self._out = outbox
        self._assembler = assembler
        self._session = session
        self._id = connection_id
        #: True once reading has ended; ``end_reason`` says why. ``wait_ended`` waits for it
        #: (its event is made by the first wait: an idle session's intake never needs one).
        self.ended = False
        self._ended: trio.Event | None = None
        self.end_reason = "running"
        #: Nothing to read on a ``receive_nowait`` channel: no generation reads until the
        #: reader resumes.
        self.parked = False
        self.on_settle: Callable[[], None] | None = None
        self.stopping = False
        self.waiting = False

    async def wait_ended(self) -> None:
        """Wait until reading has ended."""
        if not self.ended:
            if self._ended is None:
                self._ended = trio.Event()
            await self._ended.wait()

    async def next(self) -> bytes | DecodedFrame | None:
        """The next frame (as the channel gives it: bytes, or what its transport decoded
        and judged already), or None once reading has ended (``end_reason`` says why) or
        parked. Replies held back are written before waiting for input."""
        ready_frame = self._ready_frame
        receive_nowait = self._receive_nowait
        while True:
            try:
                if receive_nowait is not None:
                    return await self._next_or_park(receive_nowait)
                if ready_frame is not None:
                    frame = ready_frame()
                    if frame is not None:
                        return frame
                await self._out.release()
                if self.stopping:
                    await self.end("shutdown")
                    return None
                self.waiting = True
                try:
                    return await self._channel.receive()
                finally:
                    self.waiting = False
            except trio.EndOfChannel:
                await self.end("eof")
                return None
            except FramingError as exc:
                log.warning(
                    "framing error conn=%s offset=%d fatal=%s reason=%r excerpt=%s",
                    self._id,
                    exc.offset,
                    exc.fatal,
                    exc.reason,
                    escape_excerpt(exc.excerpt),
                )
                error = framing_error(exc.reason, oversized="exceeds" in exc.reason)
                self._assembler.observe(error, self._session, self._id)
                await self._out.answer(error_reply(error))
                if exc.fatal:
                    await self.end("framing-error")
                    return None
            except trio.TooSlowError as exc:
                reason = str(exc) or "read-timeout"
                log.warning("closing conn=%s reason=%s", self._id, reason)
                await self.end(reason)
                return None
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                log.info("closing conn=%s reason=read-failed error=%r", self._id, exc)
                await self.end("peer-gone")
                return None

    async def _next_or_park(
        self, receive_nowait: Callable[[], bytes | DecodedFrame]
    ) -> bytes | DecodedFrame | None:
        """``next`` of a channel read only while it has input: the next frame, or None once
        reading ended or parked. ``trio.EndOfChannel`` and the other errors of ``receive``
        propagate to ``next``."""
        if not self.stopping:
            try:
                return receive_nowait()
            except trio.WouldBlock:
                pass
        await self._out.release()
        if self.stopping:
            await self.end("shutdown")
            return None
        try:
            return receive_nowait()  # (fed while the release waited)
        except trio.WouldBlock:
            self.parked = True
            if self.on_settle is not None:
                self.on_settle()
            return None

    async def end(self, reason: str) -> None:
        """Reading ends for ``reason``: what the reader held back is written first."""
        self.end_reason = reason
        try:
            await self._out.release()
        finally:
            self.ended = True
            if self._ended is not None:
                self._ended.set()
            if self.on_settle is not None:
                self.on_settle()
