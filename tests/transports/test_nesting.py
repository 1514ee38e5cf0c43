"""issue 16 item 1: JSON nested deeper than the decoder can follow (1,000 and 100,000 levels,
alone or inside ``params``) is a -32700 with id null on every transport; the connection and the
requests in flight on it live on, and the log gets one line without a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import trio
from trio_websocket import open_websocket_url

from ..peers import ROOT, TRANSPORTS, open_peer, open_stdio_peer
from ..servers.wire import app as wire_app
from .app import init_body, make_app, modern, modern_headers, serving
from .http_client import connect, request

DEPTHS = [1000, 100_000]


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def nested_in_params(depth: int, request_id: Any = 7) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%b,"method":"tools/call","params":{"name":"echo","arguments":'
    return head % json.dumps(request_id).encode() + nested(depth) + b"}}"


def _is_deep_error(reply: Any) -> bool:
    return (
        reply.get("id") is None
        and reply["error"]["code"] in (-32700, -32600)
        and "nest" in reply["error"]["message"]
    )


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert not [r for r in caplog.records if r.exc_info], caplog.text
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_deep_nesting_on_stream_transports(
    kind: str, depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with trio.fail_after(30):
        async with open_peer(kind, wire_app) as peer:
            await peer.initialize()
            # A request in flight while the hostile frames arrive.
            inflight = {"name": "slow", "arguments": {"seconds": 0.5, "tag": "deep"}}
            await peer.send(
                {"jsonrpc": "2.0", "id": "inflight", "method": "tools/call", "params": inflight}
            )
            await peer.send(nested(depth))
            await peer.send(nested_in_params(depth))
            replies = [await peer.receive(10) for _ in range(3)]
            deep = [r for r in replies if r.get("id") != "inflight"]
            assert len(deep) == 2 and all(_is_deep_error(r) for r in deep), deep
            (slow,) = [r for r in replies if r.get("id") == "inflight"]
            assert slow["result"]["content"][0]["text"] == "slept 0.5"
            assert (await peer.call("ping"))["result"] == {}
    _no_traceback(caplog)


async def test_every_depth_near_the_limit_is_answered_once() -> None:
    """Depths that the envelope decoder follows but a handler's (deeper) decoder may not: each
    request gets exactly one answer, a result or an error naming its id."""
    with trio.fail_after(60):
        async with open_peer("memory-ndjson", wire_app) as peer:
            await peer.initialize()
            for depth in range(850, 1001, 5):
                await peer.send_bytes(peer.frame(nested_in_params(depth, depth)))
                reply = await peer.receive(10)
                assert reply["id"] in (depth, None), reply
                assert "result" in reply or reply["error"]["code"] in (-32700, -32600, -32602)
            assert (await peer.call("ping"))["result"] == {}


async def test_deep_notification_and_response_near_the_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cancellation notice or a client's error response that the envelope decoder follows
    but their own decoders do not: ignored with a log line, the connection reads on."""
    with trio.fail_after(60):
        async with open_peer("memory-ndjson", wire_app) as peer:
            await peer.initialize()
            for depth in range(850, 1001):
                deep = nested(depth)
                cancel = (
                    b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                    b'"params":{"requestId":1,"why":%b}}' % deep
                )
                error = b'{"jsonrpc":"2.0","id":"s1","error":{"code":1,"message":"m","data":%b}}'
                # Alone, and in batches (whose items are decoded again, deeper in the stack).
                for frame in (cancel, error % deep, b"[%b]" % cancel, b"[%b]" % (error % deep)):
                    await peer.send_bytes(peer.frame(frame))
            await peer.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            while isinstance(reply := await peer.receive(10), list) or reply.get("id") != "p":
                # Too deep for the envelope (or the batch item) already.
                items = reply if isinstance(reply, list) else [reply]
                assert all(_is_deep_error(item) for item in items), reply
            assert reply["result"] == {}
    _no_traceback(caplog)


@pytest.mark.parametrize("depth", DEPTHS)
async def test_stdio_server_lives_on_and_logs_one_line(depth: int) -> None:
    """The issue's reproduction: a 2 KB line to the quickstart over stdio."""
    quickstart = ROOT / "examples" / "quickstart.py"
    with trio.fail_after(30):
        async with open_stdio_peer(quickstart) as (peer, process, err_path):
            await peer.initialize()
            await peer.send(nested(depth))
            assert _is_deep_error(await peer.receive(10))
            await peer.send(nested_in_params(depth))
            assert _is_deep_error(await peer.receive(10))
            assert (await peer.call("ping"))["result"] == {}
            assert process.returncode is None
            stderr = err_path.read_text()
    assert "Traceback" not in stderr, stderr
    assert len([line for line in stderr.splitlines() if "nest" in line]) == 2, stderr


