"""Rate limiting: token buckets per principal and for the whole server.

A refused request is answered -32010 with ``data.retryAfterMs`` (``runtime.protocol.
rate_limited``) in band on every transport; a modern HTTP answer carrying it is 429 with
``Retry-After`` (``runtime.protocol.status_of``). Handshake-era HTTP answers every JSON-RPC
error with 200 (its revisions' rule), so there the error is in band only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from time import monotonic
from typing import Any, Final

from ..features import principal_key
from ..protocol import INITIALIZE, PING, rate_limited
from ._chain import Middleware, Next, Request

__all__ = ["RateLimit", "TokenBucket"]

#: Never limited: the handshake and liveness checks (a client must be able to connect and
#: to learn that it is limited).
_EXEMPT: Final = frozenset({INITIALIZE, PING})


class TokenBucket:
    """``rate`` tokens per second, up to ``burst``; starts full."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = now

    def take(self, now: float) -> float:
        """Take one token: 0.0 when granted, else the seconds until one is back."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


class RateLimit(Middleware):
    """Token-bucket rate limits: ``per_principal=(rate, burst)`` gives each caller its own
    bucket (keyed by the authenticated principal; unauthenticated callers share the
    ``"anonymous"`` bucket of their transport), ``overall=(rate, burst)`` one for the whole
    server. The per-principal bucket is charged first; a refusal by either costs no token
    of the other.

    ``max_principals`` bounds the buckets kept (least recently used dropped first: a
    dropped caller starts again with a full bucket). ``methods``: only these methods are
    limited (default: every request but ``initialize`` and ``ping``).
    """

    def __init__(
        self,
        *,
        per_principal: tuple[float, float] | None = None,
        overall: tuple[float, float] | None = None,
        max_principals: int = 10_000,
        methods: Iterable[str] | None = None,
    ) -> None:
        if per_principal is None and overall is None:
            raise ValueError("RateLimit needs per_principal=(rate, burst) or overall=(...)")
        if max_principals < 1:
            raise ValueError("max_principals must be >= 1")
        self.per_principal = per_principal
        self.overall = overall
        self.max_principals = max_principals
        self.methods = frozenset(methods) if methods is not None else None
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._overall: TokenBucket | None = None
        #: Requests refused so far (by either bucket).
        self.refused = 0

    def _bucket(self, key: str, now: float) -> TokenBucket:
        assert self.per_principal is not None
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(*self.per_principal, now)
            while len(self._buckets) > self.max_principals:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket

    def check(self, request: Request) -> None:
        """Charge ``request`` to its buckets; raises the -32010 refusal when one is dry."""
        now = monotonic()  # a C call, far cheaper per request than trio.current_time()
        if self.per_principal is not None:
            key = principal_key(request.principal) or f"anonymous:{request.transport}"
            bucket = self._bucket(key, now)
            wait = bucket.take(now)
            if wait:
                self.refused += 1
                raise rate_limited(wait, "principal")
        if self.overall is not None:
            if self._overall is None:
                self._overall = TokenBucket(*self.overall, now)
            wait = self._overall.take(now)
            if wait:
                if self.per_principal is not None:
                    bucket.tokens += 1  # not served: give the caller's token back
                self.refused += 1
                raise rate_limited(wait, "overall")

    async def on_request(self, request: Request, call_next: Next) -> Any:
        method = request.method
        if method not in _EXEMPT and (self.methods is None or method in self.methods):
            self.check(request)
        return await call_next()
