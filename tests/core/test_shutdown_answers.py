"""issue 16 item 4: every accepted request gets exactly one reply, its result or an error
saying the server is shutting down, flushed before the connection ends (EOF or SIGTERM)."""

from __future__ import annotations

import signal
from typing import Any

import trio

from ..peers import ROOT, open_stdio_peer
from ..servers.shutdown import app
from ..wire import RawPeer, open_memory_peer

SERVER = ROOT / "tests" / "servers" / "shutdown.py"


def _slow(request_id: Any, seconds: float = 60.0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"seconds": seconds}},
    }


async def _until_eof(peer: RawPeer) -> list[Any]:
    replies = []
    while True:
        try:
            replies.append(await peer.receive(10))
        except EOFError:
            return replies


def _check(replies: list[Any], unfinished: set[Any], finished: set[Any] = frozenset()) -> None:  # type: ignore[assignment]
    flat = [item for reply in replies for item in (reply if isinstance(reply, list) else [reply])]
    ids = [item["id"] for item in flat]
    assert sorted(map(str, ids)) == sorted(map(str, unfinished | finished)), flat  # each once
    for item in flat:
        if item["id"] in unfinished:
            assert item["error"]["code"] == -32000, item
            assert "shutting down" in item["error"]["message"], item
        else:
            assert item["result"]["content"][0]["text"] == "slept", item


async def test_eof_answers_every_unfinished_request() -> None:
    with trio.fail_after(20):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            for index in range(5):
                await peer.send(_slow(index))
            await peer.send(_slow("quick", 0.05))
            await peer.send([_slow("b1"), _slow("b2", 0.05)])
            await trio.sleep(0.2)
            await peer.send_stream.send_stream.aclose()  # type: ignore[attr-defined]
            replies = await _until_eof(peer)
    _check(replies, {0, 1, 2, 3, 4, "b1"}, {"quick", "b2"})


async def test_sigterm_answers_calls_that_outlive_the_grace() -> None:
    """The issue's reproduction: 5 calls outliving the grace; SIGTERM; each gets a reply."""
    with trio.fail_after(30):
        async with open_stdio_peer(SERVER) as (peer, process, _err):
            await peer.initialize()
            for index in range(5):
                await peer.send(_slow(index))
            await trio.sleep(0.3)
            process.send_signal(signal.SIGTERM)
            replies = await _until_eof(peer)
            assert await process.wait() == 0
    _check(replies, {0, 1, 2, 3, 4})


async def test_stdin_eof_answers_the_call_in_flight() -> None:
    with trio.fail_after(30):
        async with open_stdio_peer(SERVER) as (peer, process, _err):
            await peer.initialize()
            await peer.send(_slow("eof"))
            await trio.sleep(0.3)
            await process.stdin.aclose()  # type: ignore[union-attr]
            replies = await _until_eof(peer)
            assert await process.wait() == 0
    _check(replies, {"eof"})


async def test_http_session_post_in_flight_is_answered_on_shutdown() -> None:
    from ..transports.app import call, init_body, make_app, serving
    from ..transports.http_client import request, sse_messages

    server, _ = make_app(shutdown_grace=0.3)
    with trio.fail_after(20):
        async with serving(server) as address:
            init = await request(address, "POST", body=init_body())
            headers = {
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            await request(
                address,
                "POST",
                headers=headers,
                body={"jsonrpc": "2.0", "method": "notifications/initialized"},
            )
            replies: list[Any] = []
            async with trio.open_nursery() as nursery:

                async def post() -> None:
                    response = await request(
                        address, "POST", headers=headers, body=call(7, "slow", tag="t")
                    )
                    replies.extend(
                        sse_messages(response.body)
                        if response.headers["content-type"].startswith("text/event-stream")
                        else [response.json()]
                    )

                nursery.start_soon(post)
                await trio.sleep(0.3)
                server.shutdown()
    (reply,) = [r for r in replies if r.get("id") == 7]
    assert reply["error"]["code"] == -32000 and "shutting down" in reply["error"]["message"]


async def test_modern_http_requests_in_flight_are_answered_on_shutdown() -> None:
    """The direct path (one modern POST, no Connection): a JSON answer not started yet is a
    503 carrying the error; one already streaming SSE ends with the error event."""
    from ..transports.app import make_app, modern, modern_headers, serving
    from ..transports.http_client import request, sse_messages

    server, _ = make_app(shutdown_grace=0.3)
    out: dict[str, Any] = {}
    with trio.fail_after(20):
        async with serving(server) as address, trio.open_nursery() as nursery:

            async def post(key: str, name: str, arguments: dict[str, Any]) -> None:
                params: dict[str, Any] = {"name": name, "arguments": arguments}
                if key == "sse":
                    params["_meta"] = {"progressToken": "p"}
                body = modern(key, "tools/call", params)
                out[key] = await request(
                    address, "POST", headers=modern_headers("tools/call", name), body=body
                )

            nursery.start_soon(post, "json", "slow", {"tag": "t"})
            nursery.start_soon(post, "sse", "countdown", {"start": 3, "delay": 30})
            await trio.sleep(0.3)
            server.shutdown()
    json_reply = out["json"]
    assert json_reply.status == 503, json_reply
    assert json_reply.json()["id"] == "json"
    assert json_reply.json()["error"]["code"] == -32000
    events = sse_messages(out["sse"].body)
    assert events[0]["method"] == "notifications/progress", events
    assert events[-1]["id"] == "sse" and events[-1]["error"]["code"] == -32000, events


async def test_websocket_request_in_flight_is_answered_before_1001() -> None:
    import json

    from trio_websocket import ConnectionClosed, open_websocket_url

    from ..transports.app import call, init_body, make_app, serving

    server, _ = make_app(shutdown_grace=0.3)
    with trio.fail_after(20):
        async with (
            serving(server, "ws") as (host, port),
            open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
        ):
            await ws.send_message(json.dumps(init_body()))
            await ws.get_message()
            await ws.send_message(json.dumps(call(4, "slow", tag="w")))
            await trio.sleep(0.2)
            server.shutdown()
            reply = json.loads(await ws.get_message())
            assert reply["id"] == 4 and reply["error"]["code"] == -32000, reply
            try:
                await ws.get_message()
            except ConnectionClosed as closed:
                assert closed.reason.code == 1001
            else:
                raise AssertionError("the socket stayed open")
