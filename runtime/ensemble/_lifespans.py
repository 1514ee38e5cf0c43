"""The lifespans of a server's mounted children while it serves.

Each child's lifespan runs in a task of its own (trio scopes are task-bound, so it is exited
in the task that entered it, whenever it is released): entered before the parent's own
lifespan when the parent starts serving, entered before the features appear for a child
mounted while serving, exited at ``unmount`` (``child.state`` holds what it yielded
meanwhile).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import trio

from ._mount import Mount

__all__ = ["MountLifespans"]


class _Held:
    """One child's lifespan held open by a task of its own."""

    def __init__(self, mount: Mount[Any]) -> None:
        self.mount = mount
        self.release = trio.Event()
        self.exited = trio.Event()

    async def hold(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        child = self.mount.child
        try:
            opened = self.mount.lifespan()
            if opened is None:
                task_status.started()
                await self.release.wait()
                return
            async with opened as state:
                child.state = state
                task_status.started()
                try:
                    await self.release.wait()
                finally:
                    child.state = None
        finally:
            self.exited.set()


class MountLifespans:
    """The children mounted before serving are entered (in mount order) before the parent's
    own lifespan; a child mounted while serving is entered before its features appear, and
    one unmounted while serving is exited then. When serving ends, what is still mounted is
    exited in reverse mount order, each waited for in turn. A server that started serving
    without mounts has no nursery here (it runs exactly as one without): a child mounted
    into it while serving is held in the server's task nursery (``fallback``), and exited
    with it (cancelled) when serving ends, unless unmounted first.
    """

    def __init__(self, fallback: Callable[[], trio.Nursery | None]) -> None:
        self._nursery: trio.Nursery | None = None
        self._fallback = fallback
        self._held: dict[str, _Held] = {}

    def _where(self) -> trio.Nursery | None:
        return self._nursery if self._nursery is not None else self._fallback()

    @property
    def open(self) -> bool:
        """Whether the parent serves (a lifespan entered now is held until it stops)."""
        return self._where() is not None

    def start_soon(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in a task beside the held lifespans (while ``open``)."""
        nursery = self._where()
        assert nursery is not None
        nursery.start_soon(fn)

    async def enter(self, prefix: str, mount: Mount[Any]) -> None:
        """Enter the lifespan of ``mount``'s child (under ``prefix``) now; its exceptions
        propagate."""
        nursery = self._where()
        assert nursery is not None
        held = _Held(mount)
        await nursery.start(held.hold)
        self._held[prefix] = held

    def release(self, prefix: str) -> None:
        """Exit the lifespan held under ``prefix`` (soon, in its own task)."""
        held = self._held.pop(prefix, None)
        if held is not None:
            held.release.set()

    @contextlib.asynccontextmanager
    async def serving(
        self,
        mounts: Mapping[str, Mount[Any]],
        own: contextlib.AbstractAsyncContextManager[Any] | None,
    ) -> AsyncIterator[Any]:
        """The parent's lifespan: ``mounts``' children entered, then its ``own``."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    for prefix, mount in list(mounts.items()):
                        await self.enter(prefix, mount)
                    if own is None:
                        yield None
                    else:
                        async with own as state:
                            yield state
                finally:
                    self._nursery = None
                    for prefix in reversed(list(self._held)):
                        held = self._held.pop(prefix)
                        held.release.set()
                        await held.exited.wait()
        except BaseExceptionGroup as group:
            # What the serve raised (a port in use, a crash) passes through as it was: the
            # CLI reports it in one line (as the server's task nursery does).
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
