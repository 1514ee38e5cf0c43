"""Parallel forwarding over remote links without per-request streams.

Over stdio, TCP, Unix, WebSocket or legacy HTTP+SSE a handshake-era remote's questions
(sampling, elicitation, roots: 2025-11-25 client/*) and log messages name no request of ours,
so on one upstream session only one 2026-07-28 request that can be asked may be in flight
(the package's rule, ``runtime.bridge``). Where another session with the remote is cheap (a
socket, not a process), each further concurrent forwarding gets an upstream session of its
own from an :class:`UpstreamPool`: whatever the remote sends on that session is that
forwarding's.

The pool holds at most ``size - 1`` extra sessions (the proxy's shared session is the first
turn), opened lazily with the same handlers as the shared one, reused when idle and closed
once idle for ``idle_timeout`` seconds. The same holds for a 2026-07-28 remote's log messages
(2026-07-28 server/utilities/logging: they name no request over such a link): a request that
carries a log level gets them from its own session. Past ``size`` forwardings in flight, a
request waits for a turn. Subscriptions, list changes and tasks stay on the shared session.

Where each upstream session is a process (a stdio remote), a :class:`ProcessBudget` counts
them all (the shared session's, each handshake-era session's, the pool's extras): past it an
extra session is not opened, and the forwarding waits for the shared session's turn instead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

import trio

from ..client import Client, ClientError, Notification
from ..framing import loggable
from ..protocol import ELICITATION_CREATE, LOG_MESSAGE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE
from ._relay import Addressee, nobody_to_ask

__all__ = [
    "DEFAULT_MAX_PARALLEL",
    "DEFAULT_MAX_UPSTREAM_PROCESSES",
    "DEFAULT_PARALLEL_IDLE_TIMEOUT",
    "Connect",
    "PooledSession",
    "ProcessBudget",
    "UpstreamPool",
    "client_error",
]

log = logging.getLogger("mcp_runtime.bridge")

#: The default of ``max_parallel`` (``--upstream-max-parallel``) on a link where another
#: upstream session is cheap (TCP, Unix, WebSocket, legacy SSE): forwardings in flight at
#: once, the shared session's included. Stdio and pipes default to 1 (one at a time).
DEFAULT_MAX_PARALLEL: Final = 4

#: The default of ``parallel_idle_timeout`` (``--upstream-parallel-idle``): seconds an extra
#: upstream session stays open unused before it is closed.
DEFAULT_PARALLEL_IDLE_TIMEOUT: Final = 30.0

#: Upstream processes held at once where each upstream session is one (a stdio remote):
#: the shared session's, one per downstream handshake-era session, the pool's extras. A
#: Python server of ours holds about 29 MiB after ``initialize`` (benchmarks' rss_init row),
#: so 16 of them about half a GiB, where the session cap of 64 would let them take 1.9 GiB.
DEFAULT_MAX_UPSTREAM_PROCESSES: Final = 16

#: Opens a client of the remote with the given handlers (``open_client`` bound to the target).
Connect = Callable[..., contextlib.AbstractAsyncContextManager[Client]]


def client_error(exc: BaseException) -> ClientError | None:
    """The client's error inside ``exc`` (possibly nested in exception groups), if any."""
    if isinstance(exc, ClientError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = client_error(inner)
            if found is not None:
                return found
    return None


class ProcessBudget:
    """Upstream processes held at once, where each upstream session with the remote is a
    process of its own (a stdio remote: ``max_upstream_processes``). Taken when a session
    is opened, given back once it is closed (its process gone)."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("max_upstream_processes must be at least 1")
        self.limit = limit
        self.used = 0

    def try_take(self) -> bool:
        """One more process, if the budget has one (no waiting: a session is long-lived,
        so whoever asks is answered at once, refused or served)."""
        if self.used >= self.limit:
            return False
        self.used += 1
        return True

    def give_back(self) -> None:
        self.used -= 1


class PooledSession:
    """One extra upstream session: the remote's questions and log messages on it go to the
    one forwarding it carries (``forwarding``)."""

    def __init__(self) -> None:
        self.client: Client | None = None
        #: The forwarding the remote's questions on this session go to.
        self.forwarding: Addressee | None = None
        #: Where the remote's log messages on this session go (the request it carries).
        self.sink: Callable[[Notification], None] | None = None
        #: The log level set on this session (the shared session's level, applied on use).
        self.level: str | None = None
        self.failure: str | None = None
        #: Taken by a forwarding (from ``UpstreamPool.take`` to ``give_back``).
        self.busy = False
        #: Holds one process of the pool's budget (given back when discarded).
        self.budgeted = False
        self._scope = trio.CancelScope()
        self.idle_since = trio.current_time()
        self._changed = trio.Event()

    def set_busy(self, busy: bool) -> None:
        self.busy = busy
        if not busy:
            self.forwarding = None
            self.sink = None
            self.idle_since = trio.current_time()
        self._changed.set()

    def close(self) -> None:
        """End this session (its link failed): given back, it is not reused."""
        self._scope.cancel()

    def _handler(self, method: str) -> Any:
        async def ask(params: dict[str, Any]) -> Any:
            forwarding = self.forwarding
            if forwarding is None:
                raise nobody_to_ask(method)
            return await forwarding.ask(method, params)

        return ask

    def _on_notification(self, note: Notification) -> None:
        sink = self.sink
        if note.method == LOG_MESSAGE and sink is not None:
            sink(note)

    async def run(
        self,
        connect: Connect,
        pool: UpstreamPool,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Open the session, hold it while used or idle less than ``pool.idle_timeout``
        (or until ``close``); started once open (or once it could not be: ``failure`` says
        why, ``client`` is None)."""
        started = False
        try:
            with self._scope:
                async with connect(
                    sampling=self._handler(SAMPLING_CREATE_MESSAGE),
                    elicitation=self._handler(ELICITATION_CREATE),
                    roots=self._handler(ROOTS_LIST),
                    on_notification=self._on_notification,
                ) as client:
                    self.client = client
                    started = True
                    task_status.started()
                    await self._hold(pool)
        except (ClientError, BaseExceptionGroup) as exc:
            reason = client_error(exc)
            if reason is None:
                raise
            self.failure = f"cannot reach the remote MCP server: {reason}"
            log.warning("an extra upstream session ended: %s", loggable(reason))
            if not started:
                task_status.started()  # take() answers the forwarding with the failure
        finally:
            self.client = None
            pool.discard(self)

    async def _hold(self, pool: UpstreamPool) -> None:
        while True:
            self._changed = trio.Event()
            if self.busy:
                await self._changed.wait()
                continue
            deadline = self.idle_since + pool.idle_timeout
            if trio.current_time() >= deadline:
                return  # idle too long (no checkpoint since the check: nobody took it)
            with trio.move_on_at(deadline):
                await self._changed.wait()


class UpstreamPool:
    """Turns for forwardings that must not share an upstream session: ``size`` at once, the
    first on the proxy's shared session (its ``lane``), the others on extra sessions opened
    lazily and closed after ``idle_timeout`` seconds unused."""

    def __init__(self, size: int, idle_timeout: float, budget: ProcessBudget | None = None) -> None:
        if size < 1:
            raise ValueError("max_parallel must be at least 1")
        if not idle_timeout > 0:
            raise ValueError("parallel_idle_timeout must be a positive number of seconds")
        self.size = size
        self.idle_timeout = idle_timeout
        #: One per forwarding in flight (the shared session's included).
        self.turns = trio.Semaphore(size)
        #: The shared session's turn: one forwarding at a time on it.
        self.lane = trio.Semaphore(1)
        #: Extra sessions open and not in use, most recently used last.
        self.idle: list[PooledSession] = []
        #: Extra sessions open now.
        self.open: set[PooledSession] = set()
        #: Where a session is a process: the proxy's budget of them (None: not counted).
        self.budget = budget

    def discard(self, session: PooledSession) -> None:
        self.open.discard(session)
        if session in self.idle:
            self.idle.remove(session)
        if session.budgeted and self.budget is not None:
            session.budgeted = False
            self.budget.give_back()

    async def take(self, connect: Connect, nursery: trio.Nursery) -> PooledSession:
        """An extra session for one forwarding (the caller holds a turn and the shared
        session is busy, so fewer than ``size - 1`` are in use)."""
        if self.idle:
            session = self.idle.pop()
            session.set_busy(True)  # no checkpoint since pop: its idle timer did not fire
            return session
        session = PooledSession()
        session.busy = True
        session.budgeted = self.budget is not None  # take_turn took it
        self.open.add(session)
        try:
            await nursery.start(session.run, connect, self)
        except BaseException:
            self.discard(session)  # did not run: give its process back
            raise
        if session.client is None:
            raise ClientError(session.failure or "the extra upstream session ended")
        return session

    async def take_turn(self, connect: Connect, nursery: trio.Nursery) -> PooledSession | None:
        """A turn for one forwarding, waiting while ``size`` are taken: ``None`` for the
        shared session (its lane was free), else an extra session (``take``)."""
        await self.turns.acquire()
        try:
            if self.lane.value:
                self.lane.acquire_nowait()
                return None
            if not self.idle and self.budget is not None and not self.budget.try_take():
                # No process left for another session: queue for the shared one.
                await self.lane.acquire()
                return None
            return await self.take(connect, nursery)
        except BaseException:
            self.turns.release()
            raise

    def give_turn_back(self, session: PooledSession | None, *, lost: bool = False) -> None:
        """The turn ``take_turn`` gave; ``lost``: the session's link failed."""
        if session is None:
            self.lane.release()
        else:
            if lost:
                # Closed, so the next forwarding opens a fresh session.
                session.close()
            self.give_back(session)
        self.turns.release()

    def give_back(self, session: PooledSession) -> None:
        session.set_busy(False)
        if session.client is not None and session in self.open:
            self.idle.append(session)
