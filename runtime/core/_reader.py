"""Reader generations: the input side of the connection supervisor.

A reader generation is one task under its own cancel scope that reads frames and runs each
request's first step itself (``runtime._eager``). A request that finishes there costs no
task and no cancel scope. A request that suspends makes the generation its task (the scope
becomes the request's scope: in flight, cancellable, timed) and a new generation reads on;
batch items run the same way. See ``_connection`` for the whole structure.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec
import trio
from msgspec import Raw

from .._eager import Suspended, finish, start
from ..framing import FramingError, escape_excerpt
from ._channel import MessageChannel
from ._context import Peer, RequestContext
from ._dispatch import Dispatcher
from ._errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, REQUEST_TIMEOUT, JSONRPCError
from ._jsonrpc import (
    REQUEST_ID_TYPES,
    Envelope,
    Kind,
    RequestId,
    classify,
    decode_frame,
    decode_item,
    encode_error,
    id_key,
)
from ._limits import Limits
from ._outbox import Outbox
from ._session import Session

__all__ = ["ReaderGenerations"]

log = logging.getLogger("mcp_runtime.connection")


class _InFlight:
    __slots__ = ("cancelled_by_client", "method", "scope")

    def __init__(self, scope: trio.CancelScope, method: str) -> None:
        self.scope = scope
        self.method = method
        self.cancelled_by_client = False


class _Batch:
    """A batch whose items may finish in different tasks; the last to finish replies."""

    __slots__ = ("counted", "items", "replies", "unfinished")

    def __init__(self, items: list[Raw]) -> None:
        self.items = items
        self.replies: list[bytes | None] = [None] * len(items)
        #: Suspended items still running, plus one held by the walk over the items until
        #: every item has been started (by whichever reader generation is walking).
        self.unfinished = 1
        #: Counted in ``Connection._active`` (from the first item that suspended).
        self.counted = False

    def reply(self) -> bytes | None:
        """JSON-RPC 2.0 section 6: the answers in item order; none at all for notifications."""
        answered = [reply for reply in self.replies if reply is not None]
        return b"[" + b",".join(answered) + b"]" if answered else None


class _Runner:
    """A request (or batch item) that suspended: the generation that started it runs it on."""

    __slots__ = ("batch", "entry", "index", "method", "reply", "request_id", "suspended")

    def __init__(
        self,
        env: Envelope,
        entry: _InFlight,
        suspended: Suspended[bytes],
        batch: _Batch | None,
        index: int,
    ) -> None:
        assert isinstance(env.id, REQUEST_ID_TYPES) and isinstance(env.method, str)
        self.request_id: RequestId = env.id
        self.method = env.method
        self.entry = entry
        self.suspended = suspended
        self.batch = batch
        self.index = index
        self.reply: bytes | None = None


class ReaderGenerations:
    """The input side of :class:`~runtime.core._connection.Connection` (a mixin): reader
    generations that read frames and run requests and batch items eagerly."""

    if TYPE_CHECKING:  # provided by Connection
        channel: MessageChannel
        dispatcher: Dispatcher
        limits: Limits
        session: Session
        close_reason: str
        _id: str
        _receive_nowait: Callable[[], bytes] | None
        _in_flight: dict[tuple[type, RequestId], _InFlight]
        _active: int
        _out: Outbox
        _requests: trio.Nursery | None
        _reader_scope: trio.CancelScope | None
        _reader_waiting: bool
        _stop_reading: bool
        _reading_ended: trio.Event | None
        _peer: Peer  # the connection itself

        def _task_done(self) -> None: ...
        def _refuse(self, env: Envelope, in_batch: bool) -> bytes | None: ...
        def _log_bad_message(self, exc: JSONRPCError, data: bytes | Raw) -> None: ...
        @staticmethod
        def _error_reply(exc: JSONRPCError) -> bytes: ...
        async def _on_notification(self, env: Envelope) -> None: ...
        def _on_response(self, env: Envelope) -> None: ...

    def _next_reader(
        self, batch: _Batch | None = None, index: int = 0, frame: bytes | None = None
    ) -> None:
        """Start the next reader generation: it walks the rest of ``batch`` from ``index``,
        handles ``frame``, then reads on. Called with nothing in between the current reader
        handing off and that reader's request continuing, so there is one reader at a time."""
        scope = trio.CancelScope()
        self._reader_scope = scope
        assert self._requests is not None
        self._requests.start_soon(self._generation, scope, batch, index, frame)

    async def _generation(
        self,
        scope: trio.CancelScope,
        batch: _Batch | None,
        index: int,
        frame: bytes | None,
    ) -> None:
        """Read under ``scope`` until reading ends or a request started here suspends; in the
        second case ``scope`` becomes that request's scope and this task runs it to the end."""
        runner: _Runner | None = None
        try:
            with scope:
                runner = await self._read(scope, batch, index, frame)
                if runner is not None:
                    # Nothing may await between the request's first step and this line:
                    # the trap it yielded is handed back to trio here.
                    runner.reply = await self._finish(runner)
            if runner is not None and scope.cancelled_caught:
                runner.reply = self._cancelled_reply(runner)
        except BaseException:
            if runner is not None:
                self._abandon(runner)
            raise
        if runner is not None:
            await self._deliver(runner)
        elif scope.cancelled_caught:
            # Shutdown woke the reader while it waited for input (or for room to write
            # what it held back just before ending).
            assert self._reading_ended is not None
            if not self._reading_ended.is_set():
                self.close_reason = "shutdown"
                await self._end_reading()

    async def _read(
        self,
        scope: trio.CancelScope,
        batch: _Batch | None,
        index: int,
        frame: bytes | None,
    ) -> _Runner | None:
        """Handle frames until a request suspends (its runner is returned; the next
        generation was started to read on) or this generation is done: reading ended, or
        was handed to a fresh generation (None)."""
        if batch is not None:
            runner = await self._walk(scope, batch, index)
            if runner is not None or self._reader_scope is not scope:
                return runner
        while True:
            if frame is None:
                frame = await self._next_frame()
                if frame is None:
                    await self._end_reading()
                    return None
            if self._stop_reading and scope.cancel_called:
                # Shutdown cancelled this scope while the read was completing anyway. A
                # request suspending in it would be cancelled at once (and answered as timed
                # out): the frame goes to a fresh generation, which stops reading after it.
                self._next_reader(frame=frame)
                return None
            runner = await self._on_frame(scope, frame)
            if runner is not None or self._reader_scope is not scope:
                return runner
            frame = None

    async def _next_frame(self) -> bytes | None:
        """The next frame, or None once reading has ended (``close_reason`` says why).

        Replies held back are written before the reader waits for input, so a burst of
        pipelined requests gets one write and a lone request gets its answer at once.
        """
        receive_nowait = self._receive_nowait
        while True:
            try:
                if receive_nowait is not None:
                    try:
                        return receive_nowait()
                    except trio.WouldBlock:
                        pass
                await self._out.release()
                if self._stop_reading:
                    self.close_reason = "shutdown"
                    return None
                self._reader_waiting = True
                try:
                    return await self.channel.receive()
                finally:
                    self._reader_waiting = False
            except trio.EndOfChannel:
                self.close_reason = "eof"
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
                code = INVALID_REQUEST if "exceeds" in exc.reason else PARSE_ERROR
                await self._out.answer(encode_error(None, code, f"Framing error: {exc.reason}"))
                if exc.fatal:
                    self.close_reason = "framing-error"
                    return None
            except trio.TooSlowError as exc:
                self.close_reason = str(exc) or "read-timeout"
                log.warning("closing conn=%s reason=%s", self._id, self.close_reason)
                return None
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self.close_reason = "peer-gone"
                log.info("closing conn=%s reason=read-failed error=%r", self._id, exc)
                return None

    async def _end_reading(self) -> None:
        self._reader_scope = None
        try:
            await self._out.release()
        finally:
            assert self._reading_ended is not None
            self._reading_ended.set()

    async def _on_frame(self, scope: trio.CancelScope, frame: bytes) -> _Runner | None:
        try:
            message = decode_frame(frame)
            kind = None if isinstance(message, list) else classify(message)
        except JSONRPCError as exc:
            self._log_bad_message(exc, frame)
            await self._out.answer(self._error_reply(exc))
            return None
        if isinstance(message, list):
            return await self._on_batch(scope, message)
        if kind is Kind.REQUEST:
            return await self._on_request(scope, message)
        if kind is Kind.NOTIFICATION:
            # Shutdown may interrupt a notification handler here, as it would a read.
            self._reader_waiting = True
            try:
                await self._on_notification(message)
            finally:
                self._reader_waiting = False
        else:
            self._on_response(message)
        return None

    async def _on_request(self, scope: trio.CancelScope, env: Envelope) -> _Runner | None:
        refusal = self._refuse(env, in_batch=False)
        if refusal is not None:
            await self._out.answer(refusal)
            return None
        reply, runner = self._start(scope, env, None, 0)
        if runner is None:
            assert reply is not None
            if self._reader_scope is scope:
                await self._out.answer(reply, env.id)  # type: ignore[arg-type]
            else:
                # Handed on by _start: this scope is cancelled and must not await again.
                self._out.hold(reply, env.id)  # type: ignore[arg-type]
            return None
        self._active += 1
        self._next_reader()
        return runner

    async def _on_batch(self, scope: trio.CancelScope, items: list[Raw]) -> _Runner | None:
        refusal = self._refuse_batch(items)
        if refusal is not None:
            await self._out.answer(refusal)
            return None
        return await self._walk(scope, _Batch(items), 0)

    def _refuse_batch(self, items: list[Raw]) -> bytes | None:
        if not items:
            return encode_error(None, INVALID_REQUEST, "Invalid Request: empty batch")
        forbidden = self.dispatcher.batch_policy(self.session)
        if forbidden is not None:
            return encode_error(None, INVALID_REQUEST, forbidden)
        limit = self.limits.max_batch_size
        if len(items) > limit:
            return encode_error(
                None,
                INVALID_REQUEST,
                f"Invalid Request: batch of {len(items)} items exceeds the limit of {limit}",
                {"maxBatchSize": limit},
            )
        return None

    async def _walk(self, scope: trio.CancelScope, batch: _Batch, first: int) -> _Runner | None:
        """Run the batch's items from ``first`` on, in order (JSON-RPC 2.0 section 6, each item
        isolated from its neighbours). An item that suspends gets this generation; the next
        generation walks on from the item after it. Returns that item's runner, or None when
        the walk is over or was handed on."""
        items = batch.items
        for index in range(first, len(items)):
            item = items[index]
            try:
                env = decode_item(item)
                kind = classify(env)
            except JSONRPCError as exc:
                self._log_bad_message(exc, item)
                batch.replies[index] = self._error_reply(exc)
                continue
            if kind is Kind.REQUEST:
                refusal = self._refuse(env, in_batch=True)
                if refusal is not None:
                    batch.replies[index] = refusal
                    continue
                reply, runner = self._start(scope, env, batch, index)
                if runner is None:
                    batch.replies[index] = reply
                    if self._reader_scope is not scope:
                        return None  # handed on by _start: this scope is cancelled
                    continue
                batch.unfinished += 1
                if not batch.counted:
                    batch.counted = True
                    self._active += 1
                self._next_reader(batch, index + 1)
                return runner
            if kind is Kind.NOTIFICATION:
                await self._on_notification(env)
            else:
                self._on_response(env)
        await self._batch_item_done(batch, in_reader=True)
        return None

    # -- running a request ------------------------------------------------------------------

    def _start(
        self, scope: trio.CancelScope, env: Envelope, batch: _Batch | None, index: int
    ) -> tuple[bytes | None, _Runner | None]:
        """Run an admitted request's first step in this generation, under its scope.

        Returns ``(reply, None)`` when it finished there, or ``(None, runner)`` when it
        suspended: then it is registered in flight with ``scope`` as its cancel scope.
        """
        request_id = env.id
        assert isinstance(request_id, REQUEST_ID_TYPES) and isinstance(env.method, str)
        params = None if isinstance(env.params, msgspec.UnsetType) else env.params
        ctx = RequestContext(
            env.method, request_id, params, self.session, self._peer, in_batch=batch is not None
        )
        ctx.cancel_scope = scope
        timeout = self.limits.request_timeout
        if timeout is not None:
            # In force from the first step on: handlers may plan by it
            # (trio.current_effective_deadline()).
            scope.deadline = trio.current_time() + timeout
        try:
            done, outcome = start(self.dispatcher.dispatch(ctx))
        except Exception:
            # The dispatcher turns handler failures into replies; this is a bug below it.
            # It must not take the reader (and every later request) down with it.
            log.exception(
                "request failed conn=%s id=%r method=%s", self._id, request_id, env.method
            )
            done, outcome = True, encode_error(request_id, INTERNAL_ERROR, "Internal error")
        if done:
            assert isinstance(outcome, bytes)
            if timeout is not None:
                scope.deadline = math.inf
                if scope.cancel_called:
                    # The first step outlasted its deadline and something looked (reading
                    # ``cancel_called`` past the deadline cancels the scope, for good). The
                    # reply stands, as it would have in a task of its own that never waited,
                    # but reading moves to a fresh generation (with the rest of the batch).
                    self._next_reader(batch, index + 1)
            # The scope goes on reading and serving other requests: this finished request's
            # context must not report their cancellation as its own.
            ctx.cancel_scope = None
            return outcome, None
        assert isinstance(outcome, Suspended)
        entry = self._in_flight[id_key(request_id)] = _InFlight(scope, env.method)
        return None, _Runner(env, entry, outcome, batch, index)

    async def _finish(self, runner: _Runner) -> bytes:
        try:
            return await finish(runner.suspended)
        except Exception:
            log.exception(
                "request failed conn=%s id=%r method=%s",
                self._id,
                runner.request_id,
                runner.method,
            )
            return encode_error(runner.request_id, INTERNAL_ERROR, "Internal error")

    def _cancelled_reply(self, runner: _Runner) -> bytes | None:
        """The reply for a request whose scope was cancelled: none when the client cancelled
        it, else -32001 (its ``request_timeout`` passed)."""
        if runner.entry.cancelled_by_client:
            return None
        log.warning(
            "request timed out conn=%s id=%r method=%s",
            self._id,
            runner.request_id,
            runner.method,
        )
        return encode_error(
            runner.request_id,
            REQUEST_TIMEOUT,
            "Request timed out",
            {"timeoutSeconds": self.limits.request_timeout},
        )

    async def _deliver(self, runner: _Runner) -> None:
        del self._in_flight[id_key(runner.request_id)]
        batch = runner.batch
        if batch is None:
            try:
                if runner.reply is not None:
                    await self._out.send(runner.reply, runner.request_id)
            finally:
                self._task_done()
            return
        batch.replies[runner.index] = runner.reply
        await self._batch_item_done(batch, in_reader=False)

    def _abandon(self, runner: _Runner) -> None:
        """Bookkeeping for a runner cut short from outside (the connection is ending)."""
        del self._in_flight[id_key(runner.request_id)]
        batch = runner.batch
        if batch is None:
            self._task_done()
            return
        batch.unfinished -= 1
        if batch.unfinished == 0 and batch.counted:
            self._task_done()

    async def _batch_item_done(self, batch: _Batch, *, in_reader: bool) -> None:
        """One suspended item (or the walk) finished; the last one sends the batch reply."""
        batch.unfinished -= 1
        if batch.unfinished:
            return
        try:
            reply = batch.reply()
            if reply is not None:
                await (self._out.answer(reply) if in_reader else self._out.send(reply))
        finally:
            if batch.counted:
                self._task_done()
