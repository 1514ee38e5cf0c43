"""The CLI explains itself (issue 20 item 3): help, defaults, start-up lines, one-line errors
that name the address and the fix, logs a person or a machine can read."""

from __future__ import annotations

import json
import os
import pty
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from runtime import Server
from runtime.cli._flags import FLAGS as _FLAGS
from runtime.cli._flags import build_parser
from runtime.cli._flags import read_settings as _settings

from ..peers import ROOT, cli

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def _run(*args: str, stdin: str = "", env: dict[str, str] | None = None, cwd: Path = ROOT):
    return subprocess.run(
        cli(*args),
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def _settings_of(*argv: str) -> dict[str, object]:
    return _settings(build_parser().parse_args(["serve", "x.py", *argv]))


def test_help_names_every_flag_its_default_and_its_variable() -> None:
    out = _run("serve", "--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    for flag in _FLAGS:
        assert f"--{flag.name}" in text
        assert flag.env in text, flag.env
        if flag.default is not None:
            assert f"(default {flag.default})" in text, flag.name


def test_web_transports_default_to_port_8000_and_tcp_to_a_free_one() -> None:
    assert _settings_of("--transport", "http")["port"] == 8000
    assert _settings_of("--transport", "ws")["port"] == 8000
    assert _settings_of("--transport", "sse")["port"] == 8000
    assert _settings_of("--transport", "tcp")["port"] == 0
    assert _settings_of("--transport", "http", "--port", "9")["port"] == 9


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--port", "9"), "--port does not apply to --transport stdio"),
        (("--transport", "http", "--framing", "content-length"), "--framing does not apply"),
        (("--transport", "tcp", "--path", "/x"), "--path does not apply"),
        (("--transport", "unix", "--socket", "/tmp/x", "--host", "::1"), "--host does not apply"),
    ],
)
def test_flags_that_do_not_apply_are_refused(args: tuple[str, ...], fragment: str) -> None:
    out = _run("serve", "examples/quickstart.py", *args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and fragment in out.stderr


def test_an_environment_error_names_the_variable() -> None:
    out = _run("serve", "examples/quickstart.py", env={"MCP_RUNTIME_MAX_IN_FLIGHT": "lots"})
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "MCP_RUNTIME_MAX_IN_FLIGHT" in out.stderr and "'lots'" in out.stderr


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    """Start a server and return it with its start-up line."""
    process = subprocess.Popen(
        cli(*args), cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if line.startswith("mcp-runtime: serving"):
            return process, line
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("no start-up line")


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=15)


def test_http_start_up_line_is_a_url_that_answers() -> None:
    process, line = _start("serve", "tests/servers/wire.py", "--transport", "http", "--port", "0")
    try:
        match = re.search(r"on (http://127\.0\.0\.1:(\d+)/mcp)$", line.strip())
        assert match, line
        assert "serving wire-test" in line and "tools" in line
        client = socket.create_connection(("127.0.0.1", int(match.group(2))), timeout=5)
        body = json.dumps(INIT).encode()
        client.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%b"
            % (len(body), body)
        )
        assert client.recv(4096).startswith(b"HTTP/1.1 200")
        client.close()
    finally:
        _stop(process)


def test_sse_start_up_line_names_both_endpoints() -> None:
    process, line = _start("serve", "tests/servers/wire.py", "--transport", "sse", "--port", "0")
    try:
        assert re.search(
            r"http://127\.0\.0\.1:\d+/sse .*POST to http://127\.0\.0\.1:\d+/messages", line
        )
    finally:
        _stop(process)


def test_a_busy_port_is_one_line_naming_the_address_and_the_fix() -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        out = _run("serve", "tests/servers/wire.py", "--transport", "http", "--port", str(port))
    finally:
        holder.close()
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert lines == [
        f"mcp-runtime: error: 127.0.0.1:{port} is already in use: stop the other server or "
        "choose another --port"
    ]


def test_a_bad_host_is_one_line() -> None:
    out = _run("serve", "tests/servers/wire.py", "--transport", "tcp", "--host", "256.1.1.1")
    assert out.returncode == 1
    (line,) = out.stderr.strip().splitlines()
    assert "cannot bind --host '256.1.1.1'" in line and "Traceback" not in out.stderr


