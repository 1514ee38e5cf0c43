"""The connection supervisor: one channel served by reader generations that run requests
eagerly, composed of a reader, a request table and an outbox.

Most requests finish without ever waiting (a tool that computes and returns). For those a
task and a cancel scope of their own would cost more than the request, so the reader runs
each request's first step itself (the request engine, ``_engine``) and queues the reply. A
request that suspends turns the reader into that request's task, and a new reader generation
goes on reading (``_reader``).

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

A channel read only while it has input (``MessageChannel.receive_nowait``: an HTTP
session's) is served in rounds: the tree above exists while a round runs (input read,
requests or ``start_soon`` tasks running, the end); idle, the connection is plain state with
no task, nursery or cancel scope, and its channel's ``wake()`` asks for the next round.

Collaborators: the ``Reader`` (input, running requests), the ``RequestTable`` (admission,
in flight, cancellation, the server's own requests; sans-IO), the session's ``Lifecycle``
(sans-IO, ``runtime.protocol``) and the ``Outbox`` (output: whichever task finds no write in
progress flushes the queue in one write). This module holds supervision, the handling of
incoming notifications and responses, the ``Peer`` API and ``run_request``.

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
from typing import Any, Final

import msgspec
import trio
from msgspec import Raw

from ..protocol import (
    CANCELLED,
    INVALID_REQUEST,
    Envelope,
    JSONRPCError,
    RequestId,
    ToolCall,
    connection_closed,
    encode_notification,
    encode_request,
    peer_timeout,
)
from . import _engine as engine
from ._assembler import Assembler
from ._channel import MessageChannel
from ._context import RequestContext
from ._dispatch import Dispatcher
from ._limits import Limits
from ._outbox import Outbox
from ._reader import Reader
from ._requests import RequestTable
from ._session import Session

__all__ = ["Connection"]

log = logging.getLogger("mcp_runtime.connection")

_connection_ids = itertools.count(1)


class _Waiter:
    """A request of ours to the client, waiting for its answer."""

    __slots__ = ("error", "event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Raw | None = None
        self.error: JSONRPCError | None = None


class _ErrorObject(msgspec.Struct):
    code: int
    message: str
    data: Any = None


_error_decoder: Final = msgspec.json.Decoder(_ErrorObject)


class Connection:
    """Serves one message channel until it ends. Also the handlers' ``Peer``."""

    __slots__ = (
        "_assembler",
        "_at_close",
        "_broke",
        "_closing",
        "_connection_scope",
        "_drain_scope",
        "_drained",
        "_ended",
        "_hosted",
        "_id",
        "_opened",
        "_out",
        "_outside",
        "_poke",
        "_reader",
        "_requests",
        "_serving",
        "_shutdown",
        "_table",
        "_wake",
        "_wanted",
        "channel",
        "dispatcher",
        "drain_on_eof",
        "limits",
        "session",
    )

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
        #: When input ends, wait for every in-flight request (each still bounded by
        #: ``limits.request_timeout``) instead of ``limits.eof_grace``: for channels whose
        #: input ends before their answers are due, like one HTTP POST.
        self.drain_on_eof = drain_on_eof
        self.dispatcher = dispatcher
        self.limits = limits = limits or Limits()
        self.session = session = session or Session()
        self._shutdown = shutdown
        self._id = connection_id or f"c{next(_connection_ids)}"
        self._table: RequestTable[_Waiter] = RequestTable(
            limits.max_in_flight,
            session.first_request_id,
            # (``MessageChannel.refuses_duplicate_ids``: a channel that judges ids itself.)
            judges_ids=not getattr(channel, "refuses_duplicate_ids", False),
        )
        self._out = Outbox(channel, limits, self._id, self._output_broke)
        self._assembler = Assembler(dispatcher, limits.request_timeout, self._table)
        self._reader = Reader(
            channel=channel,
            outbox=self._out,
            table=self._table,  # type: ignore[arg-type]
            assembler=self._assembler,
            dispatcher=dispatcher,
            session=session,
            peer=self,
            limits=limits,
            connection_id=self._id,
            on_notification=self._on_notification,
            on_response=self._on_response,
            on_idle=self._on_idle,
        )
        self._drained: trio.Event | None = None
        self._connection_scope: trio.CancelScope | None = None
        self._requests: trio.Nursery | None = None
        #: The connection is ending: requests still running get no reply.
        self._closing = False
        #: In-flight requests running in other tasks (``run_request``).
        #: (A dict rather than a set: 64 bytes empty, not 216; issue 22 item 4.)
        self._outside: dict[RequestContext, None] = {}
        self._broke: str | None = None
        #: The drain after reading ended (shutdown bounds it too, see ``_watch_shutdown``).
        self._drain_scope: trio.CancelScope | None = None
        #: ``at_close`` callbacks (None until the first; "ended" once they ran).
        self._at_close: list[Callable[[], None]] | None = None
        self._ended = False
        self._opened = False
        #: A channel read only while it has input (``MessageChannel.receive_nowait``) is
        #: served only while there is work: ``serve`` returns when the connection is idle,
        #: and the channel's ``wake()`` asks its owner to call ``serve`` again (issue 22
        #: item 4: an idle HTTP session holds no task, nursery or cancel scope).
        self._wake: Callable[[], None] | None = (
            getattr(channel, "wake", None) if hasattr(channel, "receive_nowait") else None
        )
        #: A ``serve`` call is running (idle-exit connections: between rounds it is not).
        self._serving = False
        #: Work for the next round of an idle-exit connection: input or an end to read.
        self._wanted = False
        #: ``start_soon`` calls made while no round served, for the next one.
        self._hosted: list[tuple[Callable[[], Awaitable[object]], str | None]] | None = None
        #: What a round of an idle-exit connection waits on: reading parked or ended, a
        #: request or task in its nursery finished.
        self._poke: trio.Event | None = None
        if self._wake is not None:
            self._reader.on_settle = self._nudge

    @property
    def ended(self) -> bool:
        """The connection has ended (``at_close`` callbacks ran); False while it serves or,
        for an idle-exit channel, while it is idle between ``serve`` rounds."""
        return self._ended

    @property
    def close_reason(self) -> str:
        """Why the connection ended (or "running"): the output broke, else why reading ended."""
        return self._broke or self._reader.end_reason

    # -- Peer -------------------------------------------------------------------------------

    @property
    def connection_id(self) -> str:
        return self._id

    @property
    def in_flight(self) -> int:
        """Requests that suspended and have not finished (those that never wait never count)."""
        return len(self._table)

    async def notify(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> None:
        await self._out.send(encode_notification(method, params), related)

    def notify_nowait(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> bool:
        """``notify`` in this step, without waiting: False (nothing sent) when it would have
        to wait, or the connection is not serving; then ``notify`` it. For delivering one
        change to many connections from the publishing task (issue 22 item 3)."""
        return self.send_nowait(encode_notification(method, params), related)

    def send_nowait(self, data: bytes, related: RequestId | None = None) -> bool:
        """``notify_nowait`` of a notification encoded already: one change encoded once
        for many connections (issue 22 item 3)."""
        requests = self._requests
        if requests is None or self._wake is not None:
            if self._wake is None or not self._opened:
                return False
            # (An idle-exit connection counts its tasks: its own ``start_soon``.)
            return self._out.send_nowait(data, related, self.start_soon)
        return self._out.send_nowait(data, related, lambda fn: requests.start_soon(fn))

    def start_soon(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        """Run ``fn()`` beside this connection's requests for the rest of the connection.

        Not a request: it holds no in-flight slot and the connection does not wait for it
        (after in-flight requests drained it is cancelled). For per-session services such
        as delivering unsolicited notifications. Only while the connection serves.
        """
        requests = self._requests
        if requests is not None:
            if self._wake is None:
                requests.start_soon(fn, name=name)
                return
            try:
                requests.start_soon(self._run_hosted, fn, name=name or fn)
                return
            except RuntimeError:
                pass
        if self._wake is None or not self._opened or self._ended or self._closing:
            raise RuntimeError("the connection is not serving")
        # Idle between rounds (or the round's nursery just closed): the next round starts it.
        if self._hosted is None:
            self._hosted = []
        self._hosted.append((fn, name))
        self._ask_round()

    def at_close(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once the connection has ended (at once if it has): for
        per-connection state that needs cleaning up but no task of its own while idle."""
        if self._ended:
            fn()
            return
        if self._at_close is None:
            self._at_close = []
        self._at_close.append(fn)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float = 60.0,
        related: RequestId | None = None,
    ) -> Any:
        waiter = _Waiter()
        request_id = self._table.expect(waiter)
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
                        CANCELLED, {"requestId": request_id, "reason": "cancelled"}, related=related
                    )
                raise
            if not waiter.event.is_set():
                await self.notify(
                    CANCELLED, {"requestId": request_id, "reason": "timeout"}, related=related
                )
                raise peer_timeout(method)
            if waiter.error is not None:
                raise waiter.error
            assert waiter.result is not None
            return msgspec.json.decode(waiter.result)
        finally:
            self._table.forget(request_id)

    # -- supervision ------------------------------------------------------------------------

    async def serve(self, started: Callable[[Connection], None] | None = None) -> None:
        """Serve until input ends, the server shuts down, or the peer breaks.

        Never raises for protocol or I/O failures (they are logged with the connection id);
        only cancellation from outside propagates. ``started(self)`` is called once the
        connection serves (``run_request`` and ``start_soon`` work from then on).

        A channel read only while it has input (``MessageChannel.receive_nowait``) is served
        in rounds: ``serve`` also returns when the connection is idle (nothing to read,
        nothing running in its nursery); it lives on, ``ended`` False, and ``serve`` is called
        again (without ``started``) when the channel's ``wake()`` asks. Cancelling a round
        ends the connection, as cancelling ``serve`` always does.
        """
        idle = False
        self._serving = True
        if not self._opened:
            log.debug("connection open conn=%s transport=%s", self._id, self.session.transport)
        try:
            # One nursery and no scope of its own: the shutdown watcher runs in the requests
            # nursery, and broken output cancels that nursery's scope (what follows it here
            # is shielded anyway); issue 22 item 4, memory per idle connection.
            try:
                idle = await self._serve_requests(started)
            except Exception:
                self._broke = "crashed"  # (stdio serves on with a new connection: _server)
                log.exception("connection crashed conn=%s", self._id)
                # What the fault cut short gets -32603, in the flush below.
                self._reader.answer_cut_short()
            finally:
                if not idle:
                    self._cancel_outside_requests()
                    self._fail_pending()
                    # Flush what is still queued (shielded, bounded by the write timeout).
                    await self._out.close()
        except Exception:  # (a fault in the ending itself)
            self._broke = "crashed"
            log.exception("connection crashed conn=%s", self._id)
        finally:
            if not idle:
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await self.channel.aclose()
                self._run_at_close()
                log.debug("connection closed conn=%s reason=%s", self._id, self.close_reason)
            # (No checkpoint from here to the return: a wake-up now finds no round serving.)
            self._serving = False

    def _run_at_close(self) -> None:
        self._ended = True
        callbacks, self._at_close = self._at_close or [], None
        for fn in callbacks:
            try:
                fn()
            except Exception:
                log.exception("at_close callback failed conn=%s", self._id)

    async def _serve_requests(self, started: Callable[[Connection], None] | None) -> bool:
        """Serve until the connection ends (False) or, for an idle-exit channel, is idle
        (True)."""
        while True:
            async with trio.open_nursery() as requests:
                self._requests = requests
                self._connection_scope = requests.cancel_scope
                if await self._serve_round(requests, started):
                    return False
            # Idle-exit channels only: the reader parked and the nursery's tasks ended.
            self._requests = self._connection_scope = None
            if self._broke is not None:  # (it cancelled the round: the connection ends)
                return False
            started = None
            if not (self._wanted or self._hosted or self._reader.ended):
                return True
            # (Work arrived while the nursery was closing: another round.)

    async def _serve_round(
        self, requests: trio.Nursery, started: Callable[[Connection], None] | None
    ) -> bool:
        """One round in ``requests``: True once the connection ended (its requests drained
        and the nursery cancelled), False when the reader parked (the nursery then waits for
        the tasks still in it before the round ends)."""
        reader = self._reader
        if not self._opened:
            self._opened = True
            if self._shutdown is not None:
                # Ends with the requests nursery, which outlives the drain it may bound.
                requests.start_soon(self._watch_shutdown, self._shutdown)
            reader.start(requests)
            if started is not None:
                started(self)
        else:  # another round of an idle-exit connection
            if self._broke is not None:
                requests.cancel_scope.cancel()
            if self._wanted:
                self._wanted = False
                reader.resume(requests)
            hosted, self._hosted = self._hosted or [], None
            for fn, name in hosted:
                requests.start_soon(self._run_hosted, fn, name=name or fn)
        if self._wake is None:
            await reader.wait_ended()
        else:
            while not reader.ended:
                if reader.parked and not requests.child_tasks:
                    self._poke = None
                    return False  # idle: the round ends, and no task waits for input
                self._poke = trio.Event()
                await self._poke.wait()
            self._poke = None
        await self._drain_and_end(requests)
        return True

    def _nudge(self) -> None:
        if self._poke is not None:
            self._poke.set()

    async def _run_hosted(self, fn: Callable[[], Awaitable[object]]) -> None:
        """A ``start_soon`` task of an idle-exit connection: its end may make the round idle."""
        try:
            await fn()
        finally:
            self._nudge()

    def resume(self) -> None:
        """An idle-exit connection's channel got input or ended (or shutdown must be seen):
        read it, in the round serving now or, when none serves, in the next one (the
        channel's ``wake()`` asks its owner for it). Nothing to do while reading."""
        reader = self._reader
        if not reader.parked or self._ended:
            return
        requests = self._requests
        if requests is not None and reader.resume(requests):
            return
        self._wanted = True
        self._ask_round()

    def _ask_round(self) -> None:
        if not self._serving:
            assert self._wake is not None
            self._wake()

    async def _drain_and_end(self, requests: trio.Nursery) -> None:
        reason = self.close_reason
        if reason == "shutdown":
            grace = self.limits.shutdown_grace
        elif reason == "eof" and self.drain_on_eof:
            grace = math.inf
            # Shutdown seen by this connection's watcher or, for connections watched by
            # one shared watcher (``stop_reading``), by that one before the drain began.
            if self._reader.stopped or (self._shutdown is not None and self._shutdown.is_set()):
                grace = self.limits.shutdown_grace
        else:
            grace = self.limits.eof_grace
        if self._table.active:
            with trio.move_on_after(grace) as self._drain_scope:
                self._drained = trio.Event()
                await self._drained.wait()
            self._drain_scope = None
            if self._table.active:
                log.info(
                    "cancelling requests conn=%s count=%d after grace=%ss",
                    self._id,
                    self._table.active,
                    grace,
                )
        # The grace ran out: what is cut short now is still answered, -32000 "Server is
        # shutting down" (every accepted request gets one reply; issue 16 item 4).
        self._reader.ending = True
        self._cancel_outside_requests()
        requests.cancel_scope.cancel()

    def _cancel_outside_requests(self) -> None:
        """The connection ends: cancel the requests ``run_request`` runs in other tasks
        (the requests nursery's cancellation does not reach them)."""
        self._closing = True
        for ctx in list(self._outside):
            if self._reader.ending:
                ctx.cut_short = True  # answered -32000 (after the grace)
            else:
                ctx.no_reply = True  # the connection broke: nobody to answer
            assert ctx.cancel_scope is not None
            ctx.cancel_scope.cancel()

    async def _watch_shutdown(self, shutdown: trio.Event) -> None:
        await shutdown.wait()
        self.stop_reading()

    def stop_reading(self) -> None:
        """The server shuts down: stop reading, give in-flight requests
        ``limits.shutdown_grace``, then end (what ``shutdown`` being set does). For servers
        that watch one shutdown event for many connections instead of a task per connection."""
        drain = self._drain_scope
        if drain is not None:  # draining a one-POST connection: shutdown bounds it too
            drain.deadline = min(drain.deadline, trio.current_time() + self.limits.shutdown_grace)
        self._reader.stop()
        if self._wake is not None:
            self.resume()  # a parked reader reads again, to see it

    def _on_idle(self) -> None:
        if self._drained is not None:
            self._drained.set()
        if self._poke is not None:
            self._poke.set()

    def _fail_pending(self) -> None:
        for waiter in self._table.waiting():
            if not waiter.event.is_set():
                waiter.error = connection_closed()
                waiter.event.set()

    def _output_broke(self, reason: str) -> None:
        self._broke = reason
        if self._connection_scope is not None:
            self._connection_scope.cancel()
        elif self._wake is not None and self._opened and not self._ended:
            self._ask_round()  # idle: a round ends it

    # -- incoming notifications and responses -------------------------------------------------

    async def _on_notification(self, env: Envelope) -> None:
        assert isinstance(env.method, str)
        params = env.params if isinstance(env.params, Raw) else None
        if env.method == CANCELLED:
            self._cancel_request(params)
        ctx = RequestContext(env.method, None, params, self.session, self)
        await self.dispatcher.dispatch_notification(ctx)

    def _cancel_request(self, params: Raw | None) -> None:
        try:
            ctx = self._table.cancel(params, self.session.lifecycle)
        except JSONRPCError as exc:
            log.info("ignoring malformed notifications/cancelled conn=%s", self._id)
            # No answer on the wire: the observer hears of it.
            self._assembler.observe(exc, self.session, self._id, CANCELLED)
            return
        if ctx is not None:
            log.debug("cancelling conn=%s id=%r", self._id, ctx.id)
            assert ctx.cancel_scope is not None
            ctx.cancel_scope.cancel()

    def _on_response(self, env: Envelope) -> None:
        waiter = self._table.answered(env.id)
        if waiter is None or waiter.event.is_set():
            # JSON-RPC 2.0 section 5: a peer answers an unparseable request with id null;
            # that, and an id of no request of ours, correlates with nothing.
            log.info("dropping response to unknown request conn=%s id=%r", self._id, env.id)
            return
        if isinstance(env.error, Raw):
            try:
                err = _error_decoder.decode(env.error)
                waiter.error = JSONRPCError(err.code, err.message, err.data)
            except (msgspec.DecodeError, RecursionError):  # nesting: issue 16
                waiter.error = JSONRPCError(INVALID_REQUEST, "Malformed error object from client")
        else:
            assert isinstance(env.result, Raw)
            waiter.result = env.result
        waiter.event.set()

    # -- running a request from another task ------------------------------------------------

    async def run_request(
        self,
        env: Envelope,
        scope: trio.CancelScope | None = None,
        on_cancelled: Callable[[bytes | None], None] | None = None,
        prepared: ToolCall | None = None,
    ) -> bytes | None:
        """Run one request in the calling task as this connection's own, and return its
        reply instead of sending it (None: no reply, the client cancelled it or the
        connection ended).

        For requests that reach the connection beside its channel (a POST to an HTTP
        session): refused like any other (duplicate id, in-flight cap), registered in flight
        under its own cancel scope (``notifications/cancelled``, ``request_timeout`` and the
        end of the connection reach it), counted for the shutdown grace; what it sends
        meanwhile (progress, logs, server-to-client requests) goes through the channel.

        ``scope``, when given, is a cancel scope the caller has entered already and runs
        request after request under (a generation, as the stdio reader's): a scope of the
        request's own costs about 550 bytecodes to make, enter and leave (issue 22 target 1).
        Cancelling the request then cancels that scope: ``on_cancelled(reply)`` is called
        with what the request is answered (None: nothing; -32001 when its timeout passed;
        -32000 when the end of the connection cut it short) and ``trio.Cancelled`` propagates
        to the caller's ``with``, which answers from outside it and enters a fresh scope.

        ``prepared``, when given, is a reading of ``env.params`` made before (the transport's,
        of the POST's body or params), for ``ctx.prepared``: the params are not read again.
        """
        if not self._opened or self._closing:
            return None
        ctx = self._assembler.assemble(env, self.session, self, scope, prepared)
        if isinstance(ctx, bytes):
            return ctx  # refused
        timeout = self.limits.request_timeout
        if scope is None:
            ctx.cancel_scope = engine.own_scope(timeout)
        self._table.enter(ctx)
        self._outside[ctx] = None
        self._table.started()
        # (``ctx.takes_pieces`` is False: the dispatcher joins Pieces, the reply is bytes.)
        reply: bytes | None
        try:
            if scope is None:
                reply = await engine.run(self.dispatcher, ctx, timeout)  # type: ignore[assignment]
            else:
                reply = await engine.run_in_scope(self.dispatcher, ctx)  # type: ignore[assignment]
        except trio.Cancelled:
            if scope is not None and scope.cancel_called and on_cancelled is not None:
                on_cancelled(engine.cancelled_reply(ctx, timeout))
            raise
        finally:
            if scope is not None:
                if timeout is not None:
                    # Before anything reads ``cancel_called`` (which would cancel the scope
                    # for good past its deadline): the scope goes on serving the caller.
                    scope.deadline = math.inf
                # Nor may a context kept past its request cancel the caller's later work.
                ctx.cancel_scope = None
            self._table.leave(ctx)
            self._outside.pop(ctx, None)
            if self._table.finished():
                self._on_idle()
        if scope is not None and scope.cancel_called:
            # Cancelled after its last checkpoint: the reply stands (as it would in a scope
            # of its own), but the caller must leave the cancelled scope before answering.
            if on_cancelled is not None:
                on_cancelled(reply)
            await trio.lowlevel.checkpoint()  # raises Cancelled
        return reply
