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

Collaborators, each with one job: the ``Intake`` (the channel's frames, and how reading
ends), the ``Reader`` (generations: what is read, run through the request engine), the
``Replies`` (where the replies of suspended requests and batches go), the ``Assembler`` (a
request's admission and context), the ``RequestTable`` (admission, in flight, cancellation,
the ids of the server's own requests; sans-IO), the session's ``Lifecycle`` (sans-IO,
``runtime.protocol``), the ``ServerRequests`` (the server's requests to the client and their
answers) and the ``Outbox`` (output: whichever task finds no write in progress flushes the
queue in one write). This module holds supervision, the ``Peer`` API and ``run_request``.

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

import trio

from ..protocol import (
    Envelope,
    RequestId,
    ToolCall,
    encode_notification,
)
from . import _engine as engine
from ._assembler import Assembler
from ._channel import MessageChannel
from ._context import RequestContext
from ._dispatch import Dispatcher
from ._intake import Intake
from ._limits import Limits
from ._outbox import Outbox
from ._reader import Reader
from ._replies import Replies
from ._requests import RequestTable
from ._rounds import Rounds
from ._server_requests import ServerRequests, Waiter
from ._session import Session

__all__ = ["Connection"]

log = logging.getLogger("mcp_runtime.connection")

_connection_ids = itertools.count(1)


class Connection:
    """Serves one message channel until it ends. Also the handlers' ``Peer``."""

    __slots__ = (
        "_assembler",
        "_at_close",
        "_broke",
        "_closing",
        "_drain_scope",
        "_drained",
        "_ended",
        "_id",
        "_intake",
        "_opened",
        "_out",
        "_outside",
        "_poke",
        "_reader",
        "_replies",
        "_requests",
        "_rounds",
        "_server_requests",
        "_shutdown",
        "_table",
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
        self._table: RequestTable[Waiter] = RequestTable(
            limits.max_in_flight,
            session.first_request_id,
            # (``MessageChannel.refuses_duplicate_ids``: a channel that judges ids itself.)
            judges_ids=not getattr(channel, "refuses_duplicate_ids", False),
        )
        self._out = Outbox(channel, limits, self._id, self._output_broke)
        self._assembler = Assembler(dispatcher, limits.request_timeout, self._table)
        self._intake = Intake(channel, self._out, self._assembler, session, self._id)
        self._replies = Replies(self._out, self._table, self._on_idle)
        self._server_requests = ServerRequests(self._out, self._table, self._id)
        self._reader = Reader(
            channel=channel,
            intake=self._intake,
            outbox=self._out,
            replies=self._replies,
            server_requests=self._server_requests,
            table=self._table,
            assembler=self._assembler,
            dispatcher=dispatcher,
            session=session,
            peer=self,
            limits=limits,
            connection_id=self._id,
        )
        self._drained: trio.Event | None = None
        #: The nursery of the requests (and of ``start_soon`` tasks) while serving.
        self._requests: trio.Nursery | None = None
        #: The connection is ending: requests still running get no reply.
        self._closing = False
        #: In-flight requests running in other tasks (``run_request``); a dict for its size:
        #: every idle session holds one.
        self._outside: dict[RequestContext, None] = {}
        self._broke: str | None = None
        #: The drain after reading ended (shutdown bounds it too, see ``_watch_shutdown``).
        self._drain_scope: trio.CancelScope | None = None
        #: ``at_close`` callbacks (None until the first; "ended" once they ran).
        self._at_close: list[Callable[[], None]] | None = None
        self._ended = False
        self._opened = False
        #: A channel read only while it has input (``MessageChannel.receive_nowait``) is
        #: served in rounds, only while there is work (``Rounds``); None for the others.
        wake = getattr(channel, "wake", None) if hasattr(channel, "receive_nowait") else None
        self._rounds = None if wake is None else Rounds(wake)
        #: What a round waits on: reading parked or ended, a request or task in its nursery
        #: finished.
        self._poke: trio.Event | None = None
        if self._rounds is not None:
            self._intake.on_settle = self._nudge

    @property
    def ended(self) -> bool:
        """The connection has ended (``at_close`` callbacks ran); False while it serves or,
        for an idle-exit channel, while it is idle between ``serve`` rounds."""
        return self._ended

    @property
    def close_reason(self) -> str:
        """Why the connection ended (or "running"): the output broke, else why reading ended."""
        return self._broke or self._intake.end_reason

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
        change to many connections from the publishing task."""
        return self.send_nowait(encode_notification(method, params), related)

    def send_nowait(self, data: bytes, related: RequestId | None = None) -> bool:
        """``notify_nowait`` of a notification encoded already: one change encoded once
        for many connections."""
        requests = self._requests
        if requests is None or self._rounds is not None:
            if self._rounds is None or not self._opened:
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
        requests, rounds = self._requests, self._rounds
        if requests is not None:
            if rounds is None:
                requests.start_soon(fn, name=name)
                return
            try:
                requests.start_soon(self._run_hosted, fn, name=name or fn)
                return
            except RuntimeError:
                pass
        if rounds is None or not self._opened or self._ended or self._closing:
            raise RuntimeError("the connection is not serving")
        rounds.host(fn, name)  # idle, or the round's nursery just closed: the next round

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
        return await self._server_requests.request(method, params, timeout=timeout, related=related)

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
        rounds = self._rounds
        if rounds is not None:
            rounds.serving = True
        if not self._opened:
            log.debug("connection open conn=%s transport=%s", self._id, self.session.transport)
        try:
            # One nursery and no scope of its own (each costs memory an idle session would
            # hold): the shutdown watcher runs in the requests nursery, and broken output
            # cancels that nursery's scope (what follows it here is shielded anyway).
            try:
                idle = await self._serve_requests(started)
            except Exception:
                self._broke = "crashed"  # (stdio serves on with a new connection: _server)
                log.exception("connection crashed conn=%s", self._id)
                # What the fault cut short gets -32603, in the flush below.
                self._replies.answer_cut_short()
            finally:
                if not idle:
                    self._cancel_outside_requests()
                    self._server_requests.fail_all()
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
            if rounds is not None:
                rounds.serving = False

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
                if await self._serve_round(requests, started):
                    return False
            # Idle-exit channels only: the reader parked and the nursery's tasks ended.
            self._requests = None
            if self._broke is not None:  # (it cancelled the round: the connection ends)
                return False
            started = None
            assert self._rounds is not None
            if not self._rounds.more(self._intake.ended):
                return True

    async def _serve_round(
        self, requests: trio.Nursery, started: Callable[[Connection], None] | None
    ) -> bool:
        """One round in ``requests``: True once the connection ended (its requests drained
        and the nursery cancelled), False when the reader parked (the nursery then waits for
        the tasks still in it before the round ends)."""
        reader, intake = self._reader, self._intake
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
            assert self._rounds is not None
            wanted, hosted = self._rounds.take()
            if wanted:
                reader.resume(requests)
            for fn, name in hosted:
                requests.start_soon(self._run_hosted, fn, name=name or fn)
        if self._rounds is None:
            await intake.wait_ended()
        else:
            while not intake.ended:
                if intake.parked and not requests.child_tasks:
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
        if not self._intake.parked or self._ended:
            return
        requests = self._requests
        if requests is not None and self._reader.resume(requests):
            return
        assert self._rounds is not None
        self._rounds.want_input()

    async def _drain_and_end(self, requests: trio.Nursery) -> None:
        reason = self.close_reason
        if reason == "shutdown":
            grace = self.limits.shutdown_grace
        elif reason == "eof" and self.drain_on_eof:
            grace = math.inf
            # Shutdown seen by this connection's watcher or, for connections watched by
            # one shared watcher (``stop_reading``), by that one before the drain began.
            if self._intake.stopping or (self._shutdown is not None and self._shutdown.is_set()):
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
        # shutting down" (every accepted request gets one reply).
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
        if self._rounds is not None:
            self.resume()  # a parked reader reads again, to see it

    def _on_idle(self) -> None:
        if self._drained is not None:
            self._drained.set()
        if self._poke is not None:
            self._poke.set()

    def _output_broke(self, reason: str) -> None:
        self._broke = reason
        if self._requests is not None:
            self._requests.cancel_scope.cancel()
        elif self._rounds is not None and self._opened and not self._ended:
            self._rounds.ask()  # idle: a round ends it

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
        request's own is a large part of a session POST's cost (benchmarks/README.md, "A
        caller's cancel scope").
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
