"""``open_client``'s pool limits: ``max_idle_connections`` and ``idle_connection_timeout``
reach the HTTP transports' connection pool (runtime/client/_http.py), validated up front.

Our server runs in-process on a real socket; a counting proxy in front of it counts the TCP
connections the client makes (its accepts)."""

from __future__ import annotations

import math

import pytest
import trio

from runtime.client import open_client

from .proxy import open_proxy
from .targets import load_app


async def _connections_for(calls: int, pause: float = 0.0, **pool: float) -> int:
    """TCP connections a modern-era client makes for ``calls`` sequential tool calls."""
    app = load_app()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_http)
        async with open_proxy(address[1]) as proxy:
            with trio.fail_after(20):
                async with open_client(
                    f"http://127.0.0.1:{proxy.port}/mcp", era="modern", **pool
                ) as client:
                    for n in range(calls):
                        result = await client.call_tool("add", {"a": n, "b": 1})
                        assert result.structured_content == {"result": n + 1}
                        await trio.sleep(pause)
                    used = proxy.connections
        nursery.cancel_scope.cancel()
    return used


async def test_no_idle_connections_kept_means_one_per_request() -> None:
    default = await _connections_for(5)
    none_kept = await _connections_for(5, max_idle_connections=0)
    assert default == 1
    # start-up (server/discover) and every call each on a fresh connection
    assert none_kept == 6


async def test_a_short_idle_timeout_drops_the_idle_connection() -> None:
    """An idle connection older than ``idle_connection_timeout`` is closed, not reused: with
    0.1 s and 0.3 s between calls, every call opens a new one (the server would keep them for
    30 s, so it is the client's limit at work)."""
    kept = await _connections_for(3, pause=0.3)
    dropped = await _connections_for(3, pause=0.3, idle_connection_timeout=0.1)
    assert kept == 1
    assert dropped == 3  # discover + first call share one; the next two open their own


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_idle_connections": -1}, "max_idle_connections must be >= 0"),
        ({"max_idle_connections": 1.5}, "max_idle_connections must be an int"),
        ({"max_idle_connections": True}, "max_idle_connections must be an int"),
        ({"idle_connection_timeout": 0}, "idle_connection_timeout must be a number"),
        ({"idle_connection_timeout": -2.0}, "idle_connection_timeout must be a number"),
        ({"idle_connection_timeout": math.nan}, "idle_connection_timeout must be a number"),
    ],
)
async def test_out_of_range_limits_are_refused_before_connecting(
    options: dict[str, float], message: str
) -> None:
    # Port 9 (discard) on loopback: nothing is ever connected, the arguments fail first.
    for target in ("http://127.0.0.1:9/mcp", "http://127.0.0.1:9/sse", "tcp://127.0.0.1:9"):
        with trio.fail_after(5), pytest.raises(ValueError, match=message):
            async with open_client(target, **options):
                pass  # pragma: no cover
