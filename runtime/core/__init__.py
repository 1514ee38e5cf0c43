"""The core: the connection supervisor, the one request engine, the dispatcher, limits.

The wire rules these drive (envelope, error codes, versions, the lifecycle) are
``runtime.protocol``'s.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._channel import MessageChannel, Outgoing
from ._connection import Connection
from ._context import Peer, RequestContext
from ._dispatch import BatchPolicy, Dispatcher, Handler, LoggedDispatcher, NotificationHandler
from ._limits import Limits
from ._session import Session

if TYPE_CHECKING:
    from ._single import dispatch_single

__all__ = [
    "BatchPolicy",
    "Connection",
    "Dispatcher",
    "Handler",
    "Limits",
    "LoggedDispatcher",
    "MessageChannel",
    "NotificationHandler",
    "Outgoing",
    "Peer",
    "RequestContext",
    "Session",
    "dispatch_single",
]

#: Loaded on first use (PEP 562): only HTTP's one-request path runs requests without a
#: connection; a stdio server never needs it (benchmarks/README.md, "Start-up").
_LAZY = {"dispatch_single": "._single"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
