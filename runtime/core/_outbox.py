"""One connection's outgoing messages: queued, coalesced, written without a writer task.

Messages are appended to a queue; whichever task finds no write in progress becomes the
writer and writes everything queued in one ``channel.send`` (no writer task, no channel
hop: a reply usually leaves in the task that made it). The reader holds its replies back
(``answer``) until it would wait for input, so a read that brought 64 requests answers
them in one write.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from ..protocol import Pieces, RequestId
from ._channel import MessageChannel, Outgoing
from ._limits import Limits

__all__ = ["Outbox"]

log = logging.getLogger("mcp_runtime.connection")

#: Bytes of replies the reader holds back while more input is ready: one write per burst of
#: pipelined requests, but bounded (a pipe holds 64 KiB; memory stays small).
_HOLD_BYTES: Final = 64 * 1024


class Outbox:
    """Writes one connection's output; ``on_break(reason)`` is called once the channel can
    take no more (write timeout, peer gone), after which output is dropped."""

    __slots__ = (
        "_channel",
        "_held",
        "_id",
        "_limits",
        "_on_break",
        "_queue",
        "_room",
        "_send_now",
        "_writing",
        "closed",
    )

    def __init__(
        self,
        channel: MessageChannel,
        limits: Limits,
        connection_id: str,
        on_break: Callable[[str], None],
    ) -> None:
        self._channel = channel
        # Optional (``MessageChannel``): write at once what fits, return the rest to await.
        self._send_now: Callable[[list[Outgoing]], Awaitable[None] | None] | None = getattr(
            channel, "send_now", None
        )
        self._limits = limits
        self._id = connection_id
        self._on_break = on_break
        # A reply may be Pieces (runtime.protocol) only for a channel that takes them (its
        # ``takes_pieces``: the reader asks the dispatcher for them only then).
        self._queue: list[Outgoing] = []
        self._writing = False
        self._room: trio.Event | None = None
        # Bytes of replies the reader queued since it last wrote.
        self._held = 0
        #: Output is dropped from now on (the connection is closing or broke).
        self.closed = False

    async def send(self, data: bytes | Pieces, related: RequestId | None = None) -> None:
        """Queue one message; write it now unless another task is writing already.

        Waits only while more than ``limits.write_queue_size`` messages are queued behind a
        write in progress (backpressure). Output on a closing connection is dropped.
        """
        if self.closed:
            log.debug("dropping output on a closing connection conn=%s", self._id)
            return
        self._queue.append((data, related))  # type: ignore[arg-type]  # (see _queue)
        await self._push()

    def send_nowait(
        self,
        data: bytes,
        related: RequestId | None,
        spawn: Callable[[Callable[[], Awaitable[None]]], None],
    ) -> bool:
        """Write one message in this step, without the caller's task waiting: True when it
        was written (or dropped on a closing connection); False, with nothing done, when it
        must queue behind a write in progress, the channel would queue it (``ready``) or
        writes only by waiting.

        For a publisher that delivers to many connections from one task (one change to
        1,000 subscribers without a task switch per subscriber). What the channel
        does not take at once is finished by a task ``spawn``-ed for it, as the writer:
        later messages queue behind it, so nothing is reordered, and the write timeout
        bounds it as any write (``_flush``).
        """
        if self.closed:
            return True
        if self._writing or self._queue or self._send_now is None:
            return False
        ready = getattr(self._channel, "ready", None)  # (MessageChannel: optional)
        if ready is not None and not ready(related):
            return False
        self._writing = True
        try:
            pending = self._send_now([(data, related)])
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self._writing = False
            log.info("closing conn=%s reason=write-failed error=%r", self._id, exc)
            self._break("peer-gone")
            return True
        if pending is None:
            self._writing = False
            return True
        try:
            spawn(lambda: self._finish(pending))
        except RuntimeError:  # the connection stopped serving: nobody can finish it
            close = getattr(pending, "close", None)
            if close is not None:
                close()
            self._writing = False
            self._break("closing")
        return True

    async def _finish(self, pending: Awaitable[None]) -> None:
        """The rest of a ``send_nowait``, then whatever queued behind it (we are the writer)."""
        try:
            await self._complete(pending)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.info("closing conn=%s reason=write-failed error=%r", self._id, exc)
            self._break("peer-gone")
        finally:
            self._writing = False
        if self._queue and not self.closed:
            await self._flush()

    async def answer(self, data: bytes | Pieces, related: RequestId | None = None) -> None:
        """The reader's send: queue a reply and write it later, together with the replies to
        the frames that are already buffered (the reader calls ``release`` before it waits
        for input; ``_HOLD_BYTES`` held are written at once)."""
        self.hold(data, related)
        if self._held >= _HOLD_BYTES:
            await self.release()

    def hold(self, data: bytes | Pieces, related: RequestId | None = None) -> None:
        if self.closed:
            log.debug("dropping output on a closing connection conn=%s", self._id)
            return
        self._queue.append((data, related))  # type: ignore[arg-type]  # (see _queue)
        self._held += len(data)

    async def release(self) -> None:
        """Write what the reader held back (or leave it to the write in progress)."""
        self._held = 0
        if self._queue:
            # (straight to the write when none is in progress: the reader releases once per
            # wake-up, and a lone request's reply, or its refusal, always finds none)
            await (self._push() if self._writing else self._flush())

    async def close(self) -> None:
        """Write what is still queued (unless a write is in progress), then drop output."""
        if self._queue and not self._writing:
            await self._flush()
        self.closed = True

    async def _push(self) -> None:
        if not self._writing:
            await self._flush()
            return
        while self._writing and len(self._queue) > self._limits.write_queue_size:
            if self._room is None:
                self._room = trio.Event()
            await self._room.wait()

    async def _flush(self) -> None:
        """Write the queue until it is empty. Shielded: a write cut in half would corrupt
        the stream for every later message; ``limits.write_timeout`` bounds it instead, and
        a peer that stops reading for that long loses the connection."""
        send_now = self._send_now
        self._writing = True
        try:
            while self._queue and not self.closed:
                batch, self._queue = self._queue, []
                if self._room is not None:
                    self._room.set()
                    self._room = None
                # A channel that can write without waiting (stdio) does so here: a write
                # that fits needs neither a scope nor the scheduler.
                pending = send_now(batch) if send_now is not None else self._channel.send(batch)
                if pending is not None:
                    await self._complete(pending)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.info("closing conn=%s reason=write-failed error=%r", self._id, exc)
            self._break("peer-gone")
        finally:
            self._writing = False

    async def _complete(self, pending: Awaitable[None]) -> None:
        """Wait for a write the channel could not finish at once. Shielded, bounded by
        ``limits.write_timeout`` (the peer that stops reading that long loses the connection).
        One scope does both jobs (a scope's own deadline still fires when it is shielded):
        cheaper than a shield plus fail_after on this hot path."""
        limit = self._limits.write_timeout
        with trio.CancelScope(shield=True, deadline=trio.current_time() + limit) as scope:
            await pending
        if scope.cancelled_caught:
            log.warning("closing conn=%s reason=write-timeout seconds=%s", self._id, limit)
            self._break("write-timeout")

    def _break(self, reason: str) -> None:
        self.closed = True
        self._queue.clear()
        if self._room is not None:
            self._room.set()
            self._room = None
        self._on_break(reason)
