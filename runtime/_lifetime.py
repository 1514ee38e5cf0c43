"""A server's lifetime while it serves: the lifespan, the task nursery, shutdown, signals.

Every ``serve_*`` call holds the server "serving" (``Lifetime.running``): the outermost one
enters the user's lifespan and opens the nursery tasks run in (tasks outlive their request
and connection, not the server); nested or concurrent serves only count. ``shutdown()``
tells every serve to stop reading and accepting; each connection then gives its in-flight
requests ``Limits.shutdown_grace`` before cancelling them.

Task tree while serving (the lifespan exits in the task that entered it, since trio scopes
are task-bound, so that first serve waits at its exit for the others)::

    outermost serve_*  (lifespan entered here)
    └── task nursery   tasks created by ``@app.tool(task=...)`` calls
    other serve_* calls, each in its own caller's task, counted
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import trio

from .features import Broadcast, TaskTable

if TYPE_CHECKING:
    from .core import Connection

__all__ = ["Lifetime", "ServerCrashed", "run_with_signals"]

log = logging.getLogger("mcp_runtime.server")


class ServerCrashed(RuntimeError):
    """A serve call whose one connection crashed: the server is dead (the CLI exits 1)."""


class Lifetime:
    """The serving state of one server. ``enter_lifespan()`` gives the lifespan's context
    manager (None: no lifespan); ``on_state(value)`` receives what it yields (and None once
    it has exited)."""

    def __init__(
        self,
        tasks: TaskTable,
        changes: Broadcast,
        enter_lifespan: Callable[[], AbstractAsyncContextManager[Any] | None],
        on_state: Callable[[Any], None],
    ) -> None:
        self._tasks = tasks
        self._changes = changes
        self._enter_lifespan = enter_lifespan
        self._on_state = on_state
        self._serving = 0
        self._all_served: trio.Event | None = None
        self._shutdown_events: set[trio.Event] = set()

    @property
    def serving(self) -> bool:
        """True while any ``serve_*`` of the server runs."""
        return self._serving > 0

    def shutdown(self) -> None:
        """Begin a graceful shutdown of everything being served. Safe from any task of the
        server's trio run."""
        for event in self._shutdown_events:
            event.set()
        # 2026-07-28 subscriptions "Graceful Closure": open listens complete with a result.
        self._changes.end_all("shutdown")

    @contextlib.contextmanager
    def shutdown_signal(self) -> Iterator[trio.Event]:
        """An event that :meth:`shutdown` sets, registered for the body of one serve call."""
        event = trio.Event()
        self._shutdown_events.add(event)
        try:
            yield event
        finally:
            self._shutdown_events.discard(event)

    async def serve_connection(
        self, connection: Connection, started: Callable[[Connection], None] | None
    ) -> None:
        """Serve ``connection`` with the server held serving. Every connection of a
        transport nests in its serve: that is a plain count (:meth:`hold`), not a context
        manager per connection."""
        if self.hold():
            try:
                await connection.serve(started=started)
            finally:
                self.release()
            return
        async with self.running():
            await connection.serve(started=started)

    def hold(self) -> bool:
        """Count one more serve inside one already running (True) without entering
        anything; False when none runs (then use :meth:`running`). Pair with
        :meth:`release`."""
        if self._serving == 0:
            return False
        self._serving += 1
        return True

    def release(self) -> None:
        """End what :meth:`hold` counted."""
        self._serving -= 1
        if self._serving == 0 and self._all_served is not None:
            self._all_served.set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the server "serving" for the body: the first (outermost) entry enters the
        lifespan; nested or concurrent entries only count."""
        if self.hold():
            try:
                yield
            finally:
                self.release()
            return
        self._serving += 1
        all_served = self._all_served = trio.Event()
        self._changes.reopen()
        try:
            lifespan = self._enter_lifespan()
            if lifespan is None:
                async with self._task_nursery():
                    yield
            else:
                async with lifespan as state, self._task_nursery():
                    self._on_state(state)
                    try:
                        yield
                    finally:
                        self._serving -= 1
                        try:
                            if self._serving:
                                # Shielded: a cancelled first serve must not pull the
                                # lifespan from under serves still running on it.
                                log.info("lifespan waits for serve_* count=%d", self._serving)
                                with trio.CancelScope(shield=True):
                                    await all_served.wait()
                        finally:
                            self._serving += 1
        finally:
            self._serving -= 1
            self._on_state(None)
            self._all_served = None

    @contextlib.asynccontextmanager
    async def _task_nursery(self) -> AsyncIterator[None]:
        """The nursery tasks run in while the server serves: cancelled when the outermost
        serve ends. A lone exception from the body is re-raised unwrapped."""
        try:
            async with trio.open_nursery() as nursery:
                self._tasks.nursery = nursery
                try:
                    yield
                finally:
                    self._tasks.nursery = None
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise


async def run_with_signals(
    shutdown: Callable[[], None],
    grace: float,
    serve: Callable[..., Any],
    options: dict[str, Any],
    started: Callable[[Any], None] | None = None,
) -> None:
    """Serve (``serve(**options, task_status=...)``); ``started`` gets what it reports once it
    serves. The first SIGINT/SIGTERM starts a graceful shutdown (``shutdown()``, then
    ``grace`` seconds for in-flight requests), a second one cancels at once."""
    async with trio.open_nursery() as nursery:

        async def watch_signals() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                received = 0
                async for signum in signals:
                    received += 1
                    if received == 1:
                        log.info(
                            "shutting down signal=%s grace=%ss",
                            signal.Signals(signum).name,
                            grace,
                        )
                        shutdown()
                    else:
                        log.warning("second signal: cancelling now")
                        nursery.cancel_scope.cancel()

        async def serving(task_status: trio.TaskStatus[Any]) -> None:
            try:
                await serve(**options, task_status=task_status)
            finally:
                nursery.cancel_scope.cancel()

        nursery.start_soon(watch_signals)
        address = await nursery.start(serving)
        if started is not None:
            started(address)
