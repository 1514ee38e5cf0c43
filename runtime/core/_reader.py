"""Reader generations: the input side of a connection.

A reader generation is one task under its own cancel scope that reads frames and runs each
request's first step itself (the request engine, ``_engine``). A request that finishes there
costs no task and no cancel scope. A request that suspends makes the generation its task (the
scope becomes the request's scope: in flight, cancellable, timed) and a new generation reads
on; batch items run the same way. Only the current generation takes frames (``Intake.next``);
a generation hands reading (and the rest of a batch it was walking) to the next one before it
finishes its request. See ``_connection`` for the whole task tree.

The reader owns the generations (the current one's scope, the nursery they run in) and what
is done with each message. What it needs of the rest of the connection it is given: the
``Intake`` (the channel's frames and how reading ends), the ``Replies`` (where the replies of
suspended requests and batches go), the ``ServerRequests`` (which the client's responses
answer), the outbox, the request table, the request assembler and the dispatcher.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

import trio
from msgspec import UNSET, Raw

from ..framing import escape_excerpt
from ..protocol import (
    CANCELLED,
    ONE_PASS_OVER,
    REQUEST_ID_TYPES,
    DecodedFrame,
    Envelope,
    JSONRPCError,
    Kind,
    Pieces,
    ToolCall,
    batch_forbidden,
    batch_shape_error,
    classify,
    decode_frame,
    decode_item,
    error_reply,
    internal_error,
)
from . import _engine as engine
from ._assembler import Assembler
from ._channel import MessageChannel
from ._context import Peer, RequestContext
from ._dispatch import Dispatcher
from ._intake import Intake
from ._limits import Limits
from ._outbox import Outbox
from ._replies import Replies, Running
from ._requests import Batch, RequestTable
from ._server_requests import ServerRequests
from ._session import Session

__all__ = ["Reader"]

log = logging.getLogger("mcp_runtime.connection")


class Reader:
    """Reads one channel in generations and runs what it reads through the request engine."""

    __slots__ = (
        "_assemble",
        "_assembler",
        "_dispatcher",
        "_id",
        "_intake",
        "_limits",
        "_nursery",
        "_out",
        "_peer",
        "_pre_read",
        "_replies",
        "_scope",
        "_server_requests",
        "_session",
        "_table",
        "_takes_pieces",
        "ending",
    )

    def __init__(
        self,
        *,
        channel: MessageChannel,
        intake: Intake,
        outbox: Outbox,
        replies: Replies,
        server_requests: ServerRequests,
        table: RequestTable[Any],
        assembler: Assembler,
        dispatcher: Dispatcher,
        session: Session,
        peer: Peer,
        limits: Limits,
        connection_id: str,
    ) -> None:
        # Channels that write a reply given as runtime.protocol.Pieces as its parts
        # (FramedChannel): a request's reply may come so (not a batch item's: they are joined).
        self._takes_pieces: bool = getattr(channel, "takes_pieces", False)
        self._intake = intake
        self._out = outbox
        self._replies = replies
        self._server_requests = server_requests
        self._table = table
        self._assembler = assembler
        self._assemble = assembler.assemble
        self._dispatcher = dispatcher
        self._pre_read = dispatcher.pre_read
        self._session = session
        self._peer = peer
        self._limits = limits
        self._id = connection_id
        self._nursery: trio.Nursery | None = None
        # The current generation's scope; ``stop`` cancels it only while the intake waits
        # for input, never while the generation runs a request.
        self._scope: trio.CancelScope | None = None
        #: Set by the connection when its grace ran out: requests cut short from then on are
        #: answered -32000 "Server is shutting down" (every accepted request gets a reply).
        self.ending = False

    # -- control (from the connection) -------------------------------------------------------

    def start(self, nursery: trio.Nursery) -> None:
        """Start the first generation in ``nursery`` (suspended requests run there too)."""
        self._nursery = nursery
        self._next_generation()

    def resume(self, nursery: trio.Nursery) -> bool:
        """Read again after parking (input arrived, or shutdown must be seen): a generation
        started in ``nursery``. False when the nursery takes no more tasks (it just closed)."""
        intake = self._intake
        if not intake.parked:
            return True
        scope = trio.CancelScope()
        try:
            nursery.start_soon(self._generation, scope, None, 0, None)
        except RuntimeError:
            return False
        self._nursery = nursery
        self._scope = scope
        intake.parked = False
        return True

    def stop(self) -> None:
        """Stop reading before the next wait for input (shutdown); wake the reader if it is
        waiting right now. Its scope is cancelled only then: at any other moment the reader
        may be about to hand that scope to a request, which shutdown must not cancel."""
        intake = self._intake
        intake.stopping = True
        if intake.waiting and self._scope is not None:
            self._scope.cancel()

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
        running: Running | None = None
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
                # Cut short by the end of the connection after its grace: still answered,
                # held for the outbox's last flush.
                ending = self.ending and isinstance(exc, trio.Cancelled)
                reply = engine.shutting_down_reply(running.ctx) if ending else None
                self._replies.abandon(running, reply)
            raise
        if running is not None:
            await self._replies.deliver(running)
        elif scope.cancelled_caught and not self._intake.ended:
            # Shutdown woke the reader while it waited for input (or for room to write
            # what it held back just before ending).
            self._scope = None
            await self._intake.end("shutdown")

    async def _read(
        self,
        scope: trio.CancelScope,
        batch: Batch | None,
        index: int,
        frame: bytes | DecodedFrame | None,
    ) -> Running | None:
        """Handle frames until a request suspends (it is returned; the next generation was
        started to read on) or this generation is done: reading ended or parked, or was
        handed to a fresh generation (None)."""
        if batch is not None:
            running = await self._walk(scope, batch, index)
            if running is not None or self._scope is not scope:
                return running
        intake = self._intake
        while True:
            if frame is None:
                frame = await intake.next()
                if frame is None:
                    self._scope = None
                    if intake.parked:
                        self._nursery = None  # (the round's, about to close: not kept idle)
                    return None
            if intake.stopping and scope.cancel_called:
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
    ) -> Running | None:
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
            intake = self._intake
            intake.waiting = True
            try:
                await self._on_notification(message)
            finally:
                intake.waiting = False
        else:
            self._server_requests.answer(message)
        return None

    async def _on_notification(self, env: Envelope) -> None:
        """``notifications/cancelled`` cancels the request it names first (MCP basic/
        utilities/cancellation), then every notification goes to the dispatcher."""
        assert isinstance(env.method, str)
        params = env.params if isinstance(env.params, Raw) else None
        if env.method == CANCELLED:
            self._cancel_request(params)
        ctx = RequestContext(env.method, None, params, self._session, self._peer)
        await self._dispatcher.dispatch_notification(ctx)

    def _cancel_request(self, params: Raw | None) -> None:
        try:
            ctx = self._table.cancel(params, self._session.lifecycle)
        except JSONRPCError as exc:
            log.info("ignoring malformed notifications/cancelled conn=%s", self._id)
            # No answer on the wire: the observer hears of it.
            self._assembler.observe(exc, self._session, self._id, CANCELLED)
            return
        if ctx is not None:
            log.debug("cancelling conn=%s id=%r", self._id, ctx.id)
            assert ctx.cancel_scope is not None
            ctx.cancel_scope.cancel()

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

    async def _on_admitted(self, scope: trio.CancelScope, ctx: RequestContext) -> Running | None:
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
    ) -> Running | None:
        refusal = self._batch_refusal(items)
        if refusal is not None:
            if self._dispatcher.on_refusal is not None:
                self._observe(refusal)
            await self._out.answer(error_reply(refusal))
            return None
        return await self._walk(scope, Batch(items, read), 0)

    def _batch_refusal(self, items: list[Raw]) -> JSONRPCError | None:
        """Why the batch is refused whole (None: it is not): empty, a batch the session's
        revision does not allow, or over ``Limits.max_batch_size`` (``batch_shape_error``
        words the first and the last, as for an HTTP POST's batch)."""
        if items:
            forbidden = self._dispatcher.batch_policy(self._session)
            if forbidden is not None:
                return batch_forbidden(forbidden)
        return batch_shape_error(len(items), self._limits.max_batch_size)

    async def _walk(self, scope: trio.CancelScope, batch: Batch, first: int) -> Running | None:
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
                self._server_requests.answer(env)
        await self._replies.batch_item_done(batch, in_reader=True)
        return None

    # -- running a request in this generation -----------------------------------------------

    def _start(
        self, scope: trio.CancelScope, ctx: RequestContext, batch: Batch | None, index: int
    ) -> tuple[bytes | Pieces | None, Running | None]:
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
        return None, Running(ctx, suspended, batch, index)
