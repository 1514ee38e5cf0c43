"""Worker threads for plain ``def`` handlers, bounded so abandoned work cannot starve anyone.

Python cannot interrupt a thread, so a cancelled caller (a hang-up, ``notifications/
cancelled``, ``request_timeout``) abandons its handler's thread, which runs on. trio's default
limiter would keep counting that thread until it ends: 40 abandoned slow calls from one client
held every token and stalled every other client's plain ``def`` tools. Here:

- at most ``Limits.max_threads_per_connection`` threads per connection, running or abandoned;
- at most ``Limits.max_worker_threads`` threads whose callers still wait (more wait in line);
  an abandoned thread gives its place back at once and is counted apart, as
- at most ``Limits.max_abandoned_threads`` abandoned threads in the process.

A call past the first or the last bound is refused at once with -32010 (server overloaded),
naming the bound in ``data``, rather than queued behind work nobody waits for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import trio

from ..protocol import overloaded

__all__ = ["ThreadBounds", "WorkerThreads"]


class ThreadBounds(Protocol):
    """The bounds ``WorkerThreads`` reads (``runtime.Limits`` has them)."""

    @property
    def max_threads_per_connection(self) -> int: ...
    @property
    def max_worker_threads(self) -> int: ...
    @property
    def max_abandoned_threads(self) -> int: ...


T = TypeVar("T")


class _Thread:
    """The limiter trio is given for one call. trio calls ``acquire_on_behalf_of`` right
    before it starts the thread and ``release_on_behalf_of`` in the trio thread once the
    thread has finished, abandoned or not (trio.to_thread.run_sync's limiter contract), so
    these two tell when the thread really runs; trio's own limiter is not involved."""

    __slots__ = ("abandoned", "budget", "finished", "owner", "started")

    def __init__(self, budget: WorkerThreads, owner: str) -> None:
        self.budget = budget
        self.owner = owner
        self.started = False
        self.finished = False
        self.abandoned = False

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        self.started = True

    def release_on_behalf_of(self, borrower: object) -> None:
        self.finished = True
        if self.abandoned:
            self.budget.abandoned -= 1
            self.budget._release(self.owner)


class WorkerThreads:
    """The worker-thread budget of one server. ``run_sync`` is the only entry; everything
    here runs in the trio thread."""

    def __init__(self, limits: Callable[[], ThreadBounds]) -> None:
        self._limits = limits
        self._per_connection: dict[str, int] = {}
        self._live: trio.CapacityLimiter | None = None
        #: Threads still running whose callers were cancelled.
        self.abandoned = 0

    def _release(self, owner: str) -> None:
        left = self._per_connection[owner] - 1
        if left:
            self._per_connection[owner] = left
        else:
            del self._per_connection[owner]

    async def run_sync(self, owner: str, fn: Callable[[], T]) -> T:
        """Run ``fn()`` in a worker thread for connection ``owner``.

        Raises JSONRPCError(-32010) at once when ``owner`` or the process is at its bound.
        Cancellation abandons the thread (its result is dropped) and ends the call at once.
        """
        limits = self._limits()
        if self.abandoned >= limits.max_abandoned_threads:
            raise overloaded(
                "too many abandoned worker threads",
                maxAbandonedThreads=limits.max_abandoned_threads,
            )
        held = self._per_connection.get(owner, 0)
        if held >= limits.max_threads_per_connection:
            raise overloaded(
                "too many worker threads on this connection",
                maxThreadsPerConnection=limits.max_threads_per_connection,
            )
        self._per_connection[owner] = held + 1
        if self._live is None:
            self._live = trio.CapacityLimiter(limits.max_worker_threads)
        thread = _Thread(self, owner)
        try:
            async with self._live:  # given back at once when the caller is cancelled
                # trio documents any object with these two methods as a limiter; its
                # annotation names only CapacityLimiter.
                limiter: Any = thread
                return await trio.to_thread.run_sync(fn, abandon_on_cancel=True, limiter=limiter)
        finally:
            if thread.started and not thread.finished:
                thread.abandoned = True  # its release_on_behalf_of gives the places back
                self.abandoned += 1
            else:
                self._release(owner)
