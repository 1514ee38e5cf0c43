"""A session POST runs under its HTTP connection's generation scope (issue 22 target 1):
one cancel scope for request after request on a keep-alive connection, replaced only after
a request was cancelled through it. Cancelled, timed out or cut short, the request is
answered as with a scope of its own, and the same connection serves on."""

from __future__ import annotations

from typing import Any

import trio

from runtime.middleware import Next, Request

from .app import call, make_app, serving, until
from .http_client import HttpConn, Response, connect, request
from .test_http_session import _h, open_session


async def _post(conn: HttpConn, session_id: str, body: Any) -> Response:
    await conn.send("POST", "/mcp", headers=_h(session_id), body=body)
    response = await conn.response()
    conn.conn.start_next_cycle()  # the same keep-alive connection, next request
    return response


def _cancel(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "test"},
    }


async def test_cancelled_posts_are_answered_and_their_connection_serves_on() -> None:
    app, seen = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            try:
                # Twice: the second cancel reaches the generation that replaced the first.
                for n, tag in ((5, "x"), (7, "y")):
                    await conn.send(
                        "POST", "/mcp", headers=_h(session_id), body=call(n, "slow", tag=tag)
                    )
                    await until(lambda tag=tag: tag in seen["started"])  # type: ignore[misc]
                    accepted = await request(
                        address, "POST", headers=_h(session_id), body=_cancel(n)
                    )
                    assert accepted.status == 202
                    response = await conn.response()
                    conn.conn.start_next_cycle()
                    assert response.status in (200, 204)
                    assert b'"result"' not in response.body and b'"error"' not in response.body
                    after = await _post(conn, session_id, call(n + 1, "add", a=n, b=1))
                    assert after.status == 200
                    assert after.json()["result"]["content"][0]["text"] == str(n + 1)
                assert seen["cancelled"] == ["x", "y"] and seen["finished"] == []
            finally:
                await conn.aclose()


async def test_a_timed_out_post_leaves_no_deadline_on_its_connection() -> None:
    app, seen = make_app(request_timeout=0.2)
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            try:
                timed_out = await _post(conn, session_id, call(6, "slow", tag="t"))
                assert timed_out.status == 200
                assert timed_out.json()["error"]["code"] == -32001
                assert seen["cancelled"] == ["t"]
                done = await _post(conn, session_id, call(7, "add", a=1, b=1))
                assert done.json()["result"]["content"][0]["text"] == "2"
                # Idle past the deadline the last request had: the connection is not cut.
                await trio.sleep(0.4)
                later = await _post(conn, session_id, call(8, "slow", tag="quick", seconds=0))
                assert later.json()["result"]["content"][0]["text"] == "quick"
            finally:
                await conn.aclose()


async def test_a_cancel_after_the_last_checkpoint_keeps_the_reply() -> None:
    # The request's scope is cancelled once its answer is made and nothing waits again: the
    # reply stands (as in a scope of its own), and the connection leaves the cancelled
    # generation before answering, so the answer and the next request are served whole.
    app, _ = make_app()

    @app.middleware
    async def cancel_late(request: Request, call_next: Next) -> Any:
        result = await call_next()
        if request.method == "tools/call" and request.cancel_scope is not None:
            request.cancel_scope.cancel()
        return result

    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            try:
                for n in (1, 2, 3):
                    response = await _post(conn, session_id, call(n, "add", a=n, b=n))
                    assert response.status == 200
                    assert response.json()["result"]["content"][0]["text"] == str(2 * n)
            finally:
                await conn.aclose()


async def test_shutdown_answers_a_post_that_outlives_the_grace_with_minus_32000() -> None:
    app, seen = make_app(shutdown_grace=0.2)
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            try:
                await conn.send(
                    "POST",
                    "/mcp",
                    headers=_h(session_id, accept="application/json"),
                    body=call(9, "slow", tag="s"),
                )
                await until(lambda: seen["started"])
                app.shutdown()
                response = await conn.response()
                assert response.status == 200
                assert response.json()["id"] == 9
                assert response.json()["error"]["code"] == -32000
                assert seen["cancelled"] == ["s"]
            finally:
                await conn.aclose()
