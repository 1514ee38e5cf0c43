"""Reconnection, resumption, lost sessions, stalled peers and process hygiene."""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.client import Backoff, RequestTimeout, TransportLost, open_client

from .proxy import open_proxy
from .targets import ROOT, SERVER_FILE, load_app
from .test_sdk_peer import free_port

FAST = Backoff(initial=0.05, multiplier=2.0, cap=0.5, max_attempts=40, max_elapsed=8.0)
#: Reconnect times measured by the tests, printed at the end of the run (-s) for the notes.
MEASURED: list[str] = []


def _record(text: str) -> None:
    MEASURED.append(text)
    logging.getLogger("tests.client.measured").warning("%s", text)


# -- SSE resumption ---------------------------------------------------------------------------


async def test_a_cut_sse_answer_is_resumed_with_last_event_id() -> None:
    """Handshake era over HTTP, through a proxy that drops every connection mid-call: the
    client resumes the POST's SSE stream with a GET and Last-Event-ID; every progress event
    arrives exactly once and in order, and the answer arrives."""
    app = load_app()
    seen: list[float] = []
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_http)
        async with open_proxy(address[1]) as proxy:
            url = f"http://127.0.0.1:{proxy.port}/mcp"
            with trio.fail_after(30):
                async with open_client(url, era="handshake", backoff=FAST) as client:

                    async def cutter() -> None:
                        for _ in range(3):
                            await trio.sleep(0.3)
                            proxy.cut()

                    nursery.start_soon(cutter)
                    result = await client.call_tool(
                        "countdown",
                        {"start": 20, "delay": 0.06},
                        progress=lambda progress, total, message: seen.append(progress),
                    )
                    assert result.text == "liftoff"
                    assert seen == [float(n) for n in range(1, 21)]
                    resumed = client._link.resumed  # type: ignore[union-attr]
                    assert resumed >= 1  # the cuts really hit the answer's stream
                    delivered = list(client._link.delivered)  # type: ignore[union-attr]
                    assert len(delivered) == len(set(delivered)) >= 21  # 20 progress + answer
        nursery.cancel_scope.cancel()


async def test_a_cut_modern_call_is_not_repeated_unless_safe() -> None:
    """2026-07-28 over HTTP: a cut tools/call fails (it may have run); a cut read is re-sent."""
    app = load_app()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_http)
        async with open_proxy(address[1]) as proxy:
            url = f"http://127.0.0.1:{proxy.port}/mcp"
            with trio.fail_after(30):
                async with open_client(url, era="modern", backoff=FAST) as client:

                    async def cut_soon() -> None:
                        await trio.sleep(0.3)
                        proxy.cut()

                    nursery.start_soon(cut_soon)
                    with pytest.raises(TransportLost, match="not safe to repeat"):
                        await client.call_tool("slow", {"seconds": 5})
                    nursery.start_soon(cut_soon)
                    # Declared safe by the caller: re-sent after the cut, and answered.
                    answer = await client.request(
                        "tools/call",
                        {"name": "slow", "arguments": {"seconds": 0.6}},
                        repeatable=True,
                    )
                    assert answer["content"][0]["text"] == "slept 0.6"
        nursery.cancel_scope.cancel()


async def test_a_lost_session_is_reinitialized_once() -> None:
    """The server restarts (in-process, same port): the session is gone, the next request
    gets 404, the client initializes a new session once, says so, and carries on."""
    port = free_port()
    app = load_app()
    with trio.fail_after(30):
        async with trio.open_nursery() as outer:
            first = trio.CancelScope()

            async def serve(scope: trio.CancelScope, task_status: Any) -> None:
                with scope:
                    await app.serve_http(port, task_status=task_status)

            await outer.start(serve, first)
            async with open_client(
                f"http://127.0.0.1:{port}/mcp", era="handshake", backoff=FAST
            ) as client:
                old_session = client.connector  # the link's session id is checked below
                assert (await client.call_tool("echo", {"text": "a"})).text == "a"
                first.cancel()
                await trio.sleep(0.2)
                await outer.start(serve, trio.CancelScope())
                assert (await client.call_tool("echo", {"text": "b"})).text == "b"
                assert client.reinitializations == 1
                assert old_session is client.connector
                assert (await client.call_tool("echo", {"text": "c"})).text == "c"
                assert client.reinitializations == 1
            outer.cancel_scope.cancel()


