"""Fault injection (issue 16): peers that hang up mid-request, mid-response and mid-body, that
never read, that trickle; handlers that block the loop, raise BaseException subclasses, never
return; SIGTERM and SIGINT in each phase. Each case asserts the outcome docs/reliability.md
documents, and that every accepted request got its one reply (or its peer was gone)."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from .peers import ROOT, open_stdio_peer
from .servers.faults import app
from .transports.app import init_body, make_app, modern, modern_headers, serving
from .transports.http_client import connect
from .wire import RawPeer

FAULTS = ROOT / "tests" / "servers" / "faults.py"


def _call(request_id: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@asynccontextmanager
async def _tcp_server() -> AsyncIterator[tuple[str, int]]:
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_tcp, 0)
        yield address[:2]
        nursery.cancel_scope.cancel()


async def _client(address: tuple[str, int]) -> RawPeer:
    """A TCP peer past the handshake (requests before initialize are refused)."""
    stream = await trio.open_tcp_stream(*address)
    peer = RawPeer(stream, stream, "ndjson")
    await peer.initialize()
    return peer


async def _still_serves(address: tuple[str, int]) -> None:
    peer = await _client(address)
    reply = await peer.call("tools/call", {"name": "echo", "arguments": {"text": "alive"}})
    assert reply["result"]["content"][0]["text"] == "alive", reply
    await peer.send_stream.aclose()


# -- peers ------------------------------------------------------------------------------------


async def test_peer_hangs_up_mid_request() -> None:
    with trio.fail_after(10):
        async with _tcp_server() as address:
            peer = await _client(address)
            await peer.send_bytes(b'{"jsonrpc":"2.0","id":1,"method":"tools/ca')
            await peer.send_stream.aclose()
            await _still_serves(address)


async def test_peer_hangs_up_mid_response() -> None:
    with trio.fail_after(10):
        async with _tcp_server() as address:
            peer = await _client(address)
            await peer.send(_call(1, "big"))
            await peer.receive_stream.receive_some(1000)  # the reply has started
            await peer.send_stream.aclose()
            await _still_serves(address)


async def test_peer_hangs_up_with_requests_in_flight() -> None:
    with trio.fail_after(10):
        async with _tcp_server() as address:
            peer = await _client(address)
            for index in range(5):
                await peer.send(_call(index, "slow"))
            await trio.sleep(0.2)
            await peer.send_stream.aclose()
            await _still_serves(address)


async def test_peer_that_never_reads_is_closed_and_others_are_served() -> None:
    with trio.fail_after(15):
        async with _tcp_server() as address:
            peer = await _client(address)
            for index in range(10):  # 40 MB of replies nobody reads
                await peer.send(_call(index, "big"))
            started = trio.current_time()
            await _still_serves(address)  # meanwhile, at once
            assert trio.current_time() - started < 1.0
            # write_timeout (1 s) later the server closes the stuck connection.
            with trio.fail_after(8):
                try:
                    while await peer.receive_stream.receive_some(1 << 20):  # noqa: ASYNC110
                        await trio.sleep(0.5)  # read slower than it could be written
                except trio.BrokenResourceError:
                    pass  # reset: the server closed with our requests' replies unread


async def test_peer_that_trickles_a_frame_is_closed() -> None:
    with trio.fail_after(15):
        async with _tcp_server() as address:
            peer = await _client(address)
            frame = b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 20
            started = trio.current_time()
            for byte in frame:
                try:
                    await peer.send_bytes(bytes([byte]))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    break
                await trio.sleep(0.05)
                if trio.current_time() - started > 3:
                    break
            assert await peer.receive_stream.receive_some(100) == b""  # closed by read_timeout
            assert trio.current_time() - started < 3
            await _still_serves(address)


async def test_http_peer_hangs_up_mid_body() -> None:
    server, _ = make_app()
    with trio.fail_after(10):
        async with serving(server) as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n" + b"{" * 10
            )
            await stream.aclose()
            conn = await connect(address)
            body = modern(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            await conn.send("POST", "/mcp", headers=modern_headers("tools/call", "add"), body=body)
            response = await conn.response()
            assert response.status == 200 and "result" in response.json(), response


async def test_http_peer_hangs_up_mid_response() -> None:
    server, _ = make_app()

    @server.tool
    async def huge() -> str:
        """A large reply."""
        return "y" * 4_000_000

    with trio.fail_after(10):
        async with serving(server) as address:
            conn = await connect(address)
            body = modern(1, "tools/call", {"name": "huge", "arguments": {}})
            await conn.send("POST", "/mcp", headers=modern_headers("tools/call", "huge"), body=body)
            await conn.stream.receive_some(1000)
            await conn.aclose()
            conn = await connect(address)
            body = modern(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            await conn.send("POST", "/mcp", headers=modern_headers("tools/call", "add"), body=body)
            response = await conn.response()
            assert response.status == 200 and "result" in response.json(), response


# -- our own code -----------------------------------------------------------------------------


def _fails_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[str]:
    """Make ``owner.name`` raise RuntimeError on its first call only: a bug of ours, met by
    one connection. Returns the list the fault appends to when it fires."""
    real = getattr(owner, name)
    fired: list[str] = []

    def once(*args: Any, **kwargs: Any) -> Any:
        if not fired:
            fired.append(name)
            raise RuntimeError("injected fault")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, once)
    return fired


async def test_a_fault_in_our_tcp_code_closes_that_connection_not_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from runtime.core import _connection

    fired = _fails_once(monkeypatch, _connection.Connection, "serve")
    with trio.fail_after(10):
        async with _tcp_server() as address:
            stream = await trio.open_tcp_stream(*address)
            await stream.send_all(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            assert await stream.receive_some(100) == b""  # closed, no traceback on the wire
            assert fired
            await _still_serves(address)


async def test_a_fault_in_our_http_code_is_a_500_and_the_server_serves_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from runtime.transports.http import _http11

    fired = _fails_once(monkeypatch, _http11, "_head")
    server, _ = make_app()
    with trio.fail_after(10):
        async with serving(server) as address:
            conn = await connect(address)
            body = modern(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            await conn.send("POST", "/mcp", headers=modern_headers("tools/call", "add"), body=body)
            response = await conn.response()
            assert fired
            assert response.status == 500, response
            assert response.json()["error"]["code"] == -32603, response
            assert b"injected" not in response.body
            conn = await connect(address)
            await conn.send("POST", "/mcp", headers=modern_headers("tools/call", "add"), body=body)
            response = await conn.response()
            assert response.status == 200 and "result" in response.json(), response


async def test_a_fault_in_our_websocket_code_closes_that_socket_not_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trio_websocket import ConnectionClosed, open_websocket_url

    from runtime.core import _connection

    fired = _fails_once(monkeypatch, _connection.Connection, "serve")
    server, _ = make_app()
    with trio.fail_after(10):
        async with serving(server, "ws") as (host, port):
            url = f"ws://{host}:{port}/mcp"
            async with open_websocket_url(url, subprotocols=["mcp"]) as ws:
                with pytest.raises(ConnectionClosed):
                    await ws.get_message()
            assert fired
            async with open_websocket_url(url, subprotocols=["mcp"]) as ws:
                await ws.send_message(json.dumps(init_body()))
                assert "result" in json.loads(await ws.get_message())


# The stdio connection is the server: its faults are served past (tests/servers/stdio_faults.py
# injects them in the server process).
STDIO_FAULTS = ROOT / "tests" / "servers" / "stdio_faults.py"


async def _stdio_ends(peer: RawPeer, process: trio.Process) -> int:
    """Close the server's stdin: its exit status (it must exit promptly)."""
    await peer.send_stream.aclose()
    with trio.fail_after(10):
        return await process.wait()