def test_a_missing_socket_directory_is_one_line(tmp_path: Path) -> None:
    sock = tmp_path / "missing" / "s.sock"
    out = _run("serve", "tests/servers/wire.py", "--transport", "unix", "--socket", str(sock))
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        f"mcp-runtime: error: cannot create --socket {sock}: its directory does not exist"
    ]


def test_stdio_on_a_terminal_says_it_waits_for_a_client() -> None:
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            cli("serve", "examples/quickstart.py"),
            stdin=follower,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            text=True,
        )
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "waiting for an MCP client on stdin" in line and "quickstart" in line
        os.write(leader, b"\x04")  # Ctrl-D: end of input
        process.wait(timeout=20)
        assert process.returncode == 0
    finally:
        os.close(leader)
        os.close(follower)


def test_a_piped_stdio_server_prints_no_hint() -> None:
    out = _run("serve", "examples/quickstart.py", stdin=json.dumps(INIT) + "\n")
    assert out.returncode == 0
    assert "waiting for an MCP client" not in out.stderr


def test_debug_logs_one_line_per_request_without_arguments() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1234567, "b": 7654321}},
    }
    out = _run(
        "serve",
        "examples/quickstart.py",
        "--log-level",
        "debug",
        stdin="".join(json.dumps(m) + "\n" for m in (INIT, call)),
    )
    assert out.returncode == 0
    lines = [line for line in out.stderr.splitlines() if "logger=mcp_runtime.requests" in line]
    assert len(lines) == 2, out.stderr
    assert "method=initialize" in lines[0] and "outcome=ok" in lines[0]
    assert re.search(
        r"id=2 method=tools/call era=handshake duration_ms=[\d.]+ outcome=ok", lines[1]
    )
    assert "1234567" not in out.stderr and "7654321" not in out.stderr


def test_json_log_format_gives_one_object_per_line() -> None:
    out = _run(
        "serve",
        "examples/quickstart.py",
        "--log-level",
        "debug",
        "--log-format",
        "json",
        stdin=json.dumps(INIT) + "\n" + "not json\n",
    )
    assert out.returncode == 0
    entries = [json.loads(line) for line in out.stderr.splitlines()]
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    assert any(
        (e["logger"] == "mcp_runtime.connection" and "bad message" in e["message"])
        or "framing" in e["message"]
        for e in entries
    )


def test_module_level_print_does_not_corrupt_stdout(tmp_path: Path) -> None:
    server = tmp_path / "chatty.py"
    server.write_text(
        "import os\nfrom runtime import Server\n"
        "print('hello from import time')\n"
        "os.write(1, b'raw bytes at import\\n')\n"
        "app = Server('chatty')\n"
    )
    out = _run("serve", str(server), stdin=json.dumps(INIT) + "\n")
    assert out.returncode == 0
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1]
    assert "hello from import time" in out.stderr and "raw bytes at import" in out.stderr


def test_a_bare_resource_decorator_is_an_error_at_import() -> None:
    app = Server("x")
    with pytest.raises(TypeError, match=r"needs the resource's URI"):

        @app.resource  # type: ignore[arg-type]
        def config() -> str:
            return "x"


def test_server_repr_says_what_it_serves() -> None:
    app = Server("demo", "2.0")

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    assert repr(app) == "<Server 'demo' 2.0 tools=1 resources=0 prompts=0>"


def test_session_eviction_and_min_body_rate_reach_the_http_limits() -> None:
    from runtime import Server
    from runtime.cli._main import _serve_options

    settings = _settings_of(
        "--transport", "http", "--session-eviction", "refuse", "--min-body-rate", "0"
    )
    limits = _serve_options(Server("s"), "http", settings)["http_limits"]
    assert (limits.session_eviction, limits.min_body_rate) == ("refuse", 0.0)
    # Unset, the server's own limits stand.
    assert "http_limits" not in _serve_options(
        Server("s"), "http", _settings_of("--transport", "http")
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--session-eviction", "refuse"), "--session-eviction does not apply"),
        (("--transport", "http", "--session-eviction", "fifo"), "invalid choice"),
        (("--transport", "http", "--min-body-rate", "-1"), "--min-body-rate"),
        (("--transport", "ws", "--min-body-rate", "10"), "--min-body-rate does not apply"),
    ],
)
def test_session_eviction_and_min_body_rate_are_checked(
    args: tuple[str, ...], fragment: str
) -> None:
    out = _run("serve", "examples/quickstart.py", *args)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert fragment in out.stderr, out.stderr