# -- a server killed and restarted ------------------------------------------------------------


_OLD_FIFOS: set[int] = set()


async def _start_server(port: int, *extra: str) -> trio.Process:
    # --port applies to network transports only (the CLI refuses it for a Unix socket).
    where = [] if "unix" in extra or "pipe" in extra else ["--port", str(port)]
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "runtime", "serve", str(SERVER_FILE), *where, *extra],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    socket_path = extra[extra.index("--socket") + 1] if "--socket" in extra else None
    pipe_dir = extra[extra.index("--pipe-dir") + 1] if "--pipe-dir" in extra else None
    with trio.fail_after(20):
        while True:
            try:
                if pipe_dir is not None:
                    # The server makes fresh FIFOs at start (a killed one leaves its old ones):
                    # wait until the FIFO it reads from is a new one.
                    inode = os.stat(os.path.join(pipe_dir, "to-server")).st_ino
                    if inode in _OLD_FIFOS:
                        raise OSError("the previous server's FIFO")
                    _OLD_FIFOS.add(inode)
                    return process
                if socket_path is not None:
                    stream: trio.SocketStream = await trio.open_unix_socket(socket_path)
                else:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.02)
                continue
            await stream.aclose()
            return process


async def _kill(process: trio.Process) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


@pytest.mark.parametrize("era", ["modern", "handshake"])
async def test_server_killed_and_restarted_on_the_same_port(era: str) -> None:
    """The client holds a listen stream and a long call when the server process is killed:
    the call fails (tools/call is not safe to repeat), the listen comes back by itself with
    backoff once the server is up again (measured), every update after that arrives once,
    and when the server stays down the client gives up after the policy's bound."""
    port = free_port()
    transport = ["--transport", "http"]
    server = await _start_server(port, *transport)
    policy = Backoff(initial=0.05, multiplier=2.0, cap=0.4, max_attempts=100, max_elapsed=3.0)
    try:
        with trio.fail_after(60):
            async with (
                open_client(
                    f"http://127.0.0.1:{port}/mcp",
                    era=era,
                    backoff=policy,  # type: ignore[arg-type]
                ) as client,
                client.listen(resource_uris=["data://counter"]) as updates,
            ):
                if era == "modern":
                    ack = await updates.receive()
                    assert ack.method == "notifications/subscriptions/acknowledged"
                await client.call_tool("touch", {"count": 1})
                assert (await updates.receive()).params["uri"] == "data://counter"
                failure: list[BaseException] = []

                async def long_call() -> None:
                    try:
                        await client.call_tool("slow", {"seconds": 30})
                    except TransportLost as exc:
                        failure.append(exc)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(long_call)
                    await trio.sleep(0.3)
                    killed = trio.current_time()
                    await _kill(server)
                    await trio.sleep(1.0)  # down for a second
                    restarted = trio.current_time()
                    server = await _start_server(port, *transport)
                    up = trio.current_time()
                assert failure and "not safe to repeat" in str(failure[0])
                # The listen comes back: modern re-sends subscriptions/listen (a new ack);
                # handshake re-initializes the session and subscribes again.
                if era == "modern":
                    ack = await updates.receive()
                    assert ack.method == "notifications/subscriptions/acknowledged"
                else:
                    with trio.fail_after(10):
                        while client.reinitializations == 0:  # noqa: ASYNC110
                            await trio.sleep(0.02)
                        await trio.sleep(0.3)  # the renewed subscription reaches the server
                    assert client.reinitializations == 1
                back = trio.current_time()
                _record(
                    f"{era}: killed at 0, restarted {restarted - killed:.2f} s, accepting "
                    f"{up - killed:.2f} s, listen back {back - killed:.2f} s "
                    f"({back - up:.3f} s after the server accepted)"
                )
                for _ in range(3):
                    await client.call_tool("touch", {"count": 1})
                    note = await updates.receive()
                    assert note.method == "notifications/resources/updated"
                with trio.move_on_after(0.5):
                    extra = await updates.receive()
                    raise AssertionError(f"a duplicate or stray notification: {extra}")
                if era == "handshake":
                    # Every event the link let through, checked by (session, event id): each
                    # once, across the old session and the new one.
                    delivered = list(client._link.delivered)  # type: ignore[union-attr]
                    assert len(delivered) == len(set(delivered))
                    assert len({session for session, _ in delivered}) == 2
                # Down for good: the listen gives up after the policy's time bound.
                gone = trio.current_time()
                await _kill(server)
                with trio.fail_after(policy.max_elapsed + 5):
                    async for note in updates:
                        raise AssertionError(f"nothing should arrive now: {note}")
                gave_up = trio.current_time() - gone
                _record(f"{era}: gave up {gave_up:.2f} s after the server died for good")
                assert policy.max_elapsed * 0.5 < gave_up < policy.max_elapsed + 3
    finally:
        if server.returncode is None:
            await _kill(server)


