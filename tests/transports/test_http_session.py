"""Streamable HTTP, handshake era (2025-03-26 .. 2025-11-25): sessions, streams, replay."""

from __future__ import annotations

from typing import Any

import trio

from runtime.transports import HttpLimits

from ..wire import read_head
from .app import call, init_body, make_app, serving, until
from .http_client import Response, connect, request, sse_messages

NOTIFY_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def open_session(address: Any, version: str = "2025-11-25") -> str:
    response = await request(address, "POST", body=init_body(version))
    assert response.status == 200, response
    session_id = response.headers["mcp-session-id"]
    ack = await request(address, "POST", headers=_h(session_id, version), body=NOTIFY_INITIALIZED)
    assert ack.status == 202 and ack.body == b""
    return session_id


def _h(session_id: str, version: str = "2025-11-25", **extra: str) -> dict[str, str]:
    return {"mcp-session-id": session_id, "mcp-protocol-version": version, **extra}


async def test_initialize_creates_a_session_with_a_csprng_id() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(address, "POST", body=init_body())
            assert response.status == 200
            assert response.headers["content-type"] == "application/json"
            session_id = response.headers["mcp-session-id"]
            assert len(session_id) == 32 and all(c in "0123456789abcdef" for c in session_id)
            assert response.json()["result"]["protocolVersion"] == "2025-11-25"
            other = await request(address, "POST", body=init_body())
            assert other.headers["mcp-session-id"] != session_id


async def test_request_without_session_gets_400() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(address, "POST", body=call(1, "add", a=1, b=2))
            assert response.status == 400
            assert "Mcp-Session-Id" in response.json()["error"]["message"]


async def test_unknown_session_gets_404() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address, "POST", headers=_h("f" * 32), body=call(1, "add", a=1, b=2)
            )
            assert response.status == 404


async def test_deleted_session_gets_404() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            ok = await request(
                address, "POST", headers=_h(session_id), body=call(1, "add", a=1, b=2)
            )
            assert ok.status == 200 and ok.json()["result"]["content"][0]["text"] == "3"
            deleted = await request(address, "DELETE", headers=_h(session_id))
            assert deleted.status == 200
            after = await request(
                address, "POST", headers=_h(session_id), body=call(2, "add", a=1, b=2)
            )
            assert after.status == 404
            again = await request(address, "DELETE", headers=_h(session_id))
            assert again.status == 404


async def test_notification_gets_202_without_body() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            response = await request(
                address, "POST", headers=_h(session_id), body=NOTIFY_INITIALIZED
            )
            assert response.status == 202 and response.body == b""


async def test_unsupported_protocol_version_header_gets_400() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            response = await request(
                address,
                "POST",
                headers=_h(session_id, "1999-01-01"),
                body=call(1, "add", a=1, b=2),
            )
            assert response.status == 400
            # Absent: the 2025-03-26 fallback applies and the request is served.
            fallback = await request(
                address,
                "POST",
                headers={"mcp-session-id": session_id},
                body=call(2, "add", a=1, b=2),
            )
            assert fallback.status == 200


async def test_progress_streams_as_sse_with_priming_event_ids_and_retry() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            await conn.send(
                "POST", "/mcp", headers=_h(session_id), body=call(7, "countdown", "tok")
            )
            head = await conn.head()
            assert head.status == 200
            assert head.headers["content-type"] == "text/event-stream"
            assert head.headers["x-accel-buffering"] == "no"
            assert head.headers["mcp-session-id"] == session_id
            events = await conn.events()
            await conn.aclose()
            prime, *rest = events
            assert prime.data == "" and prime.id and prime.retry == 1000
            assert all(event.id for event in rest)
            assert len({event.id for event in events}) == len(events)
            import json

            messages = [json.loads(event.data) for event in rest]
            assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2, 3]
            assert messages[-1]["id"] == 7 and messages[-1]["result"]["content"][0]["text"] == (
                "liftoff"
            )


async def test_plain_request_is_answered_as_json() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            response = await request(
                address, "POST", headers=_h(session_id), body=call(1, "add", a=2, b=3)
            )
            assert response.headers["content-type"] == "application/json"
            assert response.json()["result"]["content"][0]["text"] == "5"


async def test_last_event_id_replays_exactly_the_missed_events() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            body = call(9, "countdown", "tok", start=4, delay=0.05)
            await conn.send("POST", "/mcp", headers=_h(session_id), body=body)
            assert (await conn.head()).status == 200
            prime = await conn.next_event()
            first = await conn.next_event()
            assert prime is not None and first is not None
            await conn.aclose()  # disconnect: the request keeps running (2025-11-25)
            await trio.sleep(0.5)  # it finishes while nobody listens
            replay = await request(
                address, "GET", headers=_h(session_id, **{"last-event-id": first.id})
            )
            assert replay.status == 200
            messages = sse_messages(replay.body)
            assert [m.get("params", {}).get("progress") for m in messages] == [2, 3, 4, None]
            assert messages[-1]["id"] == 9
            # From the priming id: everything.
            full = await request(
                address, "GET", headers=_h(session_id, **{"last-event-id": prime.id})
            )
            assert len(sse_messages(full.body)) == 5
            unknown = await request(
                address, "GET", headers=_h(session_id, **{"last-event-id": "zz_1"})
            )
            assert unknown.status == 400


