"""The reconnection policy: exponential backoff with full jitter, bounded in attempts and time.

Wait number ``n`` (from 0) is drawn uniformly from ``[0, min(cap, initial * multiplier**n)]``
("full jitter": clients that lost the same server at the same moment spread out instead of
returning together). A server hint (an SSE ``retry:`` field, an HTTP ``Retry-After``) raises
that wait to at least the hint, still cut at ``cap``. The policy gives up after
``max_attempts`` attempts or once ``max_elapsed`` seconds have passed since the first failure,
whichever comes first; a wait that would end past ``max_elapsed`` is not taken.
"""

from __future__ import annotations

import dataclasses
import email.utils
import math
import random
import time
from typing import Final

__all__ = ["Backoff", "BackoffRun", "parse_retry_after"]

#: Retry-After values above this many seconds are read as this many: a server asking for an
#: hour-long pause is, for an interactive client, as good as down.
_MAX_RETRY_AFTER: Final = 3600.0


@dataclasses.dataclass(frozen=True, slots=True)
class Backoff:
    """How the client waits between reconnection attempts.

    ``initial``: the ceiling of the first wait, seconds (0.1). ``multiplier``: how fast the
    ceiling grows (2.0). ``cap``: no single wait is longer (10 s). ``max_attempts``: attempts
    after the failure before giving up (8; 0 = never reconnect). ``max_elapsed``: seconds from
    the first failure after which no new attempt starts (30 s; ``math.inf`` = no bound).
    """

    initial: float = 0.1
    multiplier: float = 2.0
    cap: float = 10.0
    max_attempts: int = 8
    max_elapsed: float = 30.0

    def __post_init__(self) -> None:
        if not (self.initial >= 0 and math.isfinite(self.initial)):
            raise ValueError("Backoff.initial must be a finite number >= 0")
        if not self.multiplier >= 1:
            raise ValueError("Backoff.multiplier must be >= 1")
        if not self.cap >= 0:
            raise ValueError("Backoff.cap must be >= 0")
        if self.max_attempts < 0:
            raise ValueError("Backoff.max_attempts must be >= 0")
        if not self.max_elapsed >= 0:
            raise ValueError("Backoff.max_elapsed must be >= 0")

    def ceiling(self, attempt: int) -> float:
        """The largest wait before attempt ``attempt`` (0-based), before any server hint."""
        if self.initial == 0 or self.cap == 0:
            return 0.0
        # Grow in log space: multiplier**attempt overflows long before the cap matters.
        exponent = math.log(self.initial) + attempt * math.log(self.multiplier)
        if exponent >= math.log(self.cap):
            return self.cap
        return min(self.cap, math.exp(exponent))

    def wait(self, attempt: int, rng: random.Random, hint: float | None = None) -> float:
        """One jittered wait before attempt ``attempt``; ``hint`` is the server's minimum."""
        delay = rng.uniform(0.0, self.ceiling(attempt))
        if hint is not None and hint > delay:
            delay = min(hint, self.cap)
        return delay

    def start(self, *, rng: random.Random | None = None, clock: float | None = None) -> BackoffRun:
        """Begin counting attempts for one outage."""
        return BackoffRun(
            self, rng or random.Random(), time.monotonic() if clock is None else clock
        )


class BackoffRun:
    """The attempts of one outage. ``next_wait(now, hint)`` gives the seconds to sleep before
    the next attempt, or None when the policy gives up (then ``attempts`` and ``elapsed``
    say how far it went)."""

    def __init__(self, policy: Backoff, rng: random.Random, started: float) -> None:
        self.policy = policy
        self.rng = rng
        self.started = started
        self.attempts = 0
        self.elapsed = 0.0

    def next_wait(self, now: float, hint: float | None = None) -> float | None:
        """The seconds to wait before the next attempt (counted as made), or None when the
        policy gives up: ``max_attempts`` made, or the wait would end past ``max_elapsed``
        from the run's start. ``now`` is on the clock the run was started with."""
        policy = self.policy
        self.elapsed = now - self.started
        if self.attempts >= policy.max_attempts:
            return None
        delay = policy.wait(self.attempts, self.rng, hint)
        if self.elapsed + delay > policy.max_elapsed:
            return None
        self.attempts += 1
        return delay


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from an HTTP ``Retry-After`` (RFC 9110 10.2.3: delay-seconds or an HTTP-date),
    or None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # (isdigit alone takes "²", which float refuses)
        return min(float(value), _MAX_RETRY_AFTER)
    current = time.time() if now is None else now
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, OverflowError):  # (a year past datetime's: OverflowError)
        return None
    return min(max(0.0, when - current), _MAX_RETRY_AFTER)