@pytest.mark.parametrize("transport", ["tcp", "unix", "ws", "pipe", "sse"])
async def test_stream_transports_reconnect_and_resend_what_is_safe(
    transport: str, tmp_path: Path
) -> None:
    """A transport that reconnects (TCP, Unix socket, WebSocket, a FIFO pair, legacy 2024-11-05
    HTTP+SSE) does so with backoff after the server process was killed and started again; the
    handshake is redone; a request the caller marked repeatable is sent again and answered;
    one that is not fails with TransportLost."""
    port = free_port()
    socket_path = str(tmp_path / "mcp.sock")
    pipe_dir = str(tmp_path / "pipes")
    options = {
        "tcp": ["--transport", "tcp"],
        "unix": ["--transport", "unix", "--socket", socket_path],
        "ws": ["--transport", "ws"],
        "pipe": ["--transport", "pipe", "--pipe-dir", pipe_dir],
        "sse": ["--transport", "http"],
    }[transport]
    target = {
        "tcp": f"tcp://127.0.0.1:{port}",
        "unix": f"unix:{socket_path}",
        "ws": f"ws://127.0.0.1:{port}/mcp",
        "pipe": f"pipe:{pipe_dir}",
        "sse": f"http://127.0.0.1:{port}/sse",
    }[transport]
    server = await _start_server(port, *options)
    # A FIFO open waits for a peer: an attempt made while the server is down waits this long
    # (the FIFOs it waits on are the dead server's; the next attempt finds the new ones).
    connect_timeout = 0.5 if transport == "pipe" else 10.0
    try:
        with trio.fail_after(40):
            async with open_client(
                target, era="handshake", backoff=FAST, connect_timeout=connect_timeout
            ) as client:
                results: dict[str, Any] = {}

                async def call(key: str, repeatable: bool) -> None:
                    try:
                        results[key] = await client.request(
                            "tools/call",
                            {"name": "slow", "arguments": {"seconds": 1.5}},
                            repeatable=repeatable,
                        )
                    except TransportLost as exc:
                        results[key] = exc

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(call, "safe", True)
                    nursery.start_soon(call, "unsafe", False)
                    await trio.sleep(0.3)
                    killed = trio.current_time()
                    await _kill(server)
                    await trio.sleep(0.5)
                    server = await _start_server(port, *options)
                assert isinstance(results["unsafe"], TransportLost)
                assert results["safe"]["content"][0]["text"] == "slept 1.5"
                assert client.reconnects == 1
                answered = trio.current_time() - killed
                _record(f"{transport}: re-sent call answered {answered:.2f} s after the kill")
                assert (await client.call_tool("echo", {"text": "x"})).text == "x"
    finally:
        if server.returncode is None:
            await _kill(server)


