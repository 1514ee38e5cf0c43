"""Every POST is read once and judged once, whichever route answers it.

The body of a POST is decoded by the endpoint that routes it; what it hands the server goes
as that reading (``runtime.protocol.DecodedFrame`` to a session's connection, the envelope to
a request or notification run with no connection), never as bytes to decode again. A
batch's shape and each of its items are judged once, by the POST; a request id already
waited for is refused once, by the session that routes answers by id, with the error the
core gives for the same rule (``runtime.protocol.duplicate_request``).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import msgspec
import pytest
import trio

from runtime.protocol import _jsonrpc

from .app import call, init_body, make_app, modern, modern_headers, serving, until
from .http_client import connect, request

NOTIFY_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class _Counted:
    """A decoder that counts what it decodes, by the bytes it was given."""

    def __init__(self, real: Any, seen: Counter[bytes]) -> None:
        self._real = real
        self._seen = seen

    def decode(self, data: Any) -> Any:
        self._seen[bytes(data)] += 1
        return self._real.decode(data)


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> Counter[bytes]:
    """Every decode of a whole frame (``decode_frame``) or batch item (``decode_item``) in the
    server, by the bytes decoded."""
    seen: Counter[bytes] = Counter()
    monkeypatch.setattr(_jsonrpc, "_frame_decoder", _Counted(_jsonrpc._frame_decoder, seen))
    monkeypatch.setattr(_jsonrpc, "_item_decoder", _Counted(_jsonrpc._item_decoder, seen))
    return seen


def _body(message: Any) -> bytes:
    return msgspec.json.encode(message)


async def test_every_route_decodes_a_posts_body_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A modern request (with and without progress), a modern notification, ``initialize``,
    a notification and a request POSTed to a session, a 2025-03-26 batch and its items, a
    2024-11-05 POST: each body, and each batch item, decoded exactly once."""
    seen = _count_decodes(monkeypatch)
    app, _ = make_app()
    posted: list[bytes] = []
    items: list[bytes] = []
    with trio.fail_after(20):
        async with serving(app) as address:

            async def post(body: bytes, headers: dict[str, str] | None = None) -> Any:
                posted.append(body)
                return await request(address, "POST", headers=headers, body=body)

            # 2026-07-28: a request answered as JSON, one answered as SSE (it reports
            # progress), a notification (202).
            got = await post(
                _body(modern(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})),
                modern_headers("tools/call", "add"),
            )
            assert got.status == 200 and got.json()["result"]["content"][0]["text"] == "3"
            progress = {"name": "countdown", "arguments": {}, "_meta": {"progressToken": "p"}}
            got = await post(
                _body(modern(2, "tools/call", progress)), modern_headers("tools/call", "countdown")
            )
            assert got.headers["content-type"] == "text/event-stream"
            assert b"liftoff" in got.body and b'"progress":1' in got.body
            notification = modern(3, "notifications/roots/list_changed")
            del notification["id"]
            got = await post(_body(notification), {"mcp-protocol-version": "2026-07-28"})
            assert got.status == 202 and got.body == b""
            # A 2025-03-26 session: initialize, initialized, a request, a batch.
            got = await post(_body(init_body("2025-03-26")))
            assert got.status == 200
            session = {"mcp-session-id": got.headers["mcp-session-id"]}
            assert (await post(_body(NOTIFY_INITIALIZED), session)).status == 202
            got = await post(_body(call(4, "add", a=2, b=2)), session)
            assert got.json()["result"]["content"][0]["text"] == "4"
            items = [_body(call(5, "add", a=1, b=1)), b'{"jsonrpc":"2.0","id":6,"method":"ping"}']
            got = await post(b"[" + b",".join(items) + b"]", session)
            assert sorted(reply["id"] for reply in got.json()) == [5, 6]
    # A 2024-11-05 session: its POSTs answered 202, their answers on the GET stream.
    legacy, _ = make_app()
    with trio.fail_after(20):
        async with serving(legacy, "sse") as address:
            stream = await connect(address)
            await stream.send("GET", "/sse", headers={"accept": "text/event-stream"})
            assert (await stream.head()).status == 200
            endpoint = await stream.next_event()
            assert endpoint is not None and endpoint.event == "endpoint"
            initialized = {**NOTIFY_INITIALIZED, "params": {}}  # (bytes of its own)
            for message in (init_body("2024-11-05"), initialized, call(7, "add", a=3, b=4)):
                posted.append(_body(message))
                response = await request(address, "POST", endpoint.data, body=posted[-1])
                assert response.status == 202
            answers = [await stream.next_event(), await stream.next_event()]
            assert [json.loads(a.data)["id"] for a in answers if a is not None] == [1, 7]
            await stream.aclose()
    assert {body: seen[body] for body in posted} == dict.fromkeys(posted, 1)
    assert {item: seen[item] for item in items} == dict.fromkeys(items, 1)


async def test_a_batch_naming_an_id_twice_is_answered_once_per_id() -> None:
    """Two requests of one 2025-03-26 batch with the same id: the second is refused -32600
    by the POST, which judges the batch's ids (JSON-RPC 2.0 section 4: ids correlate), and
    the first is answered; each id gets one answer, whether the first finished without
    waiting (``countdown`` from 0: never in flight) or waited (``add``: a worker thread)."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            got = await request(address, "POST", body=init_body("2025-03-26"))
            session = {"mcp-session-id": got.headers["mcp-session-id"]}
            await request(address, "POST", headers=session, body=NOTIFY_INITIALIZED)
            for first, second in (
                (call(1, "countdown", start=0), call(1, "countdown", start=0)),
                (call(1, "add", a=1, b=1), call(1, "add", a=2, b=2)),
            ):
                batch = [first, second, call(2, "add", a=0, b=3)]
                got = await request(address, "POST", headers=session, body=batch)
                assert got.status == 200
                replies = got.json()
                assert len(replies) == 3, replies
                results = {reply["id"]: reply["result"] for reply in replies if "result" in reply}
                errors = [reply for reply in replies if "error" in reply]
                assert sorted(results) == [1, 2] and len(errors) == 1, replies
                assert results[2]["content"][0]["text"] == "3"
                assert errors[0]["id"] == 1 and errors[0]["error"] == {
                    "code": -32600,
                    "message": "Invalid Request: Duplicate request id 1 is in flight",
                }


async def test_an_id_waited_for_is_refused_with_the_cores_words() -> None:
    """A POST naming the id of a request another POST still waits for: 400, its JSON-RPC
    error the one the core gives any duplicate id, answering that id."""
    app, seen = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            got = await request(address, "POST", body=init_body())
            session = {"mcp-session-id": got.headers["mcp-session-id"]}
            await request(address, "POST", headers=session, body=NOTIFY_INITIALIZED)
            slow = await connect(address)
            await slow.send("POST", "/mcp", headers=session, body=call(8, "slow", tag="a"))
            await until(lambda: seen["started"])
            again = await request(address, "POST", headers=session, body=call(8, "add", a=1, b=1))
            assert again.status == 400
            error = again.json()
            assert error["id"] == 8
            assert error["error"] == {
                "code": -32600,
                "message": "Invalid Request: Duplicate request id 8 is in flight",
            }
            await slow.aclose()
