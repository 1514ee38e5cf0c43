"""The rate-limit refusal: -32010 with retryAfterMs, 429 + Retry-After on a modern answer."""

from __future__ import annotations

from runtime.protocol import (
    SERVER_OVERLOADED,
    error_reply,
    overloaded,
    rate_limited,
    retry_after,
    status_of,
)


def test_rate_limited_is_429_with_retry_after_rounded_up() -> None:
    error = rate_limited(1.2, "principal")
    assert error.code == SERVER_OVERLOADED
    assert error.data == {"limit": "principal", "retryAfterMs": 1200}
    reply = error_reply(error, 7)
    assert status_of(reply) == 429
    assert retry_after(reply) == "2"
    assert retry_after(error_reply(rate_limited(0.0001, "overall"), 1)) == "1"


def test_other_overload_errors_keep_their_status() -> None:
    reply = error_reply(overloaded("too many tasks", maxTasks=3), 1)
    assert status_of(reply) == 200
    assert retry_after(reply) is None
    assert status_of(b'{"jsonrpc":"2.0","id":1,"result":{}}') == 200
