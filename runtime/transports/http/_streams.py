"""Response streams and the writer that answers a POST as JSON or SSE.

MCP 2025-11-25 basic/transports, "Resumability and Redelivery": event ids are unique across
all streams of a session and encode their stream, so ``Last-Event-ID`` names both the
stream and the position in it; the server replays only that stream's later events. The
events wait in an ``EventStore`` (``runtime.stores``: in memory, bounded by
``HttpLimits.max_replay_events``, or shared across replicas).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import trio

from ...framing import encode_sse_comment
from ...protocol import Pieces
from ._edge import HttpLimits
from ._exchange import Exchange, HttpError
from ._in_order import DROP, FILL, InOrder, seq_of

__all__ = [
    "ResponseStream",
    "answer",
    "sse_event",
]

log = logging.getLogger("mcp_runtime.http")

Key = tuple[type, Any]


#: ``sse_event(data, event_id)`` as one HTTP/1.1 chunk, framed in one step:
#: ``% (len(id) + len(data) + _ID_EVENT_OVERHEAD, id, data)``.
_CHUNKED_ID_EVENT: Final = b"%x\r\nid: %b\ndata: %b\n\n\r\n"
_ID_EVENT_OVERHEAD: Final = len(b"id: \ndata: \n\n")


def sse_event(data: bytes | None, event_id: str | None, retry: int | None = None) -> bytes:
    """One SSE ``message`` event; ``data`` is a JSON text (no line breaks) or None (priming)."""
    head = b""
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    if retry is not None:
        head += b"retry: %d\n" % retry
    return head + b"data: " + (data or b"") + b"\n\n"


class ResponseStream:
    """One logical stream: the answers to a POST's request(s), or a session's GET stream.

    Messages are queued (bounded) for whichever HTTP response is attached; when the queue
    overflows the attached response is cut (the client may resume from the store).
    """

    #: Set when the POST must be refused instead of answered from the stream: a new
    #: session that could not be saved to the shared store (``HttpSession.route``) gets
    #: this (503 + Retry-After, no ``Mcp-Session-Id``), not its ``initialize`` answer.
    refusal: HttpError | None = None

    def __init__(self, stream_id: str, keys: Sequence[Key] = (), *, queue_size: int = 1024):
        self.id = stream_id
        self.pending: set[Key] = set(keys)
        self.standing = not keys
        self._queue_size = queue_size
        # Made on first use: most POST streams of a session answered in the POST's own task
        # never carry a message (a memory channel costs more than the rest of the stream).
        self._channel: (
            tuple[
                trio.MemorySendChannel[tuple[str | None, bytes]],
                trio.MemoryReceiveChannel[tuple[str | None, bytes]],
            ]
            | None
        ) = None
        self.done = False
        self.attached = False
        self.overflowed = False
        #: Error replies for malformed items of this POST's batch, answered by the HTTP
        #: layer and spliced into the core's batch reply (one JSON array per batch).
        self.batch_errors: list[bytes] = []
        #: The priming event's id. With ``lazy_prime`` it is allocated just before the
        #: stream's first event is stored (many streams never carry one).
        self.prime_id: str | None = None
        self.lazy_prime = False
        #: The POST takes a JSON answer: a response that comes first (the whole answer) is
        #: not stored, since no client can resume a JSON answer (``HttpSession.route``).
        self.json_first = False
        #: Called once when a message is queued while nothing answers from the stream yet
        #: (a request running in the POST's own task: its notifications need a writer).
        self.on_message: Callable[[], None] | None = None
        #: ``cut()`` asked the HTTP response carrying this stream to end (SEP-1699 polling);
        #: ``_cut_scope`` is the wait that response is in, if any.
        self.cut_requested = False
        self._cut_scope: trio.CancelScope | None = None
        #: Set by the pump while it waits with nothing queued: ``push`` hands the message
        #: to it (written to the socket at once) instead of waking the pump's task.
        self.direct: Callable[[str | None, bytes], bool] | None = None
        #: The pump's wait on the socket while nothing is queued (``Exchange.watch``):
        #: cancelled when a message is queued or the stream ends, to wake it.
        self._waiter: trio.CancelScope | None = None

    def cut(self) -> bool:
        """End the HTTP response that carries this stream now, as a server may close a
        POST's SSE stream before the answer (2025-11-25 basic/transports, "the server MAY
        close the connection before sending the response"; SEP-1699 polling). The stream
        lives on: its later events go to the store and to a client that resumes with
        ``Last-Event-ID``. False when the stream is complete already."""
        if self.done:
            return False
        self.cut_requested = True
        if self._cut_scope is not None:
            self._cut_scope.cancel()
        return True

    def _take_cut(self) -> bool:
        cut, self.cut_requested, self._cut_scope = self.cut_requested, False, None
        return cut

    def _channels(
        self,
    ) -> tuple[
        trio.MemorySendChannel[tuple[str | None, bytes]],
        trio.MemoryReceiveChannel[tuple[str | None, bytes]],
    ]:
        if self._channel is None:
            self._channel = trio.open_memory_channel(self._queue_size)
            if self.done:
                self._channel[0].close()
        return self._channel

    @property
    def receive(self) -> trio.MemoryReceiveChannel[tuple[str | None, bytes]]:
        return self._channels()[1]

    def take_nowait(self) -> tuple[str | None, bytes] | None:
        """The next queued message, None when none is queued; EndOfChannel once the stream
        is done and drained. An empty queue is dropped (its channel pair): an idle stream
        holds none while it waits, and ``push`` makes a new one."""
        channel = self._channel
        if channel is None:
            if self.done:
                raise trio.EndOfChannel
            return None
        try:
            return channel[1].receive_nowait()
        except trio.WouldBlock:
            self._channel = None  # (not done: a done stream's channel is closed)
            return None

    def push(self, event_id: str | None, data: bytes, final_key: Key | None = None) -> None:
        """Queue a message; ``final_key`` marks the response that answers that request."""
        direct = self.direct
        try:
            if direct is None or not direct(event_id, data):
                self.direct = None  # what follows queues behind this one
                self._channels()[0].send_nowait((event_id, data))
                self._wake_waiter()
        except trio.WouldBlock:
            self.overflowed = True
        except trio.ClosedResourceError:
            return
        if self.on_message is not None:
            wake, self.on_message = self.on_message, None
            wake()
        if final_key is not None:
            self.pending.discard(final_key)
            if not self.pending and not self.standing:
                self.finish()

    def take_below(self, seq: int) -> list[tuple[str, bytes]]:
        """Take the queued events numbered below ``seq`` out of the queue, in the order of
        their ids; the rest stay queued as they were (a GET stream's events routed to it
        while its priming event, ``seq``, was being stored go out before that event)."""
        channel = self._channel
        if channel is None:
            return []
        queued: list[tuple[str | None, bytes]] = []
        with contextlib.suppress(trio.WouldBlock, trio.EndOfChannel):
            while True:
                queued.append(channel[1].receive_nowait())
        below: list[tuple[str, bytes]] = []
        for event_id, data in queued:
            if event_id is not None and seq_of(event_id) < seq:
                below.append((event_id, data))
            else:
                with contextlib.suppress(trio.ClosedResourceError):
                    channel[0].send_nowait((event_id, data))  # (room: it was queued)
        below.sort(key=lambda event: seq_of(event[0]))
        return below

    def finish(self) -> None:
        self.done = True
        if self._channel is not None:
            self._channel[0].close()
        self._wake_waiter()

    def _wake_waiter(self) -> None:
        if self._waiter is not None:
            self._waiter.cancel()


async def answer(
    exchange: Exchange,
    stream: ResponseStream,
    limits: HttpLimits,
    accept_json: bool,
    accept_sse: bool,
    headers: list[tuple[str, str]],
    prime_id: str | None = None,
) -> None:
    """Answer a handshake-era session POST from its resumable ``stream``: JSON when the
    first message is the whole answer (and the client accepts JSON), else an SSE stream
    until the stream is done (2025-11-25 basic/transports, "Sending Messages to the
    Server"). ``prime_id``: the stream's priming event id (allocated before the request ran,
    so it precedes every event of the stream; None: the stream's own, if it has one).
    Returns when the answer is complete or the client hung up."""
    first: tuple[str | None, bytes] | None = None
    with trio.CancelScope() as scope:
        exchange.cancel_on_disconnect(scope)
        if accept_sse:  # (a JSON answer cannot be cut short: the client waits for it)
            stream._cut_scope = scope
            if stream.cut_requested:
                scope.cancel()
        try:
            first = stream.receive.receive_nowait()
        except trio.WouldBlock:
            try:
                first = await stream.receive.receive()
            except trio.EndOfChannel:
                first = None
        except trio.EndOfChannel:
            first = None
        finally:
            exchange.forget(scope)
    stream._cut_scope = None
    if stream.refusal is not None:
        raise stream.refusal
    if first is None and stream.cut_requested:
        # Cut before the first message: the priming event alone, so the client holds an
        # event id to resume from.
        stream._take_cut()
        opening = sse_event(None, prime_id, limits.sse_retry_ms) if prime_id is not None else b""
        await exchange.start_stream(200, "text/event-stream", headers, first=opening, end=True)
        return
    if scope.cancelled_caught and first is None:
        return
    if first is None:  # ended without an answer (a cancelled request, a closed session)
        if accept_sse:
            await exchange.start_stream(200, "text/event-stream", headers, end=True)
        else:
            await exchange.respond(204, b"", headers=headers)
        return
    if (stream.done and accept_json and _queued(stream) == 0) or not accept_sse:
        data = first[1]
        if not stream.done and not accept_sse:
            # The client takes JSON only: wait for the answer, dropping the notifications.
            async for _event_id, last in stream.receive:
                data = last
        await exchange.respond(200, data, headers=headers)
        return
    # The head, the priming event and the first message leave in one write; a stream that
    # is already complete ends in that same write.
    opening = sse_event(first[1], first[0])
    if prime_id is None:
        prime_id = stream.prime_id  # (a lazy stream's, allocated before its first event)
    if prime_id is not None:
        opening = sse_event(None, prime_id, limits.sse_retry_ms) + opening
    complete = stream.done and _queued(stream) == 0
    await exchange.start_stream(
        200,
        "text/event-stream",
        [*headers, ("X-Accel-Buffering", "no")],
        first=opening,
        end=complete,
    )
    if complete:
        return
    if await pump(exchange, stream, limits.sse_keepalive):
        await exchange.end()


async def end_with_reply(
    exchange: Exchange,
    reply: bytes | Pieces | None,
    streaming: bool,
    accept_json: bool,
    accept_sse: bool,
    json_status: Callable[[bytes], int],
) -> None:
    """End a one-request response (a POST answered by one handler, a 2026-07-28 listen)
    with the handler's ``reply`` (None: it gave none): the stream's last event when events
    went before it (``streaming``), else JSON when the client accepts it (``json_status``
    picks the status), else a one-event SSE stream; no reply: the stream's end, an empty SSE
    stream, or 204. A reply given as ``Pieces`` goes as JSON in one vector, never joined; in
    an SSE event it is joined."""
    if reply is None:
        if streaming:
            await exchange.end()
        elif accept_sse:
            await exchange.start_stream(200, "text/event-stream", [], end=True)
        else:
            await exchange.respond(204, b"")
        return
    if type(reply) is Pieces:
        if accept_json and not streaming:
            # (Its envelope's head holds the member that tells a result from an error.)
            await exchange.respond_pieces(json_status(bytes(reply.parts[0])), reply)
            return
        reply = reply.join()
    if streaming:
        await exchange.end(sse_event(reply, None))
    elif accept_json:
        await exchange.respond(json_status(reply), reply)
    else:
        await exchange.start_stream(
            200,
            "text/event-stream",
            [("X-Accel-Buffering", "no")],
            first=sse_event(reply, None),
            end=True,
        )


def _queued(stream: ResponseStream) -> int:
    channel = stream._channel
    return 0 if channel is None else channel[1].statistics().current_buffer_used


async def pump(
    exchange: Exchange,
    stream: ResponseStream,
    keepalive: float,
    skip: int = 0,
    order: InOrder | None = None,
) -> bool:
    """Write ``stream``'s messages as SSE events until it is done (True) or the client hung
    up / the stream overflowed (False). Events numbered ``skip`` or below are dropped (they
    were replayed); with ``order``, events go out in the order of their ids (a session's
    GET stream fed by several replicas, ``_in_order``).

    Keep-alive comments go out on quiet periods: one timer per ``keepalive`` interval (a
    tick), not one per event (a timer scope per event cost much of the server's CPU
    delivering one change to many streams: benchmarks/README.md, "Fan-out over HTTP"); a tick that
    saw no event ends with a
    keep-alive, so a quiet stream carries a byte at least every 2 x ``keepalive`` seconds.

    While it waits with nothing queued, ``stream.push`` writes an event straight to the
    socket (``stream.direct``) rather than waking this task: one task switch per event and
    stream less. What the socket does not take at once is left for this task to finish
    (``rest``) before anything else is written.
    """
    interval = keepalive if keepalive > 0 else math.inf
    take_nowait = stream.take_nowait
    chunked = exchange.chunked
    #: This task watches the socket for a hang-up while it waits (``Exchange.watch``), in
    #: place of the connection's reader task, until the client sends bytes.
    watching = True
    rest: list[Awaitable[None]] = []
    wrote = [False]

    def direct(event_id: str | None, data: bytes) -> bool:
        if skip and event_id is not None and seq_of(event_id) <= skip:
            return True
        if order is not None and event_id is not None:
            verdict = order.judge(seq_of(event_id))
            if verdict == DROP:
                return True
            if verdict == FILL:
                return False  # queued: the pump's task asks the store for the gap
            order.wrote(seq_of(event_id))
        try:
            if chunked and event_id is not None:
                # The event in its chunk, framed in one step (one change goes to many GET
                # streams), the bytes of ``exchange.write_now(sse_event(...))``.
                eid = event_id.encode()
                size = len(eid) + len(data) + _ID_EVENT_OVERHEAD
                pending = exchange.write_framed_now(_CHUNKED_ID_EVENT % (size, eid, data))
            else:
                pending = exchange.write_now(sse_event(data, event_id))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False  # queued instead: the pump meets the broken socket itself
        wrote[0] = True
        if pending is not None:
            stream.direct = None
            rest.append(pending)
            _wake(stream)
        return True

    # One cancel scope per tick, and none around them: the tick is also what a hang-up or
    # ``cut()`` cancels (an idle stream holds one scope, not two).
    ended = stopped = False
    try:
        while not ended:
            wrote[0] = False
            with trio.CancelScope(deadline=trio.current_time() + interval) as tick:
                exchange.cancel_on_disconnect(tick)
                stream._cut_scope = tick
                if stream.cut_requested:
                    tick.cancel()
                try:
                    while True:
                        if rest:
                            # A tick must not cut an event in half; the write timeout
                            # bounds this wait (and a gone peer breaks it).
                            with trio.CancelScope(shield=True):
                                await rest.pop()
                        try:
                            item = take_nowait()
                        except trio.EndOfChannel:
                            ended = True
                            break
                        if item is None:
                            # The next message; meanwhile this task watches the socket, so
                            # a hang-up is noticed with no reader task (an idle stream
                            # holds one task). A message queued or the stream
                            # ending cancels the watch by ending this tick early
                            # (``_waiter``: no scope of its own); the hang-up cancels the
                            # tick too. Once the client sends bytes instead, the
                            # connection's reader task watches again and this waits on the
                            # queue. (Inline, not a coroutine of its own: one frame less
                            # per idle stream.)
                            stream.direct = direct
                            try:
                                while watching and item is None:
                                    stream._waiter = tick
                                    try:
                                        watching = await exchange.watch()
                                    finally:
                                        stream._waiter = None
                                    item = take_nowait()  # (EndOfChannel once done)
                                if item is None:
                                    item = await stream.receive.receive()
                            except trio.EndOfChannel:
                                ended = True
                                break
                            finally:
                                stream.direct = None
                        if item is _WAKE:
                            continue
                        event_id, data = item
                        if skip and event_id is not None and seq_of(event_id) <= skip:
                            continue
                        if order is not None and event_id is not None:
                            seq = seq_of(event_id)
                            verdict = order.judge(seq)
                            if verdict == DROP:
                                continue
                            if verdict == FILL:
                                # Not cut by a tick: the item is taken (the store's own
                                # timeout bounds the wait; ``fill`` gives up on errors).
                                with trio.CancelScope(shield=True):
                                    missed = await order.missing(seq)
                                for missed_id, missed_data in missed:
                                    pending = exchange.write_now(sse_event(missed_data, missed_id))
                                    if pending is not None:
                                        with trio.CancelScope(shield=True):
                                            await pending
                            order.wrote(seq)
                        wrote[0] = True
                        pending = exchange.write_now(sse_event(data, event_id))
                        if pending is not None:
                            with trio.CancelScope(shield=True):
                                await pending
                        if stream.overflowed:
                            log.warning("cutting SSE stream=%s reason=queue-overflow", stream.id)
                            return False
                finally:
                    exchange.forget(tick)
            if tick.cancelled_caught and (exchange.hung_up_seen or stream.cut_requested):
                stopped = True  # the client hung up, or the server cut the response
                break
            # (A tick cut short by a wake-up, not its deadline, ends in silence.)
            if tick.cancelled_caught and not wrote[0] and trio.current_time() >= tick.deadline:
                try:
                    await exchange.write(encode_sse_comment("keep-alive"))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    stopped = True  # (between ticks no scope sees the hang-up: the write does)
                    break
    finally:
        stream.direct = None
        stream._cut_scope = None
    if rest:  # (cancelled before it was written: the response ends here anyway)
        rest.pop().close()  # type: ignore[attr-defined]
    if stream._take_cut():
        return True  # the server ended the response (the stream lives on for resumption)
    return not stopped


#: What ``push`` sends to wake a pump that has a direct write's rest to finish.
_WAKE: Final = (None, b"")


def _wake(stream: ResponseStream) -> None:
    with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
        stream._channels()[0].send_nowait(_WAKE)
    stream._wake_waiter()
