"""Answers the client cannot take: nested 100,000 levels deep (200 KB) or larger than
``max_message_size``. Nothing raises out of the client and the connection serves on; over
HTTP and WebSocket, where the answer's request is known, it fails with ``BadMessage`` at
once, naming the rule or the limit, and is never fetched again; over stream transports,
where a dropped frame names no request, the request's timeout says what was dropped.
Raw servers on loopback (and a stdio script) send the exact bytes."""

from __future__ import annotations

import json
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.client import Backoff, BadMessage, RequestTimeout, open_client

from .hostile import (
    DISCOVERED,
    NO_TOOLS,
    Exchange,
    HttpPeer,
    LinePeer,
    deep,
    reply,
    serve_lines,
)
from .test_websocket_stall import frame, raw_peer

HOSTILE = Path(__file__).with_name("hostile_stdio.py")
LEVELS = 100_000
MIB = 1 << 20

# -- nesting ----------------------------------------------------------------------------------

#: Where the nesting is, in a message the server sends while a tools/list waits.
DEEP_MESSAGES = {
    "result": lambda rid: b'{"jsonrpc":"2.0","id":%d,"result":' % rid + deep(LEVELS) + b"}",
    "error data": lambda rid: (
        b'{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"x","data":' % rid
        + deep(LEVELS)
        + b"}}"
    ),
    "batch": lambda rid: b'[{"jsonrpc":"2.0","id":%d,"result":' % rid + deep(LEVELS) + b"}]",
    "notification params": lambda rid: (
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":'
        + deep(LEVELS)
        + b"}}"
    ),
}


@pytest.mark.parametrize("where", sorted(DEEP_MESSAGES))
async def test_deep_nesting_over_a_stream_is_dropped_and_the_client_serves_on(where: str) -> None:
    async def script(peer: LinePeer) -> None:
        listing = await peer.discover()
        await peer.send(DEEP_MESSAGES[where](listing["id"]))
        if where == "notification params":  # the answer follows it and arrives
            await peer.send(reply(listing, NO_TOOLS))
        else:
            cancelled = await peer.receive()  # the client gives up on its request
            assert cancelled["method"] == "notifications/cancelled"
        await peer.send(reply(await peer.receive(), NO_TOOLS))
        await trio.sleep_forever()

    async with serve_lines(script) as target:
        with trio.fail_after(10):
            async with open_client(target, era="modern", timeout=1) as client:
                if where == "notification params":
                    assert (await client.list_tools()).tools == []
                else:
                    with pytest.raises(RequestTimeout, match="JSON nested too deeply"):
                        await client.list_tools()
                assert (await client.list_tools()).tools == []


async def test_every_depth_near_the_limit_is_answered_or_dropped() -> None:
    """Requests from the server nested 900 to 1,000 levels deep (the server's own sweep,
    tests/transports/test_nesting.py): each is answered (its handler's result, or -32602
    "nested too deeply" where the envelope was read but its params were not), or dropped
    as unreadable, and every answered depth is below every dropped one."""
    answers: dict[Any, dict[str, Any]] = {}

    async def script(peer: LinePeer) -> None:
        listing = await peer.discover()
        for n in range(900, 1001):
            await peer.send(
                b'{"jsonrpc":"2.0","id":%d,"method":"roots/list","params":{"x":' % n
                + deep(n)
                + b"}}"
            )
        await peer.send(b'{"jsonrpc":"2.0","id":"last","method":"ping"}')
        while "last" not in answers:
            message = await peer.receive()
            answers[message["id"]] = message
        await peer.send(reply(listing, NO_TOOLS))
        await trio.sleep_forever()

    async def roots(params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": []}

    async with serve_lines(script) as target:
        with trio.fail_after(10):
            async with open_client(
                target, era="modern", roots=roots, max_server_requests=200, timeout=5
            ) as client:
                assert (await client.list_tools()).tools == []
    answered = sorted(depth for depth in answers if depth != "last")
    assert answered and answered[-1] < 1000
    assert answered == list(range(900, answered[-1] + 1))  # answered below, dropped above
    for depth in answered:
        message = answers[depth]
        assert message.get("result") == {"roots": []} or message["error"] == {
            "code": -32602,
            "message": "Invalid params: nested too deeply",
        }, message


async def test_a_deep_answer_over_stdio(tmp_path: Path) -> None:
    command = [sys.executable, str(HOSTILE), "deep", str(tmp_path / "sent.log")]
    with trio.fail_after(20):
        async with open_client(command, timeout=1) as client:
            with pytest.raises(RequestTimeout, match="JSON nested too deeply"):
                await client.list_tools()
            assert (await client.list_tools()).tools == []


def _http_script(answer: Any, calls: list[Exchange]) -> Any:
    """A 2026-07-28 server whose first tools/list answer is ``answer(exchange)``."""

    async def script(exchange: Exchange) -> bool:
        message = exchange.message
        if message.get("method") == "server/discover":
            await exchange.json(reply(message, DISCOVERED))
        elif message.get("method") == "tools/list":
            calls.append(exchange)
            if len(calls) == 1:
                return bool(await answer(exchange))
            await exchange.json(reply(message, NO_TOOLS))
        else:
            await exchange.accepted()
        return False

    return script


async def _deep_json(exchange: Exchange) -> bool:
    body = b'{"jsonrpc":"2.0","id":%d,"result":' % exchange.message["id"] + deep(LEVELS) + b"}"
    await exchange.json(body)
    return False


async def _deep_event(exchange: Exchange) -> bool:
    await exchange.start_events()
    message = b'{"jsonrpc":"2.0","id":%d,"result":' % exchange.message["id"] + deep(LEVELS) + b"}"
    await exchange.event(message)
    return True  # the stream ends after it


@pytest.mark.parametrize("answer", [_deep_json, _deep_event], ids=["json", "sse"])
async def test_a_deep_answer_over_http_fails_its_request_at_once(answer: Any) -> None:
    calls: list[Exchange] = []
    peer = HttpPeer(_http_script(answer, calls))
    async with peer.serving() as url:
        with trio.fail_after(10):
            async with open_client(url, era="modern", timeout=30) as client:
                started = time.monotonic()
                with pytest.raises(BadMessage, match=r"tools/list: .*JSON nested too deeply"):
                    await client.list_tools()
                assert time.monotonic() - started < 5  # not the 30 s timeout
                assert (await client.list_tools()).tools == []
    assert len(calls) == 2  # never fetched again


# -- size -------------------------------------------------------------------------------------


def _big_result(request_id: int, size: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "result": {"tools": [], "padding": "x" * size}}
    ).encode()


