"""Several servers serving as one.

- Mounted servers: one process serves other servers' tools, prompts and resources under a
  prefix, kept in step with them, with their lifespans, completers and middleware
  (``Server.mount``; docs/composition.md). ``_prefix`` (the names a prefix makes), ``_mount``
  (one child's copies), ``_lifespans`` (the children's lifespans), ``_mounts`` (a server's
  mounts), ``_chains`` (a child's middleware, run for its features).
- Replicas: copies of one server in several processes or machines share what a client may
  reach on any of them through a store (``runtime.stores``; docs/deploy.md): ``_sharing``
  (list changes, resource updates, the ``requestState`` key), ``_task_mirror`` (tasks).
- Workers: ``mcp-runtime serve --workers N`` runs N copies accepting on one listening
  socket, under a supervisor (``_workers``).

Each part receives what it needs of a server as a small Protocol of public members
(:class:`Mountable`, :class:`Shares`), never the ``Server`` class itself: the server is
built on these, not the other way round. Only what every server imports is loaded with
this package; the rest on first use (PEP 562), so that a stdio server never loads the
store, the middleware chain or the supervisor.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._mount import Mount, Mountable
from ._mounts import Mounts
from ._prefix import prefixed_name, prefixed_uri, unprefixed_uri

if TYPE_CHECKING:
    from ._chains import MountedChains, has_mounted_middleware, keep_mounted_chains, routes_mounts
    from ._sharing import Shares, sharing
    from ._task_mirror import TaskMirror
    from ._workers import KILL_AFTER, bind_socket, bind_unix_socket, supervise, worker_argv

__all__ = [
    "KILL_AFTER",
    "Mount",
    "Mountable",
    "MountedChains",
    "Mounts",
    "Shares",
    "TaskMirror",
    "bind_socket",
    "bind_unix_socket",
    "has_mounted_middleware",
    "keep_mounted_chains",
    "prefixed_name",
    "prefixed_uri",
    "routes_mounts",
    "sharing",
    "supervise",
    "unprefixed_uri",
    "worker_argv",
]

_LAZY = {
    **dict.fromkeys(
        ("MountedChains", "has_mounted_middleware", "keep_mounted_chains", "routes_mounts"),
        "._chains",
    ),
    **dict.fromkeys(("Shares", "sharing"), "._sharing"),
    "TaskMirror": "._task_mirror",
    **dict.fromkeys(
        ("KILL_AFTER", "bind_socket", "bind_unix_socket", "supervise", "worker_argv"),
        "._workers",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
