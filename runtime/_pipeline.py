"""A server's request pipeline: its middleware chain and the dispatcher built from it.

The dispatcher (the MCP handlers' method tables inside the middleware: ``_compose``) is built
on first use and kept, since connections and transports hold the one they started with. So
the chain changes only before serving (the next use builds the dispatcher again); the one
exception is a mounted server's chain, which the dispatchers of the servers it is mounted in
take up in place from their next request (``runtime.ensemble.keep_mounted_chains``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import Dispatcher
    from .ensemble import Mountable
    from .middleware import Middleware

__all__ = ["Pipeline"]


class Pipeline:
    """The dispatcher of ``host``: ``build()`` makes it, ``serving()`` tells whether the
    host serves (its connections then hold the dispatcher they started with)."""

    def __init__(
        self, host: Mountable, build: Callable[[], Dispatcher], serving: Callable[[], bool]
    ) -> None:
        #: The middleware, outermost first (``Server.middleware_chain`` is this list).
        self.chain: list[Middleware] = []
        #: The dispatcher once built (None: the next use builds it).
        self.built: Dispatcher | None = None
        #: The pipelines of the servers ``host`` was mounted in, weakly (one it has since been
        #: unmounted from no longer lists it in its mounts: :meth:`_changed` skips it).
        self.parents: weakref.WeakSet[Pipeline] = weakref.WeakSet()
        self._host = host
        self._build = build
        self._serving = serving

    def dispatcher(self) -> Dispatcher:
        """The dispatcher, built now if it is not yet."""
        built = self.built
        if built is None:
            built = self.built = self._build()
        return built

    def add(self, middleware: Iterable[Middleware]) -> None:
        """Append ``middleware`` (innermost); the servers ``host`` is mounted in, and theirs
        up the tree, run it from their next request. RuntimeError while serving."""
        if self._serving():
            raise RuntimeError("add middleware before serving")
        self.chain.extend(middleware)
        self.built = None
        self._changed()

    def put_first(self, middleware: Middleware) -> None:
        """Make ``middleware`` the outermost, unless the chain has it already (the metrics
        a transport serves are counted around everything else)."""
        if middleware not in self.chain:
            self.chain.insert(0, middleware)
            self.built = None

    def keep_chain_of(self, child: Pipeline) -> None:
        """A dispatcher built before ``child`` (mounted here) had middleware lacks the chain
        that runs it: dropped (rebuilt on next use) before serving, changed in place while
        serving (connections keep it)."""
        built = self.built
        if built is None:
            return
        from .ensemble import keep_mounted_chains

        if not keep_mounted_chains(self._host, built, child._host, serving=self._serving()):
            self.built = None

    def _changed(self) -> None:
        """The chain of ``host`` changed: each server it is mounted in runs it from its next
        request, and so on up the tree."""
        for parent in list(self.parents):
            if any(mount.child is self._host for mount in parent._host.mounts.values()):
                parent.keep_chain_of(self)
                parent._changed()
