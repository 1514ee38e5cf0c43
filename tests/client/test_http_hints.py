"""Server hints on the wire: an SSE ``retry:`` field and ``Retry-After`` set the wait before
the client's next attempt (a scripted HTTP peer, so the bytes and the timing are exact)."""

from __future__ import annotations

import functools
import json
from typing import Any

import trio

from runtime.client import Backoff, open_client

from ..wire import read_head

_SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
FAST = Backoff(initial=0.01, multiplier=1.0, cap=5.0, max_attempts=5, max_elapsed=20)


async def _read_request(stream: trio.SocketStream) -> tuple[str, dict[str, str], bytes]:
    data = await read_head(stream)
    if data is None:
        raise EOFError
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        body += await stream.receive_some(65536)
    return lines[0], headers, body


def _json(status: str, payload: Any, extra: str = "") -> bytes:
    body = json.dumps(payload).encode()
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


class ScriptedPeer:
    """A handshake-era Streamable HTTP server with scripted misbehaviour."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[float, dict[str, str]]] = {}  # what happened, when
        self.calls = 0
        self.call_id: Any = None

    async def handle(self, stream: trio.SocketStream) -> None:
        try:
            line, headers, body = await _read_request(stream)
        except EOFError:
            return
        now = trio.current_time()
        method = line.split()[0]
        if method == "DELETE":
            await stream.send_all(_json("200 OK", {}))
        elif method == "GET" and "last-event-id" not in headers:
            await stream.send_all(_json("405 Method Not Allowed", {}))
        elif method == "GET":  # the resumption: the rest of the call's stream
            self.seen["resume"] = (now, headers)
            result = {
                "jsonrpc": "2.0",
                "id": self.call_id,
                "result": {"content": [{"type": "text", "text": "resumed"}]},
            }
            await stream.send_all(_SSE_HEAD + f"id: s_2\ndata: {json.dumps(result)}\n\n".encode())
        else:
            message = json.loads(body)
            if message.get("method") == "initialize":
                result = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1"},
                }
                await stream.send_all(
                    _json(
                        "200 OK",
                        {"jsonrpc": "2.0", "id": message["id"], "result": result},
                        "Mcp-Session-Id: abc\r\n",
                    )
                )
            elif "id" not in message:
                await stream.send_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            elif message["method"] == "tools/list":
                self.calls += 1
                self.seen[f"list-{self.calls}"] = (now, headers)
                if self.calls == 1:  # refused before processing: come back in 1 s
                    await stream.send_all(
                        _json("503 Service Unavailable", {}, "Retry-After: 1\r\n")
                    )
                else:
                    await stream.send_all(
                        _json(
                            "200 OK",
                            {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}},
                        )
                    )
            else:  # tools/call: one event with an id and retry: 700 ms, then the line drops
                self.call_id = message["id"]
                self.seen["call"] = (now, headers)
                note = {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": "working"},
                }
                await stream.send_all(
                    _SSE_HEAD + f"id: s_1\nretry: 700\ndata: {json.dumps(note)}\n\n".encode()
                )
        await stream.aclose()


async def test_retry_after_and_sse_retry_set_the_wait() -> None:
    peer = ScriptedPeer()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, peer.handle, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(20):
            async with open_client(
                f"http://127.0.0.1:{port}/mcp", era="handshake", backoff=FAST
            ) as client:
                assert (await client.list_tools()).tools == []
                result = await client.call_tool("anything", {})
                assert result.text == "resumed"
        nursery.cancel_scope.cancel()
    # Retry-After: 1 -> the second tools/list came at least 1 s after the refused one
    # (the policy alone would have waited at most 0.01 s).
    assert peer.seen["list-2"][0] - peer.seen["list-1"][0] >= 0.95
    # retry: 700 -> the resumption GET came at least 0.7 s after the call's stream was cut,
    # with the last event id seen and the session id.
    resumed_at, headers = peer.seen["resume"]
    assert resumed_at - peer.seen["call"][0] >= 0.68
    assert headers["last-event-id"] == "s_1" and headers["mcp-session-id"] == "abc"
