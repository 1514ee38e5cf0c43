"""A 2026-07-28 ``subscriptions/listen`` answered from its HTTP connection's own task.

basic/patterns/subscriptions: a listen is one POST whose SSE response stays open, often for
hours, carrying the acknowledgment, then each change the client asked for, then (when the
server ends it) the result. Most of that time nothing happens, so what an idle listen holds
is what 10,000 of them cost (benchmarks/README.md, "Memory per idle connection"). Here it
holds no task, nursery or response stream of its own: the handler runs in the connection's
task (``ServerPort.dispatch_one``, as a modern POST's request does), and when it waits for
changes (``Subscriber.receive``) it waits in :meth:`ListenStream.idle`, one wait for
everything an idle listen must notice:

- a change: the publisher writes it to the socket itself (:meth:`ListenStream.send_now`,
  the handler's ``Peer.send_nowait``); one it cannot write at once, or the subscriber's end
  (shutdown), cancels the wait's scope and the handler goes on;
- the client hanging up: the socket is watched in this task (``Exchange.watch``), and the
  hang-up cancels the connection, this listen with it (2026-07-28 "Cancellation");
- a quiet period: the wait's scope has the keep-alive tick as its deadline, after which a
  comment goes out (a quiet stream carries a byte at least every 2 x ``sse_keepalive``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from ...framing import encode_sse_comment
from ...protocol import Pieces
from ._exchange import Exchange
from ._streams import end_with_reply, sse_event

__all__ = ["ListenStream"]

log = logging.getLogger("mcp_runtime.http")

_KEEP_ALIVE: Final = encode_sse_comment("keep-alive")
#: One SSE ``message`` event (``sse_event(data, None)``) as one HTTP/1.1 chunk, framed in
#: one step: ``% (len(data) + _EVENT_OVERHEAD, data)``.
_CHUNKED_EVENT: Final = b"%x\r\ndata: %b\n\n\r\n"
_EVENT_OVERHEAD: Final = len(b"data: \n\n")
#: What a failed write of the response raises: the client is gone or stopped reading.
_WRITE_ERRORS: Final = (
    trio.TooSlowError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    OSError,
)


class ListenStream:
    """One listen's response: its handler's ``send`` (``Peer.notify``), ``send_now``
    (``Peer.send_nowait``) and ``idle`` (the wait), then :meth:`answer` with its reply.

    Every write goes in order: the part of an event the socket did not take at once
    (``_rest``) is finished before anything else is written, shielded (an event is never
    cut in half; the connection's ``write_timeout`` bounds it). A write that fails stops
    the listen with its connection (``Exchange.abort``); nothing is written after it.
    """

    __slots__ = (
        "_accept_sse",
        "_chunked",
        "_connection_id",
        "_exchange",
        "_interval",
        "_rest",
        "_tick_at",
        "_wake",
        "_watching",
        "_wrote",
        "broken",
        "streaming",
    )

    def __init__(
        self, exchange: Exchange, accept_sse: bool, keepalive: float, connection_id: str
    ) -> None:
        self._exchange = exchange
        self._accept_sse = accept_sse
        self._connection_id = connection_id
        self._interval = keepalive if keepalive > 0 else math.inf
        self._tick_at = trio.current_time() + self._interval
        #: Something was written since the last tick (no keep-alive due at the next).
        self._wrote = False
        #: The rest of an event the socket did not take at once, to finish first.
        self._rest: Awaitable[None] | None = None
        #: The scope ``idle`` waits in, while it does: cancelled to wake it.
        self._wake: trio.CancelScope | None = None
        #: ``idle`` watches the socket (until the client sends bytes: then the
        #: connection's reader task reads, and sees a hang-up, instead).
        self._watching = True
        #: The SSE response has started (the first notification did).
        self.streaming = False
        #: ... as chunks (HTTP/1.1): ``send_now`` frames a change's chunk itself.
        self._chunked = False
        #: A write failed: the connection is being aborted.
        self.broken = False

    async def send(self, data: bytes) -> None:
        """A notification from the handler: the first starts the SSE response. A client
        that takes only JSON gets the reply alone (2026-07-28 basic/transports)."""
        if not self._accept_sse or self.broken:
            return
        event = sse_event(data, None)
        try:
            await self.flush()
            if self.streaming:
                self._wrote = True
                self._rest = self._exchange.write_now(event)
                await self.flush()
            else:
                self.streaming = True
                # The keep-alive ticks start with the stream (as the SSE pump's do).
                self._tick_at = trio.current_time() + self._interval
                await self._exchange.start_stream(
                    200, "text/event-stream", [("X-Accel-Buffering", "no")], first=event
                )
                self._chunked = self._exchange.chunked
        except _WRITE_ERRORS as exc:
            self._broke(exc)

    def send_now(self, data: bytes, related: Any = None) -> bool:
        """A change written by its publisher, in its step: True when written (or, for a
        client that takes only JSON, dropped); False when it must wait its turn (the
        handler is woken for it and ``send``-s it)."""
        if self.broken or not self._accept_sse:
            return True  # nothing more goes to this client
        if self._rest is not None or not self.streaming:
            return False
        try:
            if self._chunked:  # (the usual case: the event and its chunk in one step)
                framed = _CHUNKED_EVENT % (len(data) + _EVENT_OVERHEAD, data)
                rest = self._exchange.write_framed_now(framed)
            else:
                rest = self._exchange.write_now(sse_event(data, None))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False  # the handler's send meets the broken socket itself
        self._wrote = True
        if rest is not None:
            self._rest = rest  # for ``idle`` to finish, before anything else
            if self._wake is not None:
                self._wake.cancel()
        return True

    async def idle(self, wake: trio.CancelScope) -> None:
        """The handler's wait while nothing comes (``Subscriber.receive``), in ``wake``:
        finish a write, send a keep-alive when a tick passed in silence, then watch the
        socket until ``wake`` is cancelled or its deadline (the next tick) passes."""
        self._wake = wake
        try:
            if self.broken:
                await trio.sleep_forever()  # (the connection's abort cancels this)
            await self.flush()
            now = trio.current_time()
            if now >= self._tick_at:
                if not self._wrote and self.streaming:
                    self._rest = self._exchange.write_now(_KEEP_ALIVE)
                    await self.flush()
                self._wrote = False
                self._tick_at = now + self._interval
            wake.deadline = self._tick_at
            while self._watching:
                self._watching = await self._exchange.watch()
                await self.flush()  # (a change the publisher could not write whole)
            await trio.sleep_forever()
        except _WRITE_ERRORS as exc:
            self._broke(exc)
            await trio.sleep_forever()  # (the abort cancels this at once)
        finally:
            self._wake = None

    async def flush(self) -> None:
        """Finish the event the socket did not take whole (shielded: never half of it).
        ``_rest`` stays set until it is written: meanwhile ``send_now`` declines."""
        while self._rest is not None:
            try:
                with trio.CancelScope(shield=True):
                    await self._rest
            finally:
                self._rest = None

    async def answer(
        self, reply: bytes | Pieces | None, accept_json: bool, json_status: Callable[[bytes], int]
    ) -> None:
        """End the response with the handler's ``reply`` (None: none), as the direct path
        answers a request: JSON when nothing was streamed before it (``json_status`` picks
        the status), else the SSE stream's last event."""
        if self.broken:
            return
        await self.flush()
        exchange = self._exchange
        await end_with_reply(
            exchange, reply, self.streaming, accept_json, self._accept_sse, json_status
        )

    def close(self) -> None:
        """Drop a write left unfinished (the listen was cancelled before it)."""
        rest, self._rest = self._rest, None
        if rest is not None:
            rest.close()  # type: ignore[attr-defined]

    def _broke(self, exc: BaseException) -> None:
        log.info("closing conn=%s reason=write-failed error=%r", self._connection_id, exc)
        self.broken = True
        self.close()
        self._exchange.abort()  # the listen stops with its connection
