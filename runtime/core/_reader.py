"""Reader generations: the input side of a connection.

A reader generation is one task under its own cancel scope that reads frames and runs each
request's first step itself (the request engine, ``_engine``). A request that finishes there
costs no task and no cancel scope. A request that suspends makes the generation its task (the
scope becomes the request's scope: in flight, cancellable, timed) and a new generation reads
on; batch items run the same way. Only the current generation calls ``channel.receive``; a
generation hands reading (and the rest of a batch it was walking) to the next one before it
finishes its request. See ``_connection`` for the whole task tree.

The reader owns the reading state (the current generation's scope, whether it waits for
input, why reading ended); what it needs of the rest of the connection it is given: the
channel, the outbox, the request table, the request assembler, the dispatcher, and the
connection's handling of notifications and responses.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio
from msgspec import UNSET, Raw

from ..framing import FramingError, escape_excerpt
from ..protocol import (
    INVALID_REQUEST,
    ONE_PASS_OVER,
    REQUEST_ID_TYPES,
    DecodedFrame,
    Envelope,
    JSONRPCError,
    Kind,
    Pieces,
    ToolCall,
    batch_shape_error,
    classify,
    decode_frame,
    decode_item,
    error_reply,
    framing_error,
    internal_error,
)
from . import _engine as engine
from ._assembler import Assembler
from ._channel import MessageChannel
from ._context import Peer, RequestContext
from ._dispatch import Dispatcher
from ._limits import Limits
from ._outbox import Outbox
from ._requests import Batch, RequestTable
from ._session import Session

__all__ = ["Reader"]

log = logging.getLogger("mcp_runtime.connection")


class _Running:
    """A request (or batch item) that suspended: the generation that started it runs it on."""

    __slots__ = ("batch", "ctx", "index", "reply", "suspended")

    def __init__(
        self,
        ctx: RequestContext,
        suspended: engine.Suspended[bytes | Pieces],
        batch: Batch | None,
        index: int,
    ) -> None:
        self.ctx = ctx
        self.suspended = suspended
        self.batch = batch
        self.index = index
        self.reply: bytes | Pieces | None = None


class Reader:
    """Reads one channel in generations and runs what it reads through the request engine.

    ``on_notification(env)`` and ``on_response(env)`` are the connection's; ``on_idle()`` is
    called when the last suspended request or batch finished (the drain waits for it).
    """

    __slots__ = (
        "_assemble",
        "_assembler",
        "_channel",
        "_cut_short",
        "_dispatcher",
        "_ended",
        "_id",
        "_limits",
        "_nursery",
        "_on_idle",
        "_on_notification",
        "_on_response",
        "_out",
        "_peer",
        "_pre_read",
        "_ready_frame",
        "_receive_nowait",
        "_scope",
        "_session",
        "_stop",
        "_table",
        "_takes_pieces",
        "_waiting",
        "end_reason",
        "ended",
        "ending",
        "on_settle",
        "parked",
    )

    def __init__(
        self,
        *,
        channel: MessageChannel,
        outbox: Outbox,
        table: RequestTable[object],
        assembler: Assembler,
        dispatcher: Dispatcher,
        session: Session,
        peer: Peer,
        limits: Limits,
        connection_id: str,
        on_notification: Callable[[Envelope], Awaitable[None]],
        on_response: Callable[[Envelope], None],
        on_idle: Callable[[], None],
    ) -> None:
        self._channel = channel
        # Channels that can tell a ready frame from one that needs a read (FramedChannel)
        # let the reader coalesce the replies to pipelined requests; others flush each one.
        self._ready_frame: Callable[[], bytes | None] | None = getattr(channel, "ready_frame", None)
        # Channels read only while they have input (``MessageChannel.receive_nowait``): with
        # none the generation ends instead of parking a task (issue 22 item 4).
        self._receive_nowait: Callable[[], bytes | DecodedFrame] | None = getattr(
            channel, "receive_nowait", None
        )
        # Channels that write a reply given as runtime.protocol.Pieces as its parts
        # (FramedChannel): a request's reply may come so (not a batch item's: they are joined).
        self._takes_pieces: bool = getattr(channel, "takes_pieces", False)
        self._out = outbox
        self._table = table
        self._assembler = assembler
        self._assemble = assembler.assemble
        self._dispatcher = dispatcher
        self._pre_read = dispatcher.pre_read
        self._session = session
        self._peer = peer
        self._limits = limits
        self._id = connection_id
        self._on_notification = on_notification
        self._on_response = on_response
        self._on_idle = on_idle
        self._nursery: trio.Nursery | None = None
        # The current generation's scope; ``stop`` cancels it only while the reader waits
        # for input (``_waiting``), never while it runs a request.
        self._scope: trio.CancelScope | None = None
        self._waiting = False
        self._stop = False
        #: True once reading has ended; ``end_reason`` says why ("eof", "shutdown",
        #: "framing-error", "read-timeout", "peer-gone", ...). ``wait_ended`` waits for it
        #: (its event is made by the first wait: an idle session's reader never has one,
        #: 272 bytes less; issue 22 item 4).
        self.ended = False
        self._ended: trio.Event | None = None
        self.end_reason = "running"
        #: No generation reads: the channel had no input (``receive_nowait`` channels only);
        #: ``resume`` starts one.
        self.parked = False
        #: Called when reading parked or ended (set by the connection of such a channel).
        self.on_settle: Callable[[], None] | None = None
        #: Set by the connection when its grace ran out: requests cut short from then on are
        #: answered -32000 "Server is shutting down" (issue 16 item 4).
        self.ending = False
        #: Requests cut short without a reply (``_abandon``), for ``answer_cut_short``.
        self._cut_short: list[_Running] | None = None

    # -- control (from the connection) -------------------------------------------------------

    def start(self, nursery: trio.Nursery) -> None:
        """Start the first generation in ``nursery`` (suspended requests run there too)."""
        self._nursery = nursery
        self._next_generation()

    async def wait_ended(self) -> None:
        """Wait until reading has ended."""
        if not self.ended:
            if self._ended is None:
                self._ended = trio.Event()
            await self._ended.wait()

    def resume(self, nursery: trio.Nursery) -> bool:
        """Read again after parking (input arrived, or shutdown must be seen): a generation
        started in ``nursery``. False when the nursery takes no more tasks (it just closed)."""
        if not self.parked:
            return True
        scope = trio.CancelScope()
        try:
            nursery.start_soon(self._generation, scope, None, 0, None)
        except RuntimeError:
            return False
        self._nursery = nursery
        self._scope = scope
        self.parked = False
        return True

    def _park(self) -> None:
        self._scope = None
        self._nursery = None  # (the round's nursery, about to close: not kept while idle)
        self.parked = True
        if self.on_settle is not None:
            self.on_settle()

    def stop(self) -> None:
        """Stop reading before the next wait for input (shutdown); wake the reader if it is
        waiting right now. Its scope is cancelled only then: at any other moment the reader
        may be about to hand that scope to a request, which shutdown must not cancel."""
        self._stop = True
        if self._waiting and self._scope is not None:
            self._scope.cancel()

    @property
    def stopped(self) -> bool:
        """``stop()`` was called (shutdown reached this connection)."""
        return self._stop

    def _task_done(self) -> None:
        if self._table.finished():
            self._on_idle()

    # -- generations ------------------------------------------------------------------------

    def _next_generation(
        self, batch: Batch | None = None, index: int = 0, frame: bytes | DecodedFrame | None = None
    ) -> None:
        """Start the next generation: it walks the rest of ``batch`` from ``index``, handles
        ``frame``, then reads on. Called with nothing in between the current generation
        handing off and its request continuing, so there is one reader at a time."""
        scope = trio.CancelScope()
        self._scope = scope
        assert self._nursery is not None
        self._nursery.start_soon(self._generation, scope, batch, index, frame)

    async def _generation(
        self,
        scope: trio.CancelScope,
        batch: Batch | None,
        index: int,
        frame: bytes | DecodedFrame | None,
    ) -> None:
        """Read under ``scope`` until reading ends or a request started here suspends; in the
        second case ``scope`` becomes that request's scope and this task runs it to the end."""
        running: _Running | None = None
        try:
            with scope:
                running = await self._read(scope, batch, index, frame)
                if running is not None:
                    # Nothing may await between the request's first step and this line:
                    # the trap it yielded is handed back to trio here.
                    running.reply = await engine.finish(running.ctx, running.suspended)
            if running is not None and scope.cancelled_caught:
                running.reply = engine.cancelled_reply(running.ctx, self._limits.request_timeout)
        except BaseException as exc:
            if running is not None:
                # Cut short by the end of the connection after its grace: still answered
                # (issue 16 item 4), held for the outbox's last flush.
                ending = self.ending and isinstance(exc, trio.Cancelled)
                self._abandon(running, engine.shutting_down_reply(running.ctx) if ending else None)
            raise
        if running is not None:
            await self._deliver(running)
        elif scope.cancelled_caught and not self.ended:
            # Shutdown woke the reader while it waited for input (or for room to write
            # what it held back just before ending).
            await self._end("shutdown")

    async def _read(
        self,
        scope: trio.CancelScope,
        batch: Batch | None,
        index: int,
        frame: bytes | DecodedFrame | None,
    ) -> _Running | None:
        """Handle frames until a request suspends (it is returned; the next generation was
        started to read on) or this generation is done: reading ended, or was handed to a
        fresh generation (None)."""
        if batch is not None:
            running = await self._walk(scope, batch, index)
            if running is not None or self._scope is not scope:
                return running
        while True:
            if frame is None:
                frame = await self._next_frame()
                if frame is None:
                    return None
            if self._stop and scope.cancel_called:
                # Shutdown cancelled this scope while the read was completing anyway. A
                # request suspending in it would be cancelled at once (and answered as timed
                # out): the frame goes to a fresh generation, which stops reading after it.
                self._next_generation(frame=frame)
                return None
            try:
                running = await self._on_frame(scope, frame)
            except Exception:  # a fault of ours costs this frame, never the connection
                await self._fault(frame)
                if self._scope is not scope:  # (reading was handed on before the fault)
                    return None
                running = None
            if running is not None or self._scope is not scope:
                return running
            frame = None

    async def _next_frame(self) -> bytes | DecodedFrame | None:
        """The next frame, or None once reading has ended (``end_reason`` says why).

        Replies held back are written before the reader waits for input, so a burst of
        pipelined requests gets one write and a lone request gets its answer at once.
        """
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
                if self._stop:
                    await self._end("shutdown")
                    return None
                self._waiting = True
                try:
                    return await self._channel.receive()
                finally:
                    self._waiting = False
            except trio.EndOfChannel:
                await self._end("eof")
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
                if self._dispatcher.on_refusal is not None:
                    self._observe(error)
                await self._out.answer(error_reply(error))
                if exc.fatal:
                    await self._end("framing-error")
                    return None
            except trio.TooSlowError as exc:
                reason = str(exc) or "read-timeout"
                log.warning("closing conn=%s reason=%s", self._id, reason)
                await self._end(reason)
                return None
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                log.info("closing conn=%s reason=read-failed error=%r", self._id, exc)
                await self._end("peer-gone")
                return None

    async def _next_or_park(
        self, receive_nowait: Callable[[], bytes | DecodedFrame]
    ) -> bytes | DecodedFrame | None:
        """``_next_frame`` of a channel read only while it has input: the next frame, or
        None once reading ended or parked (the generation ends and no task waits for input;
        whoever feeds the channel resumes the connection). ``trio.EndOfChannel`` and the
        other errors of ``receive`` propagate to ``_next_frame``."""
        if not self._stop:
            try:
                return receive_nowait()
            except trio.WouldBlock:
                pass
        await self._out.release()
        if self._stop:
            await self._end("shutdown")
            return None
        try:
            return receive_nowait()  # (fed while the release waited)
        except trio.WouldBlock:
            self._park()
            return None

    async def _end(self, reason: str) -> None:
        self.end_reason = reason
        self._scope = None
        try:
            await self._out.release()
        finally:
            self.ended = True
            if self._ended is not None:
                self._ended.set()
            if self.on_settle is not None:
                self.on_settle()

    # -- messages ---------------------------------------------------------------------------

    def _bad_message(self, exc: JSONRPCError, data: bytes | memoryview | Raw) -> bytes:
        log.warning(
            "bad message conn=%s code=%d reason=%r excerpt=%s",
            self._id,
            exc.code,
            exc.message,
            escape_excerpt(bytes(data)),
        )
        if self._dispatcher.on_refusal is not None:
            self._observe(exc)
        return error_reply(exc)

    async def _on_frame(
        self, scope: trio.CancelScope, frame: bytes | DecodedFrame
    ) -> _Running | None:
        call: ToolCall | None = None
        read: Mapping[int, tuple[Envelope, ToolCall | None]] | None = None
        message: Envelope | list[Raw]
        if isinstance(frame, DecodedFrame):
            # Decoded and judged by its transport (an HTTP POST's body): taken as it is.
            if frame.error is not None:
                await self._out.answer(self._bad_message(frame.error, frame.body))
                return None
            found_message = frame.message
            assert found_message is not None
            if isinstance(found_message, list):
                if frame.read is None:  # decoded, not judged: as any batch read here
                    return await self._on_batch(scope, found_message)
                return await self._walk(scope, Batch(found_message, frame.read), 0)
            message, kind, call = found_message, frame.kind, frame.call
        else:
            try:
                if (
                    len(frame) > ONE_PASS_OVER
                    and self._pre_read is not None
                    and (found := self._pre_read(frame)) is not None
                ):
                    # A big tools/call read whole in one typed pass, alone or inside a batch
                    # (then ``read`` holds the items read, by index): its params' bytes are
                    # not walked a second time to find their end.
                    if isinstance(found[0], list):
                        message, read = found
                    else:
                        message, call = found
                else:
                    message = decode_frame(frame)
                kind = None if isinstance(message, list) else classify(message)
            except JSONRPCError as exc:
                await self._out.answer(self._bad_message(exc, frame))
                return None
            if isinstance(message, list):
                return await self._on_batch(scope, message, read)
        if kind == Kind.REQUEST:
            # Refused right here, with no layer between (under overload most requests are).
            ctx = self._assemble(
                message, self._session, self._peer, scope, call, False, self._takes_pieces
            )
            if isinstance(ctx, bytes):
                await self._out.answer(ctx)
                return None
            return await self._on_admitted(scope, ctx)
        if kind == Kind.NOTIFICATION:
            # Shutdown may interrupt a notification handler here, as it would a read.
            self._waiting = True
            try:
                await self._on_notification(message)
            finally:
                self._waiting = False
        else:
            self._on_response(message)
        return None

    async def _fault(self, frame: bytes | DecodedFrame) -> None:
        """Handling ``frame`` raised: a bug of ours, since everything a peer may send has its
        answer. Logged with its traceback (never on the wire); a request is answered -32603
        under its id, a frame whose id cannot be read under id null (JSON-RPC 2.0 section
        5), a notification or response not at all; reading goes on. (Its requests already
        running, if any, go on too.)"""
        data = frame.body if isinstance(frame, DecodedFrame) else frame
        log.exception(
            "fault handling a frame conn=%s excerpt=%s", self._id, escape_excerpt(bytes(data))
        )
        request_id: Any = None
        message: Envelope | list[Raw] | None
        try:
            message = frame.message if isinstance(frame, DecodedFrame) else decode_frame(frame)
        except Exception:  # (unreadable, or the fault was in the reading itself)
            message = None
        if isinstance(message, Envelope):
            # (Read here with nothing between, not through ``classify``, where the fault may
            # have been: a method and an id make a request.)
            if not (isinstance(message.method, str) and message.id is not UNSET):
                return  # a notification or a response: nothing to answer
            request_id = message.id if isinstance(message.id, REQUEST_ID_TYPES) else None
        await self._out.answer(error_reply(internal_error(), request_id))

    def _observe(self, error: JSONRPCError) -> None:
        """Tell the dispatcher's refusal observer (only called when there is one)."""
        self._assembler.observe(error, self._session, self._id)

    async def _on_admitted(self, scope: trio.CancelScope, ctx: RequestContext) -> _Running | None:
        reply, running = self._start(scope, ctx, None, 0)
        if running is None:
            assert reply is not None
            if self._scope is scope:
                await self._out.answer(reply, ctx.id)
            else:
                # Handed on by _start: this scope is cancelled and must not await again.
                self._out.hold(reply, ctx.id)
            return None
        self._table.started()
        self._next_generation()
        return running

    async def _on_batch(
        self,
        scope: trio.CancelScope,
        items: list[Raw],
        read: Mapping[int, tuple[Envelope, ToolCall | None]] | None = None,
    ) -> _Running | None:
        refusal = self._batch_refusal(items)
        if refusal is not None:
            if self._dispatcher.on_refusal is not None:
                self._observe(refusal)
            await self._out.answer(error_reply(refusal))
            return None
        return await self._walk(scope, Batch(items, read), 0)

    def _batch_refusal(self, items: list[Raw]) -> JSONRPCError | None:
        refused = batch_shape_error(len(items), self._limits.max_batch_size)
        if refused is not None:
            return refused
        forbidden = self._dispatcher.batch_policy(self._session)
        if forbidden is not None:
            return JSONRPCError(INVALID_REQUEST, forbidden)
        return None

    async def _walk(self, scope: trio.CancelScope, batch: Batch, first: int) -> _Running | None:
        """Run the batch's items from ``first`` on, in order (JSON-RPC 2.0 section 6, each item
        isolated from its neighbours). An item that suspends gets this generation; the next
        generation walks on from the item after it. Returns that item's runner, or None when
        the walk is over or was handed on."""
        items, read = batch.items, batch.read
        for index in range(first, len(items)):
            item = items[index]
            call = None
            try:
                if read is not None and index in read:
                    env, call = read[index]  # (read with the frame: Dispatcher.pre_read)
                else:
                    env = decode_item(item)
                kind = classify(env)
            except JSONRPCError as exc:
                batch.replies[index] = self._bad_message(exc, item)
                continue
            if kind == Kind.REQUEST:
                ctx = self._assemble(env, self._session, self._peer, scope, call, True)
                if isinstance(ctx, bytes):
                    batch.replies[index] = ctx  # its refusal
                    continue
                reply, running = self._start(scope, ctx, batch, index)
                if running is None:
                    batch.replies[index] = reply  # type: ignore[assignment]  # (bytes in a batch)
                    if self._scope is not scope:
                        return None  # handed on by _start: this scope is cancelled
                    continue
                batch.unfinished += 1
                if not batch.counted:
                    batch.counted = True
                    self._table.started()
                self._next_generation(batch, index + 1)
                return running
            if kind == Kind.NOTIFICATION:
                await self._on_notification(env)
            else:
                self._on_response(env)
        await self._batch_item_done(batch, in_reader=True)
        return None

    # -- running a request in this generation -----------------------------------------------

    def _start(
        self, scope: trio.CancelScope, ctx: RequestContext, batch: Batch | None, index: int
    ) -> tuple[bytes | Pieces | None, _Running | None]:
        """Run an admitted request's first step in this generation, under its scope (the
        assembler made ``ctx`` under it, with its deadline).

        Returns ``(reply, None)`` when it finished there, or ``(None, running)`` when it
        suspended: then it is in flight with ``scope`` as its cancel scope.
        """
        reply, suspended = engine.start(self._dispatcher, ctx)
        if suspended is None:
            if self._limits.request_timeout is not None:
                scope.deadline = math.inf
                if scope.cancel_called:
                    # The first step outlasted its deadline and something looked (reading
                    # ``cancel_called`` past the deadline cancels the scope, for good). The
                    # reply stands, as it would have in a task of its own that never waited,
                    # but reading moves to a fresh generation (with the rest of the batch).
                    self._next_generation(batch, index + 1)
            # The scope goes on reading and serving other requests: this finished request's
            # context must not report their cancellation as its own.
            ctx.cancel_scope = None
            return reply, None
        self._table.enter(ctx)
        return None, _Running(ctx, suspended, batch, index)

    async def _deliver(self, running: _Running) -> None:
        self._table.leave(running.ctx)
        batch = running.batch
        if batch is None:
            try:
                if running.reply is not None:
                    await self._out.send(running.reply, running.ctx.id)
            finally:
                self._task_done()
            return
        batch.replies[running.index] = running.reply  # type: ignore[assignment]  # (bytes)
        await self._batch_item_done(batch, in_reader=False)

    def _abandon(self, running: _Running, reply: bytes | Pieces | None) -> None:
        """Bookkeeping for a request cut short from outside (the connection is ending);
        ``reply``, when given, is held for the outbox's last flush (in its batch's reply).
        One cut short without a reply is remembered for ``answer_cut_short``."""
        self._table.leave(running.ctx)
        if reply is None:
            if self._cut_short is None:
                self._cut_short = []
            self._cut_short.append(running)
        batch = running.batch
        if batch is None:
            if reply is not None:
                self._out.hold(reply, running.ctx.id)
            self._task_done()
            return
        batch.replies[running.index] = reply  # type: ignore[assignment]  # (bytes in a batch)
        if batch.item_done():
            whole = batch.reply() if reply is not None else None
            if whole is not None:
                self._out.hold(whole)
            if batch.counted:
                self._task_done()

    def answer_cut_short(self) -> None:
        """The connection failed on a fault of ours: each request that cut short, and its
        client did not cancel, is answered -32603 (held for the outbox's last flush; batch
        items inside their batch's reply), as a handler's own failure would be."""
        done: list[Batch] = []
        for running in self._cut_short or ():
            ctx = running.ctx
            if ctx.no_reply:
                continue
            reply = error_reply(internal_error(), ctx.id)
            batch = running.batch
            if batch is None:
                self._out.hold(reply, ctx.id)
                continue
            batch.replies[running.index] = reply
            if batch.unfinished == 0 and batch not in done:  # (its walk had ended)
                done.append(batch)
        for batch in done:
            whole = batch.reply()
            if whole is not None:
                self._out.hold(whole)
        self._cut_short = None

    async def _batch_item_done(self, batch: Batch, *, in_reader: bool) -> None:
        """One suspended item (or the walk) finished; the last one sends the batch reply."""
        if not batch.item_done():
            return
        try:
            reply = batch.reply()
            if reply is not None:
                await (self._out.answer(reply) if in_reader else self._out.send(reply))
        finally:
            if batch.counted:
                self._task_done()
