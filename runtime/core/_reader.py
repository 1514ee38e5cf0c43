"""Reader generations: the input side of the connection supervisor.

A reader generation is one task under its own cancel scope that reads frames and runs each
request's first step itself (``runtime._eager``). A request that finishes there costs no
task and no cancel scope. A request that suspends makes the generation its task (the scope
becomes the request's scope: in flight, cancellable, timed) and a new generation reads on;
batch items run the same way. Running a request (its first step, and the rest for one that
suspended) is ``_runner``'s ``RequestRunning``, which ``ReaderGenerations`` builds on. See
``_connection`` for the whole structure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio
from msgspec import Raw

from ..framing import FramingError, escape_excerpt
from ._channel import MessageChannel
from ._dispatch import Dispatcher
from ._errors import INVALID_REQUEST, PARSE_ERROR, JSONRPCError
from ._jsonrpc import Envelope, Kind, classify, decode_frame, decode_item, encode_error
from ._limits import Limits
from ._outbox import Outbox
from ._runner import RequestRunning, _Batch, _Runner
from ._session import Session

__all__ = ["ReaderGenerations"]

log = logging.getLogger("mcp_runtime.connection")


class ReaderGenerations(RequestRunning):
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
        _active: int
        _out: Outbox
        _requests: trio.Nursery | None
        _reader_scope: trio.CancelScope | None
        _reader_waiting: bool
        _stop_reading: bool
        _reading_ended: trio.Event | None

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
        except BaseException as exc:
            if runner is not None:
                # Cut short by the end of the connection after its grace: still answered
                # (issue 16 item 4), held for the outbox's last flush.
                ending = self._answer_unfinished and isinstance(exc, trio.Cancelled)
                self._abandon(runner, self._shutting_down_reply(runner) if ending else None)
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
