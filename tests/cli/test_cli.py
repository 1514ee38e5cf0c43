"""The mcp-runtime command: targets, flags, environment variables, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import trio

from runtime import Server
from runtime.cli import UsageError, load_target

from ..peers import ROOT, cli
from ..wire import RawPeer


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        cli(*args),
        capture_output=True,
        cwd=ROOT,
        timeout=30,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def test_version() -> None:
    out = run_cli("--version")
    assert out.returncode == 0
    assert out.stdout.decode().strip().startswith("mcp-runtime 0.")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("serve", "examples/nope.py"), "no such file"),
        (("serve", "no_such_module_xyz"), "no module named 'no_such_module_xyz'"),
        (("serve", "examples/quickstart.py:missing"), "has no 'missing'"),
        (("serve", "examples/quickstart.py:NOTES"), "is a dict, not a runtime.Server"),
        (("serve", "examples/quickstart.py", "--transport", "carrier-pigeon"), "invalid choice"),
        (("serve", "examples/quickstart.py", "--port", "99999"), "--port"),
        (("serve", "examples/quickstart.py", "--max-in-flight", "0"), "--max-in-flight"),
        (("serve", "examples/quickstart.py", "--transport", "unix"), "needs --socket"),
        (("serve", "tests/servers/broken.py"), "importing 'tests/servers/broken.py' failed"),
    ],
)
def test_bad_target_or_flag_is_one_line_and_exit_2(args: tuple[str, ...], fragment: str) -> None:
    out = run_cli(*args)
    assert out.returncode == 2, out
    lines = out.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert fragment in lines[0]
    assert "Traceback" not in out.stderr.decode()


def test_bad_environment_value_is_one_line_and_exit_2() -> None:
    out = run_cli("serve", "examples/quickstart.py", env={"MCP_RUNTIME_FRAMING": "morse"})
    assert out.returncode == 2
    assert out.stderr.decode().count("\n") == 1 and "framing" in out.stderr.decode()
    out = run_cli("serve", "examples/quickstart.py", env={"MCP_RUNTIME_PORT": "http"})
    assert out.returncode == 2 and "--port" in out.stderr.decode()


def test_load_target_forms() -> None:
    assert isinstance(load_target("examples/quickstart.py"), Server)
    assert load_target("examples/quickstart.py:app").name == "quickstart"
    assert load_target("tests.servers.wire").name == "wire-test"
    assert load_target("tests.servers.wire:app").name == "wire-test"
    with pytest.raises(UsageError):
        load_target(":app")


async def test_serve_tcp_with_flags_from_the_environment(tmp_path: Path) -> None:
    """MCP_RUNTIME_* variables configure the server; --port 0 picks a port we read from
    the log line."""
    env = {
        **os.environ,
        "MCP_RUNTIME_TRANSPORT": "tcp",
        "MCP_RUNTIME_FRAMING": "content-length",
        "MCP_RUNTIME_MAX_IN_FLIGHT": "1",
    }
    process = await trio.lowlevel.open_process(
        cli("serve", "tests/servers/wire.py", "--port", "0"),
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(20):
            assert process.stderr is not None
            log = b""
            while b"listening" not in log:
                log += await process.stderr.receive_some(4096)
            line = next(x for x in log.decode().splitlines() if "listening" in x)
            port = int(line.rsplit(",", 1)[1].strip(" )"))
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            peer = RawPeer(stream, stream, "content-length")
            await peer.initialize()
            slow = {"name": "slow", "arguments": {"seconds": 5, "tag": "x"}}
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": slow})
            await peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": slow})
            reply = await peer.receive()
            assert reply["id"] == 2 and reply["error"]["code"] == -32010  # max in flight = 1
            await stream.aclose()
    finally:
        process.terminate()
        with trio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()


def test_serve_unix_socket(tmp_path: Path) -> None:
    sock = str(tmp_path / "s.sock")
    process = subprocess.Popen(
        cli("serve", "tests/servers/wire.py", "--transport", "unix", "--socket", sock),
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    try:
        import socket
        import time

        deadline = time.monotonic() + 10
        while True:  # the file appears at bind(), a moment before listen(): retry until served
            client = socket.socket(socket.AF_UNIX)
            client.settimeout(5)
            try:
                client.connect(sock)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                client.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert msgspec.json.decode(client.makefile("rb").readline()) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {},
        }
        client.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.returncode == 0
    assert not os.path.exists(sock)  # removed on exit


def test_module_entry_point_matches_console_script() -> None:
    out = subprocess.run([sys.executable, "-m", "runtime"], capture_output=True, cwd=ROOT)
    assert out.returncode == 2


def test_max_connections_flag_limits_http_connections() -> None:
    import socket
    import time

    process = subprocess.Popen(
        cli(
            "serve",
            "tests/servers/wire.py",
            "--transport",
            "http",
            "--port",
            "0",
            "--max-connections",
            "1",
        ),
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 15
        line = b""
        while b"listening" not in line and time.monotonic() < deadline:
            line = process.stderr.readline()
        port = int(line.decode().rsplit(",", 1)[1].strip(" )\n").split(")")[0])
        first = socket.create_connection(("127.0.0.1", port), timeout=5)
        time.sleep(0.2)
        second = socket.create_connection(("127.0.0.1", port), timeout=5)
        second.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = second.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503"), answer
        first.close()
        second.close()
    finally:
        process.terminate()
        process.wait(timeout=10)


SERVE_HTTP = ("serve", "tests/servers/wire.py", "--transport", "http", "--port", "0")


def test_sse_retry_flag_sets_the_retry_interval() -> None:
    import http.client
    import json
    import time

    process = subprocess.Popen(
        cli(*SERVE_HTTP, "--sse-retry-ms", "77"),
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 15
        line = b""
        while b"listening" not in line and time.monotonic() < deadline:
            line = process.stderr.readline()
        port = int(line.decode().rsplit(",", 1)[1].strip(" )\n").split(")")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        }
        accept = "application/json, text/event-stream"
        conn.request(
            "POST", "/mcp", json.dumps(init), {"accept": accept, "content-type": "application/json"}
        )
        response = conn.getresponse()
        response.read()
        session = response.getheader("mcp-session-id")
        assert session
        headers = {"mcp-session-id": session, "accept": "text/event-stream"}
        conn.request("GET", "/mcp", headers={**headers, "mcp-protocol-version": "2025-11-25"})
        stream = conn.getresponse()
        assert stream.status == 200
        assert b"retry: 77" in stream.fp.readline() + stream.fp.readline() + stream.fp.readline()
        conn.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
