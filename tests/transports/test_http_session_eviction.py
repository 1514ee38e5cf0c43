"""At ``max_sessions`` a new client is not refused while idle sessions hold the places: the
least recently used idle one ends (``HttpLimits.session_eviction="lru"``, the default) and its
next request gets 404, which clients answer by initializing again (2025-11-25
basic/transports, "Session Management"). Most clients never send DELETE: refusing kept the
cap full of abandoned sessions for their 30 minutes of idle time. A session with a request in
flight or an open stream is never evicted; with none idle, ``initialize`` gets 503 as before.
"""

from __future__ import annotations

import pytest
import trio

from runtime.transports import HttpLimits

from .app import call, init_body, make_app, serving, until
from .http_client import connect, request
from .test_http_session import _h, open_session


async def _add(address: tuple[str, int], session_id: str, request_id: int) -> int:
    """POST tools/call add to the session: the HTTP status."""
    response = await request(
        address, "POST", headers=_h(session_id), body=call(request_id, "add", a=1, b=2)
    )
    if response.status == 200:
        assert response.json()["result"]["content"][0]["text"] == "3", response
    return response.status


async def test_at_the_cap_the_least_recently_used_idle_session_makes_room() -> None:
    app, _ = make_app()
    with trio.fail_after(15):
        async with serving(app, http_limits=HttpLimits(max_sessions=2)) as address:
            first = await open_session(address)
            second = await open_session(address)
            assert await _add(address, first, 1) == 200  # the first is used last
            third = await request(address, "POST", body=init_body())
            assert third.status == 200, third
            newest = third.headers["mcp-session-id"]
            # The least recently used one went: 404, as for any ended session.
            assert await _add(address, second, 2) == 404
            assert await _add(address, first, 3) == 200
            assert await _add(address, newest, 4) == 200


async def test_sessions_with_a_request_in_flight_or_an_open_stream_are_never_evicted() -> None:
    app, seen = make_app()
    with trio.fail_after(20):
        async with serving(app, http_limits=HttpLimits(max_sessions=2)) as address:
            streaming = await open_session(address)
            busy = await open_session(address)
            get = await connect(address)
            await get.send("GET", "/mcp", headers=_h(streaming, accept="text/event-stream"))
            assert (await get.head()).status == 200
            post = await connect(address)
            await post.send("POST", "/mcp", headers=_h(busy), body=call(9, "slow", tag="t"))
            await until(lambda: seen["started"] == ["t"])
            # Neither is idle (and the GET stream's session was used least recently).
            refused = await request(address, "POST", body=init_body())
            assert refused.status == 503, refused
            assert refused.json()["error"]["data"] == {"maxSessions": 2}
            await get.aclose()
            await post.aclose()
            # The slow request runs on without its POST (2025-11-25: a disconnection is not a
            # cancellation): its session, the least recently used, is still not idle. The
            # other is once the server has seen its GET stream close: it makes room.
            again = await request(address, "POST", body=init_body())
            while again.status == 503:  # (the server has seen the GET stream close)
                await trio.sleep(0.05)
                again = await request(address, "POST", body=init_body())
            assert again.status == 200, again
            assert await _add(address, streaming, 11) == 404
            assert seen["cancelled"] == [] and seen["finished"] == []
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 9, "reason": "done"},
            }
            accepted = await request(address, "POST", headers=_h(busy), body=cancel)
            assert accepted.status == 202, accepted
            await until(lambda: seen["cancelled"] == ["t"])
            assert await _add(address, busy, 12) == 200


async def test_refuse_keeps_the_old_rule() -> None:
    app, _ = make_app()
    limits = HttpLimits(max_sessions=1, session_eviction="refuse")
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as address:
            only = await open_session(address)
            refused = await request(address, "POST", body=init_body())
            assert refused.status == 503, refused
            assert await _add(address, only, 1) == 200


def test_an_unknown_eviction_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="session_eviction"):
        HttpLimits(session_eviction="fifo")  # type: ignore[arg-type]
