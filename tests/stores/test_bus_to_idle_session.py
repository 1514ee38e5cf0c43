"""A message another replica routes to an idle handshake session (issue 22 item 4: idle, the
session's connection holds no round, reader or task) starts a round that reads it: a
``notifications/cancelled`` POSTed to replica B reaches the request replica A runs (MCP
2025-11-25 basic/utilities/cancellation), through the bus of a real redis-server."""

from __future__ import annotations

import trio

from runtime.stores import RedisStore

from ..transports.app import call, make_app, serving, until
from ..transports.http_client import connect, open_raw_session, request, sse_messages
from ..transports.http_client import session_headers as headers
from ..transports.test_http_idle_sessions import _session_tasks


async def test_a_cancellation_routed_to_an_idle_session_reaches_its_request(
    redis_url: str,
) -> None:
    a_app, seen = make_app()
    a_app.store = RedisStore.from_url(redis_url)
    b_app, _ = make_app()
    b_app.store = RedisStore.from_url(redis_url)
    with trio.fail_after(20):
        async with serving(a_app) as a, serving(b_app) as b:
            session = await open_raw_session(a)
            conn = await connect(a)
            await conn.send("POST", "/mcp", headers=headers(session), body=call(5, "slow", tag="x"))
            await until(lambda: seen["started"] == ["x"])
            # The request runs in its POST's task; the session itself is idle (no round).
            await until(lambda: _session_tasks() == 0)
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 5, "reason": "routed"},
            }
            accepted = await request(b, "POST", headers=headers(session), body=cancel)
            assert accepted.status == 202, accepted
            response = await conn.response()
            await conn.aclose()
            assert seen["cancelled"] == ["x"] and seen["finished"] == []
            assert response.status in (200, 204), response
            # Both replicas' copies of the session go idle again, and it still answers.
            await until(lambda: _session_tasks() == 0)
            again = await request(
                b, "POST", headers=headers(session), body=call(6, "add", a=1, b=2)
            )
            assert again.status == 200, again
            found = again.json() if again.body[:1] == b"{" else sse_messages(again.body)[-1]
            assert found["result"]["content"][0]["text"] == "3", found
