"""stdio: stdout carries only protocol bytes, the process exits promptly on stdin EOF, and
SIGTERM drains in-flight requests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import msgspec
import pytest
import trio

from ..peers import ROOT, WIRE_SERVER, cli, open_stdio_peer


async def test_print_inside_a_tool_does_not_corrupt_stdout() -> None:
    with trio.fail_after(20):
        async with open_stdio_peer(WIRE_SERVER) as (peer, process, err_path):
            await peer.initialize()
            reply = await peer.call("tools/call", {"name": "shout", "arguments": {"text": "hi"}})
            assert reply["result"]["content"][0]["text"] == "HI"
            await process.stdin.aclose()  # type: ignore[union-attr]
            rest = b""
            with trio.fail_after(5):
                while chunk := await process.stdout.receive_some(65536):  # type: ignore[union-attr]
                    rest += chunk
            assert rest == b""  # nothing but protocol ever reached stdout
            await process.wait()
            stderr = err_path.read_bytes()
    assert b"debug output that must not reach the client: hi" in stderr
    assert b"raw fd-1 write that must not reach the client" in stderr


def test_stdin_eof_ends_the_process_within_one_second() -> None:
    process = subprocess.Popen(
        cli("serve", str(WIRE_SERVER)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        process.stdin.flush()
        assert msgspec.json.decode(process.stdout.readline())["id"] == 1  # fully started
        started = time.monotonic()
        process.stdin.close()
        process.wait(timeout=5)
        elapsed = time.monotonic() - started
    finally:
        process.kill()
    assert process.returncode == 0
    assert elapsed < 1.0, f"exited {elapsed:.2f}s after EOF"


def test_eof_with_a_request_in_flight_still_exits_within_one_second() -> None:
    process = subprocess.Popen(
        cli("serve", str(WIRE_SERVER)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "WIRE_TEST_REPORT_FINALLY": "1"},
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize",'
            b'"params":{"protocolVersion":"2025-11-25","capabilities":{}}}\n'
        )
        process.stdin.flush()
        process.stdout.readline()
        process.stdin.write(
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
            b'"params":{"name":"slow","arguments":{"seconds":60,"tag":"eof"}}}\n'
        )
        process.stdin.flush()
        time.sleep(0.2)
        started = time.monotonic()
        process.stdin.close()
        process.wait(timeout=5)
        elapsed = time.monotonic() - started
        assert process.stderr is not None
        err = process.stderr.read()
    finally:
        process.kill()
    assert elapsed < 1.0
    assert b"finally ran for eof" in err  # the cancelled handler's finally ran


async def test_sigterm_drains_in_flight_requests() -> None:
    with trio.fail_after(20):
        async with open_stdio_peer(WIRE_SERVER) as (peer, process, _err):
            await peer.initialize()
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": "drain",
                    "method": "tools/call",
                    "params": {"name": "slow", "arguments": {"seconds": 0.5, "tag": "t"}},
                }
            )
            await trio.sleep(0.2)
            process.send_signal(signal.SIGTERM)
            reply = await peer.receive()
            assert reply["id"] == "drain"
            assert reply["result"]["content"][0]["text"] == "slept 0.5"
            with trio.fail_after(5):
                assert await process.wait() == 0


def test_python_m_runtime_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "runtime", "--version"], capture_output=True, check=True, cwd=ROOT
    )
    assert out.stdout.decode().startswith("mcp-runtime ")


def test_a_crashed_stdio_server_exits_non_zero() -> None:
    """issue 16 item 1: a stdio server whose connection dies must not exit 0. A fault is
    served past with a new connection (tests/test_faults.py); one that comes back at once
    (here: every connection's ``serve`` fails) cannot be, and ends the server."""
    init = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}\n'
    )
    result = subprocess.run(
        cli("serve", str(ROOT / "tests" / "servers" / "stdio_faults.py")),
        input=init,
        capture_output=True,
        cwd=ROOT,
        timeout=20,
        env={**os.environ, "STDIO_FAULT": "serve-always"},
    )
    assert result.returncode == 1, result.stderr.decode()
    assert result.stdout == b"", result.stdout  # no traceback, nothing, on the protocol pipe
    assert result.stderr.decode().count("stdio connection failed") == 2
    assert (
        result.stderr.decode()
        .rstrip()
        .endswith("mcp-runtime: error: the stdio connection crashed (see the log above)")
    )


def test_stdio_pipes_are_grown_to_one_mebibyte() -> None:
    """Big replies cross in 1 MiB pipe writes, not 64 KiB ones (PIPE_SIZE in
    runtime/transports/_stdio.py); the capacity is the pipe's, so the client's ends show it."""
    import fcntl

    getpipe = getattr(fcntl, "F_GETPIPE_SZ", None)
    if getpipe is None:
        pytest.skip("F_GETPIPE_SZ is Linux only; elsewhere the pipes are left as they are")
    with open("/proc/sys/fs/pipe-max-size") as f:
        wanted = min(1 << 20, int(f.read()))
    process = subprocess.Popen(
        cli("serve", str(WIRE_SERVER)), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        )
        process.stdin.flush()
        assert b'"result"' in process.stdout.readline()  # the channel is open by now
        assert fcntl.fcntl(process.stdout.fileno(), getpipe) == wanted
        assert fcntl.fcntl(process.stdin.fileno(), getpipe) == wanted
    finally:
        process.kill()
        process.wait()