async def _post(conn: Any, body: bytes, headers: dict[str, str] | None = None) -> Any:
    await conn.send("POST", "/mcp", headers=headers, body=body)
    response = await conn.response()
    conn.conn.start_next_cycle()  # the same keep-alive connection (raises when it closed)
    return response


@pytest.mark.parametrize("depth", DEPTHS)
async def test_deep_nesting_over_http(depth: int, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    app, _ = make_app()
    with trio.fail_after(30):
        async with serving(app) as address:
            conn = await connect(address)
            for body in (nested(depth), nested_in_params(depth)):
                response = await _post(conn, body)
                assert response.status == 400, response
                assert _is_deep_error(response.json()), response
            # The same keep-alive connection still serves, a modern request...
            ok = await _post(
                conn,
                json.dumps(modern(1, "tools/list")).encode(),
                modern_headers("tools/list"),
            )
            assert ok.status == 200 and ok.json()["result"]["tools"], ok
            # ...and a handshake-era session fed the same frames.
            init = await _post(conn, json.dumps(init_body()).encode())
            session = {"mcp-session-id": init.headers["mcp-session-id"]}
            session["mcp-protocol-version"] = "2025-11-25"
            for body in (nested(depth), nested_in_params(depth)):
                response = await _post(conn, body, session)
                assert response.status == 400, response
                assert _is_deep_error(response.json()), response
            ping = await _post(conn, b'{"jsonrpc":"2.0","id":3,"method":"ping"}', session)
            assert ping.status == 200 and ping.json()["result"] == {}, ping
            await conn.aclose()
    _no_traceback(caplog)


@pytest.mark.parametrize("depth", DEPTHS)
async def test_deep_nesting_over_websocket(depth: int, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    app, _ = make_app()
    with trio.fail_after(30):
        async with (
            serving(app, "ws") as (host, port),
            open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
        ):
            await ws.send_message(json.dumps(init_body()))
            assert "result" in json.loads(await ws.get_message())
            await ws.send_message(
                '{"jsonrpc":"2.0","id":"inflight","method":"tools/call",'
                '"params":{"name":"slow","arguments":{"tag":"t","seconds":0.5}}}'
            )
            await ws.send_message(nested(depth).decode())
            await ws.send_message(nested_in_params(depth).decode())
            replies = [json.loads(await ws.get_message()) for _ in range(3)]
            deep = [r for r in replies if r.get("id") != "inflight"]
            assert len(deep) == 2 and all(_is_deep_error(r) for r in deep), replies
            assert [r["result"]["content"][0]["text"] for r in replies if r.get("id")] == ["t"]
            await ws.send_message('{"jsonrpc":"2.0","id":9,"method":"ping"}')
            assert json.loads(await ws.get_message()) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    _no_traceback(caplog)


@pytest.mark.parametrize("depth", DEPTHS)
async def test_deep_nesting_over_legacy_sse(depth: int, caplog: pytest.LogCaptureFixture) -> None:
    """The 2024-11-05 transport: a POST to the messages endpoint nested too deeply is 400
    -32700, and the session's stream serves on."""
    caplog.set_level(logging.INFO)
    app, _ = make_app()
    with trio.fail_after(30):
        async with serving(app, "sse") as address:
            stream = await connect(address)
            await stream.send("GET", "/sse", headers={"accept": "text/event-stream"})
            assert (await stream.head()).status == 200
            endpoint = await stream.next_event()
            assert endpoint is not None and endpoint.event == "endpoint"
            for body in (nested(depth), nested_in_params(depth)):
                response = await request(address, "POST", endpoint.data, body=body)
                assert response.status == 400, response
                assert _is_deep_error(response.json()), response
            ok = await request(address, "POST", endpoint.data, body=init_body("2024-11-05"))
            assert ok.status == 202, ok
            event = await stream.next_event()
            assert event is not None and json.loads(event.data)["id"] == 1
            await stream.aclose()
    _no_traceback(caplog)
