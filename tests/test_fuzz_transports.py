"""Hostile input end to end, on every transport (issue 16): generated frames (tests/hostile.py)
split and merged at random points. Each example asserts: no crash, no traceback on the wire,
every tracked request answered exactly once, and the connection still serves afterwards.

``FUZZ_EXAMPLES`` (default 15) scales the examples per transport; maintainers run e.g.
``FUZZ_EXAMPLES=500 .venv/bin/pytest tests/test_fuzz_transports.py``.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio_websocket import open_websocket_url

from runtime.transports import make_framer

from .hostile import FRAMES, Frame, assert_no_traceback, check_replies, chunks, split_points
from .peers import ROOT, WIRE_SERVER, cli, open_peer
from .servers.wire import app as wire_app
from .transports.app import init_body, make_app, modern, modern_headers, serving
from .transports.http_client import connect

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
INIT = msgspec.json.encode(init_body(request_id="init"))
FINAL = b'{"jsonrpc":"2.0","id":"final","method":"ping"}'


def _stream(frames: list[Frame], framing: str) -> tuple[bytes, list[str]]:
    framer = make_framer(framing, 64 * 1024 * 1024)  # type: ignore[arg-type]
    # NDJSON raw: the framer's encode refuses blank payloads, which a peer may still send.
    encode = (lambda data: data + b"\n") if framing == "ndjson" else framer.encode
    data = b"".join(encode(frame.data) for frame in frames)
    return data, [request_id for frame in frames for request_id in frame.tracked]


def _collect(decoded: list[Any], tracked: list[str]) -> bool:
    """Whether the final ping and every tracked request have been answered."""
    ids = {
        item.get("id")
        for reply in decoded
        for item in (reply if isinstance(reply, list) else [reply])
        if isinstance(item, dict)
    }
    return "final" in ids and all(request_id in ids for request_id in tracked)


STREAMS = ["memory-ndjson", "tcp-ndjson", "tcp-content-length", "unix-content-length"]


@pytest.mark.parametrize("kind", STREAMS)
@FUZZ
@given(frames=FRAMES, data=st.data())
def test_stream_transports_survive_hostile_frames(
    kind: str, frames: list[Frame], data: st.DataObject
) -> None:
    framing = "ndjson" if kind.endswith("ndjson") else "content-length"
    payload, tracked = _stream(frames, framing)
    cuts = data.draw(split_points(len(payload)))

    async def main() -> None:
        with trio.fail_after(20):
            async with open_peer(kind, wire_app) as peer:
                await peer.send_bytes(peer.frame(INIT))
                assert (await peer.receive())["id"] == "init"
                for chunk in chunks(payload, cuts):
                    await peer.send_bytes(chunk)
                await peer.send_bytes(peer.frame(FINAL))
                wire, decoded = b"", []
                while not _collect(decoded, tracked):
                    frame = await peer.receive_frame(15)
                    wire += frame
                    decoded.append(msgspec.json.decode(frame))
                assert_no_traceback(wire)
                check_replies([r for r in decoded if not _is_final(r)], tracked)
                # Still usable: a tool call works after all that.
                reply = await peer.call("tools/call", {"name": "echo", "arguments": {"text": "ok"}})
                assert reply["result"]["content"][0]["text"] == "ok", reply

    trio.run(main)


def _is_final(reply: Any) -> bool:
    return isinstance(reply, dict) and reply.get("id") == "final"


class _StdioServer:
    """One ``mcp-runtime serve`` process for all examples (a process per example would spend
    the time budget on start-up); a thread turns its stdout into frames."""

    def __init__(self, framing: str) -> None:
        self.framing = framing
        self.process = subprocess.Popen(
            cli("serve", str(WIRE_SERVER), "--framing", framing),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        self.frames: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.send(INIT)
        assert msgspec.json.decode(self.receive())["id"] == "init"

    def _read(self) -> None:
        framer = make_framer(self.framing, 64 * 1024 * 1024)  # type: ignore[arg-type]
        assert self.process.stdout is not None
        while data := self.process.stdout.read1(65536):
            framer.feed(data)
            while (frame := framer.next_frame()) is not None:
                self.frames.put(frame)
        self.frames.put(None)

    def send(self, payload: bytes, framed: bool = False) -> None:
        assert self.process.stdin is not None
        if not framed:
            payload = make_framer(self.framing, 1 << 26).encode(payload)  # type: ignore[arg-type]
        self.process.stdin.write(payload)
        self.process.stdin.flush()

    def receive(self, timeout: float = 15.0) -> bytes:
        frame = self.frames.get(timeout=timeout)
        assert frame is not None, "the server closed stdout (it died)"
        return frame

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=10)


@pytest.fixture(scope="module", params=["ndjson", "content-length"])
def stdio_server(request: pytest.FixtureRequest) -> Iterator[_StdioServer]:
    server = _StdioServer(request.param)
    try:
        yield server
    finally:
        try:
            assert server.close() == 0  # it never died, and it ends well
        finally:
            server.process.kill()


@FUZZ
@given(frames=FRAMES, data=st.data())
def test_stdio_survives_hostile_frames(
    stdio_server: _StdioServer, frames: list[Frame], data: st.DataObject
) -> None:
    payload, tracked = _stream(frames, stdio_server.framing)
    for chunk in chunks(payload, data.draw(split_points(len(payload)))):
        stdio_server.send(chunk, framed=True)
    stdio_server.send(FINAL)
    wire, decoded = b"", []
    while not _collect(decoded, tracked):
        frame = stdio_server.receive()
        wire += frame
        decoded.append(msgspec.json.decode(frame))
    assert_no_traceback(wire)
    check_replies([r for r in decoded if not _is_final(r)], tracked)
    assert stdio_server.process.poll() is None


@FUZZ
@given(frames=FRAMES)
def test_websocket_survives_hostile_messages(frames: list[Frame]) -> None:
    tracked = [request_id for frame in frames for request_id in frame.tracked]

    async def main() -> None:
        app, _ = make_app()
        with trio.fail_after(20):
            async with (
                serving(app, "ws") as (host, port),
                open_websocket_url(f"ws://{host}:{port}/mcp", subprotocols=["mcp"]) as ws,
            ):
                await ws.send_message(INIT.decode())
                await ws.get_message()
                for frame in frames:  # a text message carries text: bad UTF-8 is a 1007 test
                    await ws.send_message(frame.data.decode("utf-8", "replace"))
                await ws.send_message(FINAL.decode())
                wire, decoded = "", []
                while not _collect(decoded, tracked):
                    message = await ws.get_message()
                    wire += message
                    decoded.append(msgspec.json.decode(message))
                assert_no_traceback(wire.encode())
                check_replies([r for r in decoded if not _is_final(r)], tracked)

    trio.run(main)


@FUZZ
@given(
    frames=FRAMES,
    modern_headers_each=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_http_survives_hostile_bodies(frames: list[Frame], modern_headers_each: list[bool]) -> None:
    """Each frame a POST body on one keep-alive connection: a 2xx/4xx answer carrying
    JSON-RPC (or nothing, 202), never a 5xx or a traceback; then a valid call is served."""

    async def main() -> None:
        app, _ = make_app()
        with trio.fail_after(30):
            async with serving(app) as address:
                conn = await connect(address)
                for frame, with_headers in zip(frames, modern_headers_each, strict=False):
                    headers = modern_headers("tools/call", "echo") if with_headers else {}
                    await conn.send("POST", "/mcp", headers=headers, body=frame.data)
                    response = await conn.response()
                    assert response.status < 500, response
                    assert_no_traceback(response.body)
                    if response.headers.get("content-type") == "application/json":
                        check_replies([response.json()], frame.tracked, exactly=False)
                    if response.headers.get("connection") == "close":
                        await conn.aclose()
                        conn = await connect(address)
                    else:
                        conn.conn.start_next_cycle()
                body = modern(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
                await conn.send(
                    "POST", "/mcp", headers=modern_headers("tools/call", "add"), body=body
                )
                response = await conn.response()
                assert response.status == 200, response
                assert response.json()["result"]["content"][0]["text"] == "3"
                await conn.aclose()

    trio.run(main)