async def test_a_last_event_id_numbered_with_a_non_ascii_digit_is_unknown() -> None:
    """``"\u00b2".isdigit()`` is True but ``int`` refuses it: the store's replay took the id
    as numbered and failed with ValueError (a 500 and a traceback in the log), not a 400."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            get = await connect(address)
            await get.send("GET", "/mcp", headers=_h(session_id, accept="text/event-stream"))
            assert (await get.head()).status == 200
            prime = await get.next_event()  # a stream the store knows, numbered
            assert prime is not None and prime.id
            await get.aclose()
            known = prime.id.rpartition("_")[0].encode()
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(
                b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                b"Mcp-Session-Id: %b\r\nMcp-Protocol-Version: 2025-11-25\r\n"
                b"Last-Event-ID: %b_\xb2\r\n\r\n" % (session_id.encode(), known)
            )
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive_some(4096)
            await stream.aclose()
    assert answer.startswith(b"HTTP/1.1 400 "), answer


async def test_a_last_event_id_of_five_thousand_digits_is_unknown_not_a_500() -> None:
    """Past 4,300 digits CPython's ``int`` refuses to convert (ValueError): the GET failed
    with 500 and a traceback. An id longer than any the store gives is unknown: 400, and the
    connection and session serve on."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            get = await connect(address)
            await get.send("GET", "/mcp", headers=_h(session_id, accept="text/event-stream"))
            assert (await get.head()).status == 200
            prime = await get.next_event()
            assert prime is not None and prime.id
            await get.aclose()
            known = prime.id.rpartition("_")[0].encode()
            stream = await trio.open_tcp_stream(*address)
            head = (
                b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                b"Mcp-Session-Id: %b\r\nMcp-Protocol-Version: 2025-11-25\r\n"
                b"Last-Event-ID: %b_%b\r\n\r\n" % (session_id.encode(), known, b"9" * 5000)
            )
            await stream.send_all(head)
            answer = await read_head(stream)
            assert answer is not None and answer.startswith(b"HTTP/1.1 400 "), answer
            assert b"Connection: close" not in answer.partition(b"\r\n\r\n")[0]
            # The same connection serves on: the session is still there.
            await stream.send_all(head.replace(b"9" * 5000, prime.id.rpartition("_")[2].encode()))
            again = await read_head(stream)
            assert again is not None and again.startswith(b"HTTP/1.1 200 "), again
            await stream.aclose()


async def test_get_opens_the_standing_stream_and_server_requests_travel_on_the_post_stream() -> (
    None
):
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            standing = await connect(address)
            await standing.send("GET", "/mcp", headers=_h(session_id))
            head = await standing.head()
            assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
            prime = await standing.next_event()
            assert prime is not None and prime.data == "" and prime.retry is not None
            # A second standing stream is refused.
            second = await request(address, "GET", headers=_h(session_id))
            assert second.status == 409
            # roots/list goes out on the POST's own stream; we answer it with a POST.
            conn = await connect(address)
            await conn.send("POST", "/mcp", headers=_h(session_id), body=call(3, "ask_roots"))
            assert (await conn.head()).headers["content-type"] == "text/event-stream"
            await conn.next_event()  # priming
            asked = await conn.next_event()
            assert asked is not None
            import json

            server_request = json.loads(asked.data)
            assert server_request["method"] == "roots/list"
            reply = {
                "jsonrpc": "2.0",
                "id": server_request["id"],
                "result": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]},
            }
            accepted = await request(address, "POST", headers=_h(session_id), body=reply)
            assert accepted.status == 202
            final = await conn.next_event()
            assert final is not None
            assert json.loads(final.data)["result"]["content"][0]["text"] == "file:///a,file:///b"
            await conn.aclose()
            await standing.aclose()


async def test_batches_are_accepted_on_2025_03_26_sessions_only() -> None:
    app, _ = make_app()
    batch = [call(1, "add", a=1, b=1), call(2, "nope"), {"jsonrpc": "2.0", "method": "x/y"}]
    with trio.fail_after(10):
        async with serving(app) as address:
            old = await open_session(address, "2025-03-26")
            response = await request(address, "POST", headers={"mcp-session-id": old}, body=batch)
            assert response.status == 200
            replies = {r["id"]: r for r in response.json()}
            assert replies[1]["result"]["content"][0]["text"] == "2"
            assert "error" in replies[2] or replies[2]["result"]["isError"] is True
            assert len(replies) == 2
            new = await open_session(address, "2025-11-25")
            refused = await request(address, "POST", headers=_h(new), body=batch)
            assert refused.status == 400
            error = refused.json()["error"]
            assert error["code"] == -32600 and "2025-11-25" in error["message"]