async def test_a_fault_handling_a_stdio_frame_is_a_32603_and_the_server_serves_on() -> None:
    with trio.fail_after(20):
        env = {"STDIO_FAULT": "frame"}
        async with open_stdio_peer(STDIO_FAULTS, env=env) as (peer, process, err_path):
            await peer.initialize()
            await peer.send({"jsonrpc": "2.0", "id": 7, "method": "test/fault"})
            reply = await peer.receive()
            assert reply == {
                "jsonrpc": "2.0",
                "id": 7,
                "error": {"code": -32603, "message": "Internal error"},
            }, reply
            # A notification that meets the fault gets no answer; the next request does.
            await peer.send({"jsonrpc": "2.0", "method": "test/fault"})
            reply = await peer.call("tools/call", {"name": "echo", "arguments": {"text": "on"}})
            assert reply["result"]["content"][0]["text"] == "on", reply
            assert await _stdio_ends(peer, process) == 0
            stderr = err_path.read_text()
    assert "fault handling a frame conn=stdio" in stderr and "InjectedFault" in stderr


async def test_a_fault_in_a_stdio_connection_task_answers_what_it_cut_short() -> None:
    """A task of the connection fails (the bug): the connection is lost, as a TCP one would
    be, with the request it cut short answered -32603; a new connection serves on over the
    same pipes and session (no new initialize)."""
    with trio.fail_after(20):
        async with open_stdio_peer(STDIO_FAULTS) as (peer, process, err_path):
            await peer.initialize()
            await peer.send(_call("s", "slow", seconds=30))
            await trio.sleep(0.2)
            await peer.send(_call("c", "crash"))
            replies = {(r := await peer.receive())["id"]: r for _ in range(2)}
            assert replies["c"]["result"]["content"][0]["text"] == "started", replies
            assert replies["s"]["error"] == {"code": -32603, "message": "Internal error"}
            reply = await peer.call("tools/call", {"name": "echo", "arguments": {"text": "on"}})
            assert reply["result"]["content"][0]["text"] == "on", reply
            assert await _stdio_ends(peer, process) == 0
            stderr = err_path.read_text()
    assert "connection crashed conn=stdio" in stderr
    assert "serving stdio on after a fault" in stderr


