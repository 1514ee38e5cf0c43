"""Stores: what a server's replicas share (sessions, SSE events, messages between replicas,
shared secrets), behind protocols with two implementations: :class:`MemoryStore` (one
process, the default) and :class:`RedisStore` (many workers and machines). See
docs/deploy.md.

This package imports nothing of the runtime's other layers (tests/test_layers.py).
"""

from __future__ import annotations

from ._contracts import (
    Bus,
    EventStore,
    SessionRecord,
    SessionStore,
    Store,
    StoreUnavailable,
    TaskSnapshot,
    TaskStore,
)
from ._memory import MemoryBus, MemoryEventStore, MemorySessionStore, MemoryStore, MemoryTaskStore
from ._redis import RedisBus, RedisEventStore, RedisSessionStore, RedisStore, RedisTaskStore
from ._resp import RedisClient, RedisError
from ._unix import UnixStore, serve_store

__all__ = [
    "Bus",
    "EventStore",
    "MemoryBus",
    "MemoryEventStore",
    "MemorySessionStore",
    "MemoryStore",
    "MemoryTaskStore",
    "RedisBus",
    "RedisClient",
    "RedisError",
    "RedisEventStore",
    "RedisSessionStore",
    "RedisStore",
    "RedisTaskStore",
    "SessionRecord",
    "SessionStore",
    "Store",
    "StoreUnavailable",
    "TaskSnapshot",
    "TaskStore",
    "UnixStore",
    "open_store",
    "serve_store",
]


def open_store(spec: str | Store | None, **options: object) -> Store:
    """A store from a URL (``redis://host:port/db``, ``unix:///path``: :class:`UnixStore`,
    ``memory://``), an object, or None (memory). Raises ValueError for an unknown scheme."""
    if spec is None or spec == "memory://" or spec == "memory":
        return MemoryStore()
    if isinstance(spec, str):
        if spec.startswith("redis://"):
            return RedisStore.from_url(spec, **options)
        if spec.startswith("unix://"):  # a store another process holds (mcp-runtime dev's)
            return UnixStore.from_url(spec, **options)
        raise ValueError(
            f"unknown store {spec!r}: expected redis://host:port/db, unix:///path or memory://"
        )
    return spec
