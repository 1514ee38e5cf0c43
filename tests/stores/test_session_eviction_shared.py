"""Session eviction at ``max_sessions`` with a shared store (a real redis-server): what ends is
this replica's copy of the least recently used idle session, not the session. It lives on in
the store, and its next request is served: the replica adopts it again, evicting the least
recently used idle copy in its turn (docs/reliability.md). Without a shared store the evicted
session is gone (404: tests/transports/test_http_session_eviction.py)."""

from __future__ import annotations

import trio

from runtime.stores import RedisStore
from runtime.transports import HttpLimits

from ..transports.app import call, make_app, serving
from ..transports.http_client import open_raw_session, request, sse_messages
from ..transports.http_client import session_headers as headers


async def _add(address: tuple[str, int], session: str, request_id: int) -> str:
    response = await request(
        address, "POST", headers=headers(session), body=call(request_id, "add", a=2, b=3)
    )
    assert response.status == 200, response
    found = response.json() if response.body[:1] == b"{" else sse_messages(response.body)[-1]
    text: str = found["result"]["content"][0]["text"]
    return text


async def test_an_evicted_copy_of_a_shared_session_is_adopted_again(redis_url: str) -> None:
    app, _ = make_app()
    app.store = RedisStore.from_url(redis_url)
    with trio.fail_after(20):
        async with serving(app, http_limits=HttpLimits(max_sessions=1)) as address:
            first = await open_raw_session(address)
            # At the cap: the first one's copy makes room (it was refused with 503).
            second = await open_raw_session(address)
            # Neither session is lost: each request adopts its session back from the store.
            for n in range(3):
                assert await _add(address, first, 10 + n) == "5"
                assert await _add(address, second, 20 + n) == "5"