async def test_gives_up_with_a_clear_error_when_the_server_does_not_come_back() -> None:
    """Connected once, then the server is gone for good: the client reconnects per its
    policy and then gives up, naming the attempts. (A server never reached is a refusal,
    which fails at once: tests/client/test_unreachable.py.)"""
    server = trio.CancelScope()

    async def answer_discover(stream: trio.SocketStream) -> None:
        request = json.loads(await stream.receive_some(65536))
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {}}
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        await stream.send_all(json.dumps(reply).encode() + b"\n")
        server.cancel()  # then the server goes away: this connection and its port

    async def serve(*, task_status: trio.TaskStatus[list[trio.SocketListener]]) -> None:
        with server:
            await trio.serve_tcp(answer_discover, 0, host="127.0.0.1", task_status=task_status)

    policy = Backoff(initial=0.05, cap=0.2, max_attempts=5, max_elapsed=10)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(serve)
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(20):
            async with open_client(f"tcp://127.0.0.1:{port}", era="modern", backoff=policy) as c:
                lost = trio.current_time()
                with pytest.raises(
                    TransportLost, match=r"gave up reconnecting after 5 attempt\(s\)"
                ) as caught:
                    await c.list_tools()
                assert caught.value.attempts == 5
                assert "connection refused" in str(caught.value)
                assert trio.current_time() - lost < 2.0  # five waits of at most 0.2 s


# -- stalled and silent peers -----------------------------------------------------------------


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
async def test_a_peer_stalling_mid_message_trips_the_read_timeout(framing: str) -> None:
    async def handler(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)  # the discover/initialize request
        if framing == "ndjson":
            await stream.send_all(b'{"jsonrpc": "2.0", "id": 1, "res')
        else:
            await stream.send_all(b'Content-Length: 100\r\n\r\n{"jsonrpc"')
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        started = trio.current_time()
        with trio.fail_after(10), pytest.raises(TransportLost, match="stalled mid-message"):
            async with open_client(
                f"tcp://127.0.0.1:{port}",
                framing=framing,
                read_timeout=0.5,
                backoff=Backoff(max_attempts=0),
            ):
                pass
        assert 0.4 < trio.current_time() - started < 3
        nursery.cancel_scope.cancel()


async def test_a_silent_peer_trips_the_request_timeout() -> None:
    async def handler(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(10), pytest.raises(RequestTimeout, match="server/discover"):
            async with open_client(f"tcp://127.0.0.1:{port}", timeout=0.5):
                pass
        nursery.cancel_scope.cancel()


async def test_a_stalled_http_response_trips_the_read_timeout() -> None:
    async def handler(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)
        await stream.send_all(
            b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"js'
        )
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(10), pytest.raises(TransportLost, match="stalled mid-response"):
            async with open_client(
                f"http://127.0.0.1:{port}/mcp",
                read_timeout=0.5,
                backoff=Backoff(max_attempts=0),
            ):
                pass
        nursery.cancel_scope.cancel()


# -- stdio process hygiene --------------------------------------------------------------------

STUBBORN = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    print(f"child {child.pid}", file=sys.stderr, flush=True)
    for line in sys.stdin:  # answers nothing; ignores EOF too
        pass
    time.sleep(600)
    """
)


def _group_alive(pgid: int) -> list[int]:
    """Pids of the group's processes that still run (zombies, which no longer run and wait
    only for their new parent to reap them, do not count)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            alive.append(int(entry))
    return alive


@pytest.mark.parametrize("stubborn", [False, True])
async def test_closing_a_stdio_client_leaves_no_process_behind(
    stubborn: bool, tmp_path: Path
) -> None:
    if stubborn:
        script = tmp_path / "stubborn.py"
        script.write_text(STUBBORN)
        command = [sys.executable, str(script)]
    else:
        command = [sys.executable, "-m", "runtime", "serve", str(SERVER_FILE)]
    with trio.fail_after(30):
        from runtime.client import connector_for
        from runtime.client._client import Client, choose_era, keep_link

        connector = connector_for(command, close_grace=0.5)
        async with trio.open_nursery() as nursery:
            client = Client(connector, nursery, era="handshake", timeout=10)
            await nursery.start(keep_link, client)
            if not stubborn:
                await choose_era(client)
                await client.call_tool("echo", {"text": "hi"})
            else:
                # It ignores SIGTERM and EOF and has started a child that ignores SIGTERM.
                with trio.fail_after(10):
                    while len(_group_alive(connector.process.pid)) < 2:  # type: ignore[union-attr]  # noqa: ASYNC110
                        await trio.sleep(0.05)
            process = connector.process
            assert process is not None
            pgid = process.pid
            assert os.getpgid(pgid) == pgid  # its own process group
            await client.aclose()
            nursery.cancel_scope.cancel()
        assert process.returncode is not None
        assert _group_alive(pgid) == []


