"""The authorization server's state: registered clients, pending logins, codes, refresh tokens,
signing keys (``runtime.authserver``), behind one small key-value protocol.

What matters across replicas is atomicity, not richness: an authorization code and a refresh
token are each good for one use (RFC 6749 section 4.1.2; OAuth 2.1 section 4.3.1 for refresh
rotation), so ``take`` reads and deletes in one step, and only one replica of many ever gets
the value back. Signing keys are created once per rotation period by whichever replica needs
one first: ``add`` writes only when nothing is there yet.

``MemoryGrantStore`` is the default (one process). Values are opaque bytes; keys are short
ASCII strings the authorization server builds (a kind, ``:``, a random id or a hash).
"""

from __future__ import annotations

from typing import Protocol

import trio

__all__ = ["GrantStore", "MemoryGrantStore"]


class GrantStore(Protocol):
    """Expiring values by key, and bounded groups of expiring members.

    Every call is bounded as ``Store`` calls are (``StoreUnavailable`` when the backend
    cannot answer in time); every expiry is relative, in seconds.
    """

    async def put(self, key: str, value: bytes, ttl: float) -> None:
        """Create or replace ``key``; it lives ``ttl`` seconds."""
        ...

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        """Create ``key`` only when absent (True), else leave it as it is (False)."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The value, or None (never set, deleted, taken or expired)."""
        ...

    async def take(self, key: str) -> bytes | None:
        """The value, deleted in the same step: of many concurrent callers on any replica,
        exactly one gets it, the others None."""
        ...

    async def delete(self, key: str) -> None: ...

    async def join(self, group: str, member: str, ttl: float, limit: int) -> bool:
        """Add ``member`` to ``group`` for ``ttl`` seconds (renewing it when present), unless
        the group already holds ``limit`` live members: False then. Expired members are
        dropped first."""
        ...

    async def leave(self, group: str, member: str) -> None: ...


class MemoryGrantStore:
    """``GrantStore`` in dicts, one process. No method reaches a checkpoint, so each runs whole
    (``take`` is atomic among trio tasks). Expiry is on the trio clock, checked on read; a
    group is pruned on ``join``."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[bytes, float]] = {}
        self._groups: dict[str, dict[str, float]] = {}
        #: Writes since the last sweep of expired values (see ``_sweep``).
        self._writes = 0

    async def put(self, key: str, value: bytes, ttl: float) -> None:
        self._values[key] = (value, trio.current_time() + ttl)
        self._sweep()

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        if self._live(key) is not None:
            return False
        await self.put(key, value, ttl)
        return True

    async def get(self, key: str) -> bytes | None:
        return self._live(key)

    async def take(self, key: str) -> bytes | None:
        value = self._live(key)
        self._values.pop(key, None)
        return value

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)

    async def join(self, group: str, member: str, ttl: float, limit: int) -> bool:
        now = trio.current_time()
        members = self._groups.setdefault(group, {})
        for name in [name for name, until in members.items() if until <= now]:
            del members[name]
        if member not in members and len(members) >= limit:
            return False
        members[member] = now + ttl
        return True

    async def leave(self, group: str, member: str) -> None:
        self._groups.get(group, {}).pop(member, None)

    def _live(self, key: str) -> bytes | None:
        entry = self._values.get(key)
        if entry is None:
            return None
        if entry[1] <= trio.current_time():
            del self._values[key]
            return None
        return entry[0]

    def _sweep(self) -> None:
        # Values nobody reads again (an abandoned login, a code never redeemed) would hold
        # their memory until read: every 1024 writes, drop whatever has expired, so memory
        # stays proportional to what is live (amortised O(1) per write).
        self._writes += 1
        if self._writes < 1024:
            return
        self._writes = 0
        now = trio.current_time()
        for key in [key for key, (_, until) in self._values.items() if until <= now]:
            del self._values[key]