async def test_a_tcp_connection_lost_to_a_fault_answers_what_it_cut_short() -> None:
    """The same backstop on a TCP connection: lost to the fault, with its request in flight
    answered -32603 before it closes; the server serves other connections."""
    from .servers.stdio_faults import app as faulty

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            address = (await nursery.start(faulty.serve_tcp, 0))[:2]
            peer = await _client(address)
            await peer.send(_call("s", "slow", seconds=30))
            await trio.sleep(0.2)
            await peer.send(_call("c", "crash"))
            replies = {(r := await peer.receive())["id"]: r for _ in range(2)}
            assert replies["s"]["error"] == {"code": -32603, "message": "Internal error"}
            with pytest.raises(EOFError):
                await peer.receive()
            other = await _client(address)
            reply = await other.call("tools/call", {"name": "echo", "arguments": {"text": "on"}})
            assert reply["result"]["content"][0]["text"] == "on", reply
            nursery.cancel_scope.cancel()


async def test_a_fault_in_the_stdio_connection_itself_is_served_past() -> None:
    with trio.fail_after(20):
        env = {"STDIO_FAULT": "serve-once"}
        async with open_stdio_peer(STDIO_FAULTS, env=env) as (peer, process, err_path):
            reply = await peer.initialize()
            assert reply["result"]["serverInfo"]["name"] == "stdio-faults", reply
            reply = await peer.call("tools/call", {"name": "echo", "arguments": {"text": "on"}})
            assert reply["result"]["content"][0]["text"] == "on", reply
            assert await _stdio_ends(peer, process) == 0
            stderr = err_path.read_text()
    assert "stdio connection failed" in stderr and "InjectedFault" in stderr


# -- handlers ---------------------------------------------------------------------------------


async def test_handler_that_blocks_the_loop_delays_but_loses_nothing() -> None:
    with trio.fail_after(10):
        async with _tcp_server() as address:
            peer = await _client(address)
            await peer.send(_call("block", "block_loop", seconds=0.5))
            await peer.send(_call("echo", "echo", text="after"))
            replies = {(r := await peer.receive())["id"]: r for _ in range(2)}
            assert replies["block"]["result"]["content"][0]["text"] == "unblocked"
            assert replies["echo"]["result"]["content"][0]["text"] == "after"


