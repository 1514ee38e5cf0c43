"""Running a request: what a reader generation does with each request it admits.

The reader runs a request's first step itself (``_start``). A request that finishes there
has its reply at once and was never in flight. One that suspends is registered in flight
under the generation's scope and the generation finishes it (``_finish``), answers it (or
not, when the client cancelled it; -32001 when it timed out) and frees its slot; a batch
item leaves its reply in the batch, and the last item to finish sends the batch reply. Kept
apart from the reading in ``_reader``, which builds on it.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import msgspec
import trio
from msgspec import Raw

from .._eager import Suspended, finish, start
from ._context import Peer, RequestContext
from ._dispatch import Dispatcher
from ._errors import CONNECTION_CLOSED, INTERNAL_ERROR, REQUEST_TIMEOUT
from ._jsonrpc import REQUEST_ID_TYPES, Envelope, RequestId, encode_error, id_key
from ._limits import Limits
from ._outbox import Outbox
from ._session import Session

__all__ = ["ConnectionParts", "RequestRunning"]

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


class ConnectionParts:
    """What :class:`~runtime.core._connection.Connection` gives the mixins it is built from
    (declarations for the type checker only)."""

    if TYPE_CHECKING:
        dispatcher: Dispatcher
        limits: Limits
        session: Session
        _id: str
        close_reason: str
        #: Set when the grace ran out: requests cut short then are answered, not dropped.
        _answer_unfinished: bool
        _in_flight: dict[tuple[type, RequestId], _InFlight]
        _peer: Peer  # the connection itself


class RequestRunning(ConnectionParts):
    """Running requests and batch items for
    :class:`~runtime.core._connection.Connection` (a mixin; the base of its reader
    generations): their first step, and the rest for those that suspended."""

    if TYPE_CHECKING:  # provided by Connection
        _out: Outbox

        def _task_done(self) -> None: ...

        # provided by ReaderGenerations
        def _next_reader(
            self, batch: _Batch | None = None, index: int = 0, frame: bytes | None = None
        ) -> None: ...

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

    def _abandon(self, runner: _Runner, reply: bytes | None = None) -> None:
        """Bookkeeping for a runner cut short from outside (the connection is ending);
        ``reply``, when given, is held for the outbox's last flush (in its batch's reply)."""
        del self._in_flight[id_key(runner.request_id)]
        batch = runner.batch
        if batch is None:
            if reply is not None:
                self._out.hold(reply, runner.request_id)
            self._task_done()
            return
        batch.replies[runner.index] = reply
        batch.unfinished -= 1
        if batch.unfinished == 0:
            whole = batch.reply() if reply is not None else None
            if whole is not None:
                self._out.hold(whole)
            if batch.counted:
                self._task_done()

    def _shutting_down_reply(self, runner: _Runner) -> bytes:
        """The answer for a request the end of the connection cut short (issue 16 item 4:
        every accepted request gets one reply)."""
        log.info(
            "answering unfinished request conn=%s id=%r method=%s reason=%s",
            self._id,
            runner.request_id,
            runner.method,
            self.close_reason,
        )
        return encode_error(
            runner.request_id, CONNECTION_CLOSED, "Server is shutting down: request not finished"
        )

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