async def test_a_stdio_server_that_dies_is_an_error_unless_respawn_is_asked() -> None:
    with trio.fail_after(30):
        async with open_client(str(SERVER_FILE), era="handshake") as client:
            with pytest.raises(TransportLost, match=r"exit status 3.*crashing with status 3"):
                await client.call_tool("crash", {"status": 3})
            with pytest.raises(TransportLost):
                await client.call_tool("echo", {"text": "gone"})
        async with open_client(
            str(SERVER_FILE), era="handshake", respawn=True, backoff=FAST
        ) as client:
            with pytest.raises(TransportLost):
                await client.call_tool("crash", {"status": 4})
            assert (await client.call_tool("echo", {"text": "again"})).text == "again"
            assert client.reconnects == 1


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
async def test_mcp_runtime_serve_over_a_pipe_pair(framing: str, tmp_path: Path) -> None:
    """``mcp-runtime serve --transport pipe --pipe-dir DIR``: clients one after another."""
    directory = tmp_path / "pipes"
    process = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "runtime",
            "serve",
            str(SERVER_FILE),
            "--transport",
            "pipe",
            "--pipe-dir",
            str(directory),
            "--framing",
            framing,
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with trio.fail_after(30):
            while not (directory / "from-server").exists():  # noqa: ASYNC110
                await trio.sleep(0.02)
            for era in ("modern", "handshake", "handshake"):
                async with open_client(f"pipe:{directory}", framing=framing, era=era) as client:  # type: ignore[arg-type]
                    assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"

            # Clients arriving together take turns (a handshake session each, never shared).
            async def one(n: int) -> None:
                async with open_client(f"pipe:{directory}", framing=framing, era="handshake") as c:
                    for k in range(3):
                        assert (await c.call_tool("add", {"a": n, "b": k})).text == str(n + k)

            async with trio.open_nursery() as nursery:
                for n in range(3):
                    nursery.start_soon(one, n * 10)
            process.send_signal(signal.SIGTERM)
            await process.wait()
        assert process.returncode == 0
        assert not (directory / "to-server").exists()  # the FIFOs it made are gone
    finally:
        if process.returncode is None:
            await _kill(process)


async def test_a_slow_answer_is_not_a_stalled_one() -> None:
    """The read timeout bounds a response that has started; a tool still working (its JSON
    answer not begun) is bounded only by the request's timeout."""
    app = load_app()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_http)
        with trio.fail_after(20):
            async with open_client(
                f"http://127.0.0.1:{address[1]}/mcp", era="modern", read_timeout=0.2
            ) as client:
                result = await client.call_tool("slow", {"seconds": 1.0})
                assert result.text == "slept 1.0"
        nursery.cancel_scope.cancel()


async def test_odd_messages_from_the_server_do_not_end_the_conversation() -> None:
    """Garbage lines, wrong shapes and hostile field values are logged and skipped; the
    answer that follows them still arrives."""
    odd = [
        b"this is not json",
        b'{"jsonrpc": "1.0", "id": 1, "result": {}}',
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}}',
        b'{"jsonrpc": "2.0", "method": "notifications/message", '
        b'"params": {"level": "BASIC_FORMAT"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/progress", '
        b'"params": {"progressToken": "progress-1", "progress": "x"}}',
        b'{"jsonrpc": "2.0", "id": 99, "result": {}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "no/such", "params": []}',
    ]

    async def handler(stream: trio.SocketStream) -> None:
        data = b""
        while b"\n" not in data:
            data += await stream.receive_some(65536)
        request = json.loads(data.split(b"\n")[0])
        await stream.send_all(b"\n".join(odd) + b"\n")
        result = {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "odd", "version": "1"}},
        }
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        await stream.send_all(json.dumps(reply).encode() + b"\n")
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(10):
            async with open_client(f"tcp://127.0.0.1:{port}", era="modern") as client:
                assert client.description is not None
                assert client.description.server_info is not None
                assert client.description.server_info.name == "odd"
        nursery.cancel_scope.cancel()
