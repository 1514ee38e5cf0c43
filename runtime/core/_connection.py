"""The connection supervisor: reader generations that run requests eagerly.

Most requests finish without ever waiting (a tool that computes and returns). For those a
task and a cancel scope of their own would cost more than the request, so the reader runs
each request's first step itself (``_eager.start``) and queues the reply. A request that
suspends turns the reader into that request's task, and a new reader generation goes on
reading: a "reader generation" is one task under its own cancel scope that reads frames and
runs requests until one of them suspends, then finishes that request and ends.

Structure (all under the nursery that ``serve`` opens, so nothing outlives the connection)::

    serve
    ├── shutdown watcher  stops reading when the server shuts down
    └── requests nursery  (serve waits for "reading ended", then grace, then cancels it)
        ├── reader generation N   reads, decodes, validates; runs requests and batch items
        │                         eagerly; queues replies and writes them, coalesced, when
        │                         it would wait for input
        ├── generation N-1        became the task of the request (or batch item) that
        │                         suspended in it; its scope is now that request's scope
        ├── ...
        └── Peer.start_soon tasks

Only the current reader calls ``channel.receive``; a generation hands reading (and the
rest of a batch it was walking) to the next one before it finishes its request. Output has
no task of its own: replies go to an outbox and whichever task finds no write in progress
flushes it in one write. The input side lives in ``_reader`` (``ReaderGenerations``, built on
``_runner``'s ``RequestRunning``, which runs each request), the handling of incoming messages
(admission, notifications, responses) in ``_messages`` (``IncomingMessages``), the output
side in ``_outbox``; this module holds supervision, the ``Peer`` API and ``run_request``.

Cancellation contract: ``notifications/cancelled`` cancels the scope of a request that
suspended; its ``finally`` blocks run and no response is sent (MCP basic/utilities/
cancellation). A request that completes in its first step never reaches a checkpoint, so
nothing could cancel it anyway: it is never in the in-flight table. When input ends (EOF)
or the server shuts down, reading stops, in-flight requests get a grace period to finish
and are then cancelled; queued output is flushed before the channel closes.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio
from msgspec import Raw

from ..framing import escape_excerpt
from ._channel import MessageChannel
from ._context import RequestContext
from ._dispatch import Dispatcher
from ._errors import CONNECTION_CLOSED, INTERNAL_ERROR, REQUEST_TIMEOUT, JSONRPCError
from ._jsonrpc import (
    REQUEST_ID_TYPES,
    Envelope,
    RequestId,
    encode_error,
    encode_notification,
    encode_request,
    id_key,
)
from ._limits import Limits
from ._messages import IncomingMessages
from ._outbox import Outbox
from ._reader import ReaderGenerations
from ._runner import _InFlight
from ._session import Session

__all__ = ["CONNECTION_CLOSED", "Connection"]

log = logging.getLogger("mcp_runtime.connection")

#: Code used for server-to-client requests that die with their connection (as the SDKs do).
_connection_ids = itertools.count(1)


class _Waiter:
    __slots__ = ("error", "event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Raw | None = None
        self.error: JSONRPCError | None = None


class Connection(ReaderGenerations, IncomingMessages):
    """Serves one message channel until it ends. Also the handlers' ``Peer``."""

    def __init__(
        self,
        channel: MessageChannel,
        dispatcher: Dispatcher,
        *,
        limits: Limits | None = None,
        session: Session | None = None,
        shutdown: trio.Event | None = None,
        connection_id: str | None = None,
        drain_on_eof: bool = False,
    ) -> None:
        self.channel = channel
        # Channels that can tell a ready frame from one that needs a read (FramedChannel)
        # let the reader coalesce the replies to pipelined requests; others flush each one.
        self._receive_nowait: Callable[[], bytes] | None = getattr(channel, "receive_nowait", None)
        #: When input ends, wait for every in-flight request (each still bounded by
        #: ``limits.request_timeout``) instead of ``limits.eof_grace``: for channels whose
        #: input ends before their answers are due, like one HTTP POST.
        self.drain_on_eof = drain_on_eof
        self.dispatcher = dispatcher
        self.limits = limits or Limits()
        self.session = session or Session()
        self._shutdown = shutdown
        self._id = connection_id or f"c{next(_connection_ids)}"
        self._in_flight: dict[tuple[type, RequestId], _InFlight] = {}
        self._pending: dict[tuple[type, RequestId], _Waiter] = {}
        self._next_request_id = itertools.count(1)
        # Suspended requests and batches (each would have been a task of its own).
        self._active = 0
        self._drained: trio.Event | None = None
        # Output: queued, coalesced, written by whichever task finds no write in progress.
        self._out = Outbox(channel, self.limits, self._id, self._output_broke)
        self._connection_scope: trio.CancelScope | None = None
        self._requests: trio.Nursery | None = None
        # Input: the current reader generation's scope; shutdown cancels it only while the
        # reader waits for input (``_reader_waiting``), never while it runs a request.
        self._reader_scope: trio.CancelScope | None = None
        self._reader_waiting = False
        self._stop_reading = False
        self._reading_ended: trio.Event | None = None
        #: The connection is ending: requests still running get no reply.
        self._closing = False
        #: In-flight requests running in other tasks (``run_request``).
        self._outside: set[_InFlight] = set()
        self.close_reason = "running"
        self._answer_unfinished = False
        self._drain_scope: trio.CancelScope | None = None
        self._peer = self  # what handlers talk back to (the mixins make contexts)

    # -- Peer -------------------------------------------------------------------------------

    @property
    def connection_id(self) -> str:
        return self._id

    @property
    def in_flight(self) -> int:
        """Requests that suspended and have not finished (those that never wait never count)."""
        return len(self._in_flight)

    async def notify(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> None:
        await self._out.send(encode_notification(method, params), related)

    def start_soon(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        """Run ``fn()`` beside this connection's requests for the rest of the connection.

        Not a request: it holds no in-flight slot and the connection does not wait for it
        (after in-flight requests drained it is cancelled). For per-session services such
        as delivering unsolicited notifications. Only while the connection serves.
        """
        if self._requests is None:
            raise RuntimeError("the connection is not serving")
        self._requests.start_soon(fn, name=name)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float = 60.0,
        related: RequestId | None = None,
    ) -> Any:
        request_id = next(self._next_request_id)
        key = id_key(request_id)
        waiter = self._pending[key] = _Waiter()
        try:
            await self._out.send(encode_request(request_id, method, params), related)
            try:
                with trio.move_on_after(timeout):
                    await waiter.event.wait()
            except trio.Cancelled:
                # The asking request was cancelled: tell the client to stop working on ours
                # (MCP basic/utilities/cancellation: either side may cancel its requests).
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await self.notify(
                        "notifications/cancelled",
                        {"requestId": request_id, "reason": "cancelled"},
                        related=related,
                    )
                raise
            if not waiter.event.is_set():
                await self.notify(
                    "notifications/cancelled",
                    {"requestId": request_id, "reason": "timeout"},
                    related=related,
                )
                raise JSONRPCError(REQUEST_TIMEOUT, f"Request {method!r} timed out")
            if waiter.error is not None:
                raise waiter.error
            assert waiter.result is not None
            return msgspec.json.decode(waiter.result)
        finally:
            del self._pending[key]

    # -- supervision ------------------------------------------------------------------------

    async def serve(self, started: Callable[[Connection], None] | None = None) -> None:
        """Serve until input ends, the server shuts down, or the peer breaks.

        Never raises for protocol or I/O failures (they are logged with the connection id);
        only cancellation from outside propagates. ``started(self)`` is called once the
        connection serves (``run_request`` and ``start_soon`` work from then on).
        """
        log.debug("connection open conn=%s transport=%s", self._id, self.session.transport)
        try:
            async with trio.open_nursery() as outer:
                self._connection_scope = outer.cancel_scope
                watch_scope = trio.CancelScope()
                try:
                    await self._serve_requests(outer, watch_scope, started)
                finally:
                    self._cancel_outside_requests()
                    watch_scope.cancel()
                    self._fail_pending()
                    # Flush what is still queued (shielded, bounded by the write timeout).
                    await self._out.close()
        except Exception:
            self.close_reason = "crashed"  # a stdio server exits non-zero on it (issue 16)
            log.exception("connection crashed conn=%s", self._id)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                await self.channel.aclose()
            log.debug("connection closed conn=%s reason=%s", self._id, self.close_reason)

    async def _serve_requests(
        self,
        outer: trio.Nursery,
        watch_scope: trio.CancelScope,
        started: Callable[[Connection], None] | None,
    ) -> None:
        self._reading_ended = trio.Event()
        async with trio.open_nursery() as requests:
            self._requests = requests
            if self._shutdown is not None:
                outer.start_soon(self._watch_shutdown, self._shutdown, watch_scope)
            self._next_reader()
            if started is not None:
                started(self)
            await self._reading_ended.wait()
            if self.close_reason == "shutdown":
                grace = self.limits.shutdown_grace
            elif self.close_reason == "eof" and self.drain_on_eof:
                grace = math.inf
                if self._shutdown is not None and self._shutdown.is_set():
                    grace = self.limits.shutdown_grace
            else:
                grace = self.limits.eof_grace
            if self._active:
                with trio.move_on_after(grace) as self._drain_scope:
                    self._drained = trio.Event()
                    await self._drained.wait()
                self._drain_scope = None
                if self._active:
                    log.info(
                        "cancelling requests conn=%s count=%d after grace=%ss",
                        self._id,
                        self._active,
                        grace,
                    )
            self._answer_unfinished = True
            self._cancel_outside_requests()
            requests.cancel_scope.cancel()

    def _cancel_outside_requests(self) -> None:
        """The connection ends: cancel the requests ``run_request`` runs in other tasks
        (the requests nursery's cancellation does not reach them)."""
        self._closing = True
        for entry in list(self._outside):
            entry.scope.cancel()

    async def _watch_shutdown(self, shutdown: trio.Event, watch_scope: trio.CancelScope) -> None:
        with watch_scope:
            await shutdown.wait()
            drain = self._drain_scope
            if drain is not None:  # draining a one-POST connection: shutdown bounds it too
                drain.deadline = min(
                    drain.deadline, trio.current_time() + self.limits.shutdown_grace
                )
            # The reader stops before its next wait for input; if it is waiting right now,
            # wake it. Its scope is cancelled only then: at any other moment the reader may
            # be about to hand that scope to a request, which shutdown must not cancel.
            self._stop_reading = True
            if self._reader_waiting and self._reader_scope is not None:
                self._reader_scope.cancel()

    def _task_done(self) -> None:
        self._active -= 1
        if self._active == 0 and self._drained is not None:
            self._drained.set()

    def _fail_pending(self) -> None:
        for waiter in self._pending.values():
            if not waiter.event.is_set():
                waiter.error = JSONRPCError(CONNECTION_CLOSED, "Connection closed")
                waiter.event.set()

    # -- output -----------------------------------------------------------------------------

    def _output_broke(self, reason: str) -> None:
        self.close_reason = reason
        if self._connection_scope is not None:
            self._connection_scope.cancel()

    # -- running a request ------------------------------------------------------------------

    async def run_request(self, env: Envelope) -> bytes | None:
        """Run one request in the calling task as this connection's own, and return its
        reply instead of sending it (None: no reply, the client cancelled it or the
        connection ended).

        For requests that reach the connection beside its channel (a POST to an HTTP
        session): refused like any other (duplicate id, in-flight cap), registered in flight
        under its own cancel scope (``notifications/cancelled``, ``request_timeout`` and the
        end of the connection reach it), counted for the shutdown grace; what it sends
        meanwhile (progress, logs, server-to-client requests) goes through the channel.
        """
        request_id = env.id
        assert isinstance(request_id, REQUEST_ID_TYPES) and isinstance(env.method, str)
        if self._requests is None or self._closing:
            return None
        refusal = self._refuse(env, in_batch=False)
        if refusal is not None:
            return refusal
        params = None if isinstance(env.params, msgspec.UnsetType) else env.params
        ctx = RequestContext(env.method, request_id, params, self.session, self)
        scope = ctx.cancel_scope = trio.CancelScope()
        if self.limits.request_timeout is not None:
            scope.deadline = trio.current_time() + self.limits.request_timeout
        key = id_key(request_id)
        entry = self._in_flight[key] = _InFlight(scope, env.method)
        self._outside.add(entry)
        self._active += 1
        reply: bytes | None = None
        try:
            with scope:
                reply = await self.dispatcher.dispatch(ctx)
        except Exception:
            log.exception(
                "request failed conn=%s id=%r method=%s", self._id, request_id, env.method
            )
            reply = encode_error(request_id, INTERNAL_ERROR, "Internal error")
        finally:
            del self._in_flight[key]
            self._outside.discard(entry)
            self._task_done()
        if scope.cancelled_caught:
            if entry.cancelled_by_client:
                return None
            if self._answer_unfinished:  # the grace ran out (issue 16 item 4)
                return encode_error(
                    request_id, CONNECTION_CLOSED, "Server is shutting down: request not finished"
                )
            log.warning(
                "request timed out conn=%s id=%r method=%s", self._id, request_id, env.method
            )
            return encode_error(
                request_id,
                REQUEST_TIMEOUT,
                "Request timed out",
                {"timeoutSeconds": self.limits.request_timeout},
            )
        return reply

    # -- messages ---------------------------------------------------------------------------
    # The rest of the message handling is ``IncomingMessages`` (``_messages``).

    def _log_bad_message(self, exc: JSONRPCError, data: bytes | Raw) -> None:
        log.warning(
            "bad message conn=%s code=%d reason=%r excerpt=%s",
            self._id,
            exc.code,
            exc.message,
            escape_excerpt(bytes(data)),
        )