async def _big_json(exchange: Exchange) -> bool:
    await exchange.json(_big_result(exchange.message["id"], 4 * MIB + 1024))
    return False


async def _big_chunked(exchange: Exchange) -> bool:
    """No Content-Length: the client finds out as the body arrives."""
    body = _big_result(exchange.message["id"], 4 * MIB + 1024)
    await exchange.stream.send_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + body
    )
    return True


async def _big_event(exchange: Exchange) -> bool:
    await exchange.start_events()
    await exchange.event(_big_result(exchange.message["id"], 4 * MIB + 1024))
    return True


@pytest.mark.parametrize(
    "answer", [_big_json, _big_chunked, _big_event], ids=["content-length", "until-close", "sse"]
)
async def test_an_answer_over_max_message_size_over_http_fails_at_once(answer: Any) -> None:
    """Once fetched 94-96 times in 5 s (each 200 started a fresh retry budget), then
    reported as no answer: now one request, and an error naming the limit."""
    calls: list[Exchange] = []
    peer = HttpPeer(_http_script(answer, calls))
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="modern", timeout=5) as client:
                started = time.monotonic()
                with pytest.raises(BadMessage, match=r"max_message_size \(4194304 bytes\)"):
                    await client.list_tools()
                assert time.monotonic() - started < 4  # not the 5 s timeout
                assert len(calls) == 1
                assert (await client.list_tools()).tools == []


async def test_max_message_size_is_configurable() -> None:
    calls: list[Exchange] = []
    peer = HttpPeer(_http_script(_big_json, calls))
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="modern", max_message_size=8 * MIB) as client:
                assert (await client.list_tools()).tools == []
    assert len(calls) == 1


async def test_an_answer_over_max_message_size_over_websocket_is_not_fetched_again() -> None:
    """trio-websocket closes the connection (1009); the client reconnects (WebSocket does)
    but does not send the request again, which would bring the same answer back."""
    handshakes = 0

    async def server(stream: trio.SocketStream) -> None:
        nonlocal handshakes
        handshakes += 1
        discover = frame(reply({"id": 1}, DISCOVERED))
        await stream.send_all(discover)
        await stream.receive_some(1 << 16)  # the tools/list (id 2)
        # (the client closes the connection as soon as the message goes past its limit)
        with suppress(trio.BrokenResourceError):
            await stream.send_all(frame(_big_result(2, 4 * MIB + 1024)))
        await trio.sleep_forever()

    async with raw_peer(server) as url:
        with trio.fail_after(20):
            async with open_client(
                url, era="modern", timeout=10, backoff=Backoff(initial=0.01, max_attempts=3)
            ) as client:
                started = time.monotonic()
                with pytest.raises(BadMessage, match=r"max_message_size \(4194304 bytes\)"):
                    await client.list_tools()
                assert time.monotonic() - started < 5
                await trio.sleep(0.3)  # room for a reconnect (and a re-send, were there one)
    assert handshakes <= 2  # the reconnect after the close, and nothing after it


async def test_an_answer_over_max_message_size_over_stdio_names_the_limit(
    tmp_path: Path,
) -> None:
    """A stream transport skips the frame and cannot tell whose answer it was: the request
    ends at its timeout, which says what was dropped; the next request is answered."""
    command = [sys.executable, str(HOSTILE), "big", str(tmp_path / "sent.log")]
    with trio.fail_after(20):
        async with open_client(command, timeout=1) as client:
            with pytest.raises(RequestTimeout, match="exceeds 4194304 bytes"):
                await client.list_tools()
            assert (await client.list_tools()).tools == []
