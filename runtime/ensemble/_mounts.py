"""The servers mounted in one server, by prefix (``Server.mount``; docs/composition.md).

Mounting while the parent serves works as before it: the child's lifespan is entered first,
in a task of its own, and its features appear (with list-changed) once it is; a lifespan
that fails leaves the child unmounted (logged).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic

import trio

from ..features import Completer
from ._lifespans import MountLifespans
from ._mount import C, Mount, complete_through_mounts

__all__ = ["Mounts"]

log = logging.getLogger("mcp_runtime.mount")


class Mounts(Generic[C]):
    """A server's mounts: their copies (:class:`Mount`), their lifespans
    (:class:`MountLifespans`, held in ``nursery()``, the server's task nursery, when it
    started serving without mounts) and the completer that routes to theirs."""

    def __init__(self, nursery: Callable[[], trio.Nursery | None]) -> None:
        #: prefix -> its mount (``Server.mounts`` is this dict).
        self.by_prefix: dict[str, Mount[C]] = {}
        self._lifespans = MountLifespans(nursery)

    def check_free(self, prefix: str) -> None:
        if prefix in self.by_prefix:
            raise ValueError(f"prefix {prefix!r} is already mounted")

    def add(self, mount: Mount[C]) -> None:
        """Serve ``mount``'s copies under its prefix. ValueError for a name the parent
        already has: nothing is mounted then."""
        prefix = mount.prefix
        if not self._lifespans.open:
            mount.attach()
            self.by_prefix[prefix] = mount
            return
        taken = mount.collisions()
        if taken:
            raise ValueError(f"mount {prefix}: the parent already has {', '.join(taken)}")
        self.by_prefix[prefix] = mount
        self._lifespans.start_soon(functools.partial(self._add_serving, prefix, mount))

    async def _add_serving(self, prefix: str, mount: Mount[C]) -> None:
        """Enter the child's lifespan, then add its features (list-changed)."""
        try:
            await self._lifespans.enter(prefix, mount)
        except Exception:
            log.exception("mount %s: the lifespan of %r failed: not mounted", prefix, mount.child)
            if self.by_prefix.get(prefix) is mount:
                del self.by_prefix[prefix]
            return
        if self.by_prefix.get(prefix) is not mount:  # unmounted meanwhile
            self._lifespans.release(prefix)
            return
        try:
            mount.attach()
        except ValueError as exc:
            log.error("mount %s: %s: not mounted", prefix, exc)
            del self.by_prefix[prefix]
            self._lifespans.release(prefix)

    def remove(self, prefix: str) -> Mount[C]:
        """Remove what :meth:`add` added (list-changed); while serving, the child's lifespan
        exits. KeyError for a prefix not mounted."""
        mount = self.by_prefix.pop(prefix)
        mount.detach()
        self._lifespans.release(prefix)
        return mount

    def lifespan(
        self, own: AbstractAsyncContextManager[Any] | None
    ) -> AbstractAsyncContextManager[Any] | None:
        """The server's lifespan: its ``own`` (None: none), inside its children's, and a
        place for those mounted while it serves."""
        if not self.by_prefix:
            return own
        return self._lifespans.serving(self.by_prefix, own)

    def completer(self, own: Completer | None) -> Completer | None:
        """The server's completer: a mounted server's prompts and templates are completed by
        its own completer, under its own names; the rest by ``own``."""
        if not self.by_prefix:
            return own
        return functools.partial(complete_through_mounts, self.by_prefix, own)
