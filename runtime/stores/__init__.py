"""Stores: what a server's replicas share (sessions, SSE events, messages between replicas,
shared secrets), behind protocols with two implementations: :class:`MemoryStore` (one
process, the default) and :class:`RedisStore` (many workers and machines). See
docs/deploy.md. :class:`UnixStore` reaches a store another process holds over a Unix socket
(``mcp-runtime dev`` keeps its server's sessions across reloads that way).

This package imports nothing of the runtime's other layers (tests/test_layers.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._contracts import (
    RENEWALS_PER_LEASE,
    Bus,
    EventStore,
    SessionRecord,
    SessionStore,
    Store,
    StoreUnavailable,
    StreamState,
    TaskSnapshot,
    TaskStore,
    split_event_id,
)
from ._grants import GrantStore, MemoryGrantStore
from ._memory import MemoryBus, MemoryEventStore, MemorySessionStore, MemoryStore, MemoryTaskStore

if TYPE_CHECKING:
    from ._redis import RedisBus, RedisEventStore, RedisSessionStore, RedisStore, RedisTaskStore
    from ._redis_grants import RedisGrantStore
    from ._resp import RedisClient, RedisError
    from ._unix import UnixStore, serve_store

__all__ = [
    "RENEWALS_PER_LEASE",
    "Bus",
    "EventStore",
    "GrantStore",
    "MemoryBus",
    "MemoryEventStore",
    "MemoryGrantStore",
    "MemorySessionStore",
    "MemoryStore",
    "MemoryTaskStore",
    "RedisBus",
    "RedisClient",
    "RedisError",
    "RedisEventStore",
    "RedisGrantStore",
    "RedisSessionStore",
    "RedisStore",
    "RedisTaskStore",
    "SessionRecord",
    "SessionStore",
    "Store",
    "StoreUnavailable",
    "StreamState",
    "TaskSnapshot",
    "TaskStore",
    "UnixStore",
    "open_store",
    "serve_store",
    "split_event_id",
]


#: The Redis names, loaded on first use (PEP 562): a server on the default memory store never
#: needs the RESP client, and importing it cost every ``mcp-runtime serve`` start-up time
#: (tests/test_startup.py keeps it lazy). The Unix-socket store (the one
#: ``mcp-runtime dev`` holds for its server's versions) likewise.
_LAZY = {
    **dict.fromkeys(
        ("RedisBus", "RedisEventStore", "RedisSessionStore", "RedisStore", "RedisTaskStore"),
        "._redis",
    ),
    **dict.fromkeys(("RedisClient", "RedisError"), "._resp"),
    "RedisGrantStore": "._redis_grants",
    **dict.fromkeys(("UnixStore", "serve_store"), "._unix"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def open_store(spec: str | Store | None, **options: object) -> Store:
    """A store from a URL (``redis://host:port/db``, ``unix:///path``: :class:`UnixStore`,
    ``memory://``), an object, or None (memory). Raises ValueError for an unknown scheme."""
    if spec is None or spec == "memory://" or spec == "memory":
        return MemoryStore()
    if isinstance(spec, str):
        if spec.startswith("redis://"):
            from ._redis import RedisStore

            return RedisStore.from_url(spec, **options)
        if spec.startswith("unix://"):  # a store another process holds (mcp-runtime dev's)
            from ._unix import UnixStore

            return UnixStore.from_url(spec, **options)
        raise ValueError(
            f"unknown store {spec!r}: expected redis://host:port/db, unix:///path or memory://"
        )
    return spec