async def test_session_cap_gives_503_and_idle_sessions_expire() -> None:
    app, _ = make_app()
    # (With "refuse"; the default ends the least recently used idle session instead:
    # test_http_session_eviction.py.)
    limits = HttpLimits(max_sessions=1, session_idle_timeout=0.3, session_eviction="refuse")
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as address:
            session_id = await open_session(address)
            full = await request(address, "POST", body=init_body())
            assert full.status == 503
            await trio.sleep(0.8)
            gone = await request(
                address, "POST", headers=_h(session_id), body=call(1, "add", a=1, b=1)
            )
            assert gone.status == 404
            fresh = await request(address, "POST", body=init_body())
            assert fresh.status == 200


async def test_a_request_outlasting_the_idle_timeout_keeps_its_session_until_idle_after() -> None:
    # A request run in its POST's task counts the session in use while it runs and starts
    # its idle time when answered (one clock read, at the end): HandshakeEra.post_session.
    app, _ = make_app()
    limits = HttpLimits(session_idle_timeout=0.5)  # (swept every 0.125 s)
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as address:
            session_id = await open_session(address)
            long = await request(
                address, "POST", headers=_h(session_id), body=call(1, "slow", tag="t", seconds=1.2)
            )
            assert long.status == 200 and long.json()["result"]["content"][0]["text"] == "t"
            # Idle for less than the timeout since the answer (though 1.2 s since the POST
            # came): a sweep or two ran, and the session is still there.
            await trio.sleep(0.25)
            after = await request(
                address, "POST", headers=_h(session_id), body=call(2, "add", a=2, b=3)
            )
            assert after.status == 200 and after.json()["result"]["content"][0]["text"] == "5"
            await trio.sleep(1.0)  # then idle past the timeout: it expired
            gone = await request(
                address, "POST", headers=_h(session_id), body=call(3, "add", a=1, b=1)
            )
            assert gone.status == 404


async def test_cancelled_notification_cancels_a_request_in_another_post() -> None:
    app, seen = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            await conn.send("POST", "/mcp", headers=_h(session_id), body=call(5, "slow", tag="x"))
            await until(lambda: seen["started"])
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 5, "reason": "test"},
            }
            accepted = await request(address, "POST", headers=_h(session_id), body=cancel)
            assert accepted.status == 202
            response: Response = await conn.response()
            await conn.aclose()
            assert seen["cancelled"] == ["x"]
            assert response.status in (200, 204)


# -- requests run in their POST's own task (Connection.run_request) ------------------------


async def test_deleting_the_session_cancels_a_request_running_in_its_post() -> None:
    app, seen = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            await conn.send("POST", "/mcp", headers=_h(session_id), body=call(3, "slow", tag="d"))
            await until(lambda: seen["started"])
            deleted = await request(address, "DELETE", headers=_h(session_id))
            assert deleted.status == 200
            response = await conn.response()
            await conn.aclose()
            assert seen["cancelled"] == ["d"] and seen["finished"] == []
            assert response.status in (200, 204)
            assert b'"result"' not in response.body


async def test_json_only_client_gets_just_the_answer_of_a_request_that_sends_progress() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            response = await request(
                address,
                "POST",
                headers=_h(session_id, accept="application/json"),
                body=call(4, "countdown", "tok"),
            )
            assert response.status == 200
            assert response.headers["content-type"] == "application/json"
            assert response.json()["result"]["content"][0]["text"] == "liftoff"


async def test_request_timeout_answers_minus_32001_on_the_post() -> None:
    app, seen = make_app(request_timeout=0.2)
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            response = await request(
                address, "POST", headers=_h(session_id), body=call(6, "slow", tag="t")
            )
            assert response.status == 200
            assert response.json()["error"]["code"] == -32001
            assert seen["cancelled"] == ["t"]
            after = await request(
                address, "POST", headers=_h(session_id), body=call(7, "add", a=1, b=1)
            )
            assert after.json()["result"]["content"][0]["text"] == "2"


async def test_an_id_in_flight_in_one_post_is_refused_in_another() -> None:
    app, seen = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            conn = await connect(address)
            await conn.send("POST", "/mcp", headers=_h(session_id), body=call(8, "slow", tag="a"))
            await until(lambda: seen["started"])
            again = await request(
                address, "POST", headers=_h(session_id), body=call(8, "add", a=1, b=1)
            )
            assert again.status == 400 and "in flight" in again.json()["error"]["message"]
            await conn.aclose()
