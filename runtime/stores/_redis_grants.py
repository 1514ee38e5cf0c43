"""``GrantStore`` on Redis: the authorization server's state shared by replicas.

Keys under the store's prefix and ``g:``: ``g:<key>`` values with a ``PX`` expiry; groups as
sorted sets ``gz:<group>`` of members scored by their expiry (milliseconds since the epoch).

- ``take`` is ``GETDEL`` (Redis 6.2+): one command, so of replicas redeeming the same code or
  refresh token at once exactly one gets it;
- ``add`` is ``SET NX``: the first replica to make a period's signing key wins;
- ``join`` is a Lua script (prune, count, add), atomic: a registration flood spread over
  replicas still stops at the limit.
"""

from __future__ import annotations

import time
from typing import Any, Final

from ._contracts import StoreUnavailable
from ._resp import RedisClient, RedisError

__all__ = ["RedisGrantStore"]

# KEYS[1] group; ARGV: now (ms), member, expiry (ms), limit, group TTL (ms).
_JOIN: Final = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisGrantStore:
    """A ``GrantStore`` on ``client`` (a ``RedisStore``'s: ``RedisGrantStore.of(store)``)."""

    def __init__(self, client: RedisClient, prefix: str = "mcp:") -> None:
        self.client = client
        self.prefix = prefix + "g:"

    @classmethod
    def of(cls, store: Any) -> RedisGrantStore:
        """The grant store beside a ``RedisStore`` (same connection pool and prefix)."""
        return cls(store.client, store.prefix)

    async def _call(self, *args: Any) -> Any:
        try:
            return await self.client.call(*args)
        except RedisError as exc:
            raise StoreUnavailable(f"redis refused a grant store call: {exc}") from None

    async def put(self, key: str, value: bytes, ttl: float) -> None:
        await self._call("SET", self.prefix + key, value, "PX", _ms(ttl))

    async def add(self, key: str, value: bytes, ttl: float) -> bool:
        return await self._call("SET", self.prefix + key, value, "NX", "PX", _ms(ttl)) is not None

    async def get(self, key: str) -> bytes | None:
        value = await self._call("GET", self.prefix + key)
        return value if isinstance(value, bytes) else None

    async def take(self, key: str) -> bytes | None:
        value = await self._call("GETDEL", self.prefix + key)
        return value if isinstance(value, bytes) else None

    async def delete(self, key: str) -> None:
        await self._call("DEL", self.prefix + key)

    async def join(self, group: str, member: str, ttl: float, limit: int) -> bool:
        now = int(time.time() * 1000)
        added = await self._call(
            "EVAL",
            _JOIN,
            1,
            self.prefix + "z:" + group,
            now,
            member,
            now + _ms(ttl),
            limit,
            _ms(ttl),
        )
        return bool(added)

    async def leave(self, group: str, member: str) -> None:
        await self._call("ZREM", self.prefix + "z:" + group, member)