async def test_handler_raising_a_base_exception_is_an_internal_error() -> None:
    with trio.fail_after(10):
        async with _tcp_server() as address:
            peer = await _client(address)
            reply = await peer.call("tools/call", {"name": "raise_base", "arguments": {}})
            assert reply["error"] == {"code": -32603, "message": "Internal error"}, reply
            assert "not an Exception" not in str(reply)
            await _still_serves(address)


async def test_handler_that_never_returns_times_out() -> None:
    with trio.fail_after(10):
        async with _tcp_server() as address:
            peer = await _client(address)
            reply = await peer.call("tools/call", {"name": "never_returns", "arguments": {}})
            assert reply["error"]["code"] == -32001, reply
            assert reply["error"]["data"] == {"timeoutSeconds": 2.0}


# -- signals ----------------------------------------------------------------------------------

SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]


async def _until_eof(peer: RawPeer) -> list[Any]:
    replies = []
    while True:
        try:
            replies.append(await peer.receive(10))
        except EOFError:
            return replies


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize(
    "phase", ["before-initialize", "idle", "mid-frame", "within-grace", "beyond-grace"]
)
async def test_signal_in_each_phase(signum: int, phase: str) -> None:
    """Exit 0 promptly; a request in flight gets its result when it finishes within the grace
    (0.5 s), else -32000 "shutting down"; a half-sent frame is dropped with the connection."""
    with trio.fail_after(20):
        async with open_stdio_peer(FAULTS) as (peer, process, err_path):
            if phase == "before-initialize":
                assert (await peer.call("ping"))["result"] == {}  # it serves
            else:
                await peer.initialize()
            expected: dict[Any, str] = {}
            if phase == "mid-frame":
                await peer.send_bytes(b'{"jsonrpc":"2.0","id":"half","method":"pi')
            elif phase == "within-grace":
                await peer.send(_call("w", "slow", seconds=0.3))
                expected["w"] = "result"
            elif phase == "beyond-grace":
                await peer.send(_call("b", "slow"))
                expected["b"] = "error"
            await trio.sleep(0.1)
            started = trio.current_time()
            process.send_signal(signum)
            replies = await _until_eof(peer)
            assert await process.wait() == 0, err_path.read_text()
            assert trio.current_time() - started < 3
            stderr = err_path.read_text()
    got = {reply["id"]: ("result" if "result" in reply else "error") for reply in replies}
    assert got == expected, replies
    for reply in replies:
        if "error" in reply:
            assert reply["error"]["code"] == -32000 and "shutting down" in reply["error"]["message"]
    assert "Traceback" not in stderr, stderr


async def test_sigterm_answers_http_calls_that_outlive_the_grace() -> None:
    """The issue's reproduction over HTTP: 5 modern calls outliving the grace, SIGTERM to
    ``mcp-runtime serve --transport http``; each POST gets its -32000, the process exits 0."""
    import socket
    import subprocess

    from .peers import cli
    from .transports.app import modern
    from .transports.http_client import request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ROOT / "tests" / "servers" / "shutdown.py"
    process = await trio.lowlevel.open_process(
        cli("serve", str(server), "--transport", "http", "--port", str(port)),
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    replies: dict[int, Any] = {}
    try:
        with trio.fail_after(20):
            while True:  # until it listens
                try:
                    await (await trio.open_tcp_stream("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await trio.sleep(0.05)
            async with trio.open_nursery() as nursery:

                async def post(index: int) -> None:
                    body = modern(index, "tools/call", {"name": "slow", "arguments": {}})
                    headers = modern_headers("tools/call", "slow")
                    replies[index] = await request(
                        ("127.0.0.1", port), "POST", headers=headers, body=body
                    )

                for index in range(5):
                    nursery.start_soon(post, index)
                await trio.sleep(0.5)
                process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
    assert sorted(replies) == [0, 1, 2, 3, 4]
    for index, response in replies.items():
        assert response.status == 503, response
        reply = response.json()
        assert reply["id"] == index and reply["error"]["code"] == -32000, reply
