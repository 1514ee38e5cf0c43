"""What a peer sends never forges a log line, and what may be a secret never reaches one.

Over the real wire: ``mcp-runtime serve`` (HTTP on loopback, a subprocess) with request
logging on (``logged_server.py``), its whole stderr read back after it stopped. A method,
notification, id or tool name holding a line break stays on its record's one line, escaped,
in text and in JSON logs; a server embedded in a program with its own logging gets the
same from the log sites themselves; the client's log lines escape what a hostile server
sends. The request log shows only the fields known to be safe: ``x-api-key``, ``api-key``,
``auth``, ``pwd`` and the password inside a URL never appear.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import pytest
import trio

from runtime import Server
from runtime.client import open_client
from runtime.middleware import RequestLogging

from ..peers import ROOT, cli
from ..transports.app import serving
from ..transports.http_client import open_raw_session, request, session_headers

LOGGED_SERVER = "tests/observability/logged_server.py"
#: A record of the CLI's text format starts with its time stamp.
RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} level=")
SECRETS = ("s3cret-1", "s3cret-2", "s3cret-3", "s3cret-4", "s3cret-5", "s3cret-6", "s3cret-7")


@asynccontextmanager
async def served(*extra: str) -> AsyncIterator[tuple[tuple[str, int], list[str]]]:
    """``mcp-runtime serve logged_server.py --transport http`` on a free loopback port;
    yields its address and a list that holds its whole stderr once the block ends (the
    server stopped with SIGTERM, as an operator stops it)."""
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        err_path = Path(tmp) / "stderr"
        with err_path.open("wb") as err:
            process = await trio.lowlevel.open_process(
                cli("serve", LOGGED_SERVER, "--transport", "http", "--port", "0", *extra),
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "PYTHONIOENCODING": "utf-8"},
            )
        try:
            while (
                match := re.search(r"on http://127\.0\.0\.1:(\d+)/mcp", err_path.read_text())
            ) is None:
                assert process.returncode is None, err_path.read_text()
                await trio.sleep(0.05)
            yield ("127.0.0.1", int(match.group(1))), lines
        finally:
            process.terminate()
            with trio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            # Only "\n" ends a line of the file: what the check is about is what a reader
            # splitting lines there (grep, tail, a log shipper) sees.
            lines.extend(err_path.read_bytes().decode("utf-8").split("\n"))


async def forge(address: tuple[str, int]) -> None:
    """A method, a notification, an id and a tool name, each with a line break."""
    session = await open_raw_session(address)
    headers = session_headers(session)
    sent = [
        {"jsonrpc": "2.0", "id": 2, "method": "x\nFORGED line"},
        {"jsonrpc": "2.0", "method": "y\r\nFORGED note"},
        {
            "jsonrpc": "2.0",
            "id": "3\nFORGED id",
            "method": "tools/call",
            "params": {"name": "fetch\u2028FORGED tool", "arguments": {}},
        },
    ]
    for body in sent:
        reply = await request(address, "POST", headers=headers, body=body)
        assert reply.status in (200, 202), reply


async def test_a_line_break_a_peer_sends_never_starts_a_text_log_line() -> None:
    with trio.fail_after(60):
        async with served("--log-level", "debug") as (address, lines):
            await forge(address)
    lines = [line for line in lines if line]
    # Every line of the log is a record of its own (or the start-up banner): none is a
    # continuation a peer's line break started.
    banner = [line for line in lines if not RECORD.match(line)]
    assert len(banner) == 1 and banner[0].startswith("mcp-runtime: serving logged"), banner
    assert not any(line.startswith("FORGED") for line in lines)
    request_log = [line for line in lines if "logger=mcp_runtime.requests " in line]
    method = [line for line in request_log if "FORGED line" in line]
    assert len([line for line in method if " mcp request " in line]) == 1  # RequestLogging
    assert len([line for line in method if " request conn=" in line]) == 1  # --log-level debug
    assert all('method="x\\nFORGED line"' in line for line in method), method
    note = [line for line in request_log if "FORGED note" in line]
    assert len(note) == 1 and 'method="y\\r\\nFORGED note"' in note[0], note
    called = [line for line in request_log if "FORGED id" in line and " mcp request " in line]
    assert len(called) == 1, called
    assert 'id="3\\nFORGED id"' in called[0]
    assert '"name":"fetch\\u2028FORGED tool"' in called[0]  # (the params are JSON)
    assert all("\u2028" not in line and "\r" not in line for line in lines)


async def test_a_line_break_a_peer_sends_never_starts_a_json_log_line() -> None:
    with trio.fail_after(60):
        async with served("--log-level", "debug", "--log-format", "json") as (address, lines):
            await forge(address)
    lines = [line for line in lines if line]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(records) == len(lines) - 1  # and the start-up banner
    assert all("\u2028" not in line for line in lines)  # escaped as \u2028 in the JSON
    messages = [r["message"] for r in records if r["logger"] == "mcp_runtime.requests"]
    assert len([m for m in messages if m.startswith("mcp request") and "FORGED line" in m]) == 1
    assert len([m for m in messages if 'method="y\\r\\nFORGED note"' in m]) == 1
    assert not any("\n" in m or "\r" in m or "\u2028" in m for m in messages)


async def test_the_log_sites_escape_for_an_embedding_programs_own_logging(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No CLI formatter here: the records' own messages must be one line."""
    caplog.set_level(logging.DEBUG, logger="mcp_runtime")
    app = Server("embedded")
    app.add_middleware(RequestLogging())
    with trio.fail_after(20):
        async with serving(app) as address:
            await forge(address)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("mcp_runtime")]
    forged = [m for m in messages if "FORGED" in m]
    assert len(forged) >= 4, messages  # the request log and the --log-level debug line
    assert not any(char in m for m in forged for char in "\n\r\u2028"), forged
    assert any('method="x\\nFORGED line"' in m for m in forged)


async def test_the_client_escapes_what_a_hostile_server_logs_and_names() -> None:
    """A server's ``notifications/message`` lands in the client's log; a server-chosen
    method name in a failed answer's log line: both on one line, escaped."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(logging.DEBUG)
    client_log = logging.getLogger("mcp_runtime.client")
    client_log.addHandler(keep)
    before = client_log.level
    client_log.setLevel(logging.DEBUG)

    async def hostile(stream: trio.SocketStream) -> None:
        buffer = b""
        async with stream:
            while True:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = msgspec.json.decode(line)
                    if message.get("method") == "initialize":
                        reply = {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "result": {
                                "protocolVersion": "2025-11-25",
                                "capabilities": {"logging": {}},
                                "serverInfo": {"name": "hostile", "version": "0"},
                            },
                        }
                        await stream.send_all(msgspec.json.encode(reply) + b"\n")
                    elif message.get("method") == "tools/list":
                        note = {
                            "jsonrpc": "2.0",
                            "method": "notifications/message",
                            "params": {
                                "level": "error",
                                "logger": "a\nFORGED logger",
                                "data": "b\nFORGED data\x1b[2J",
                            },
                        }
                        odd = {"jsonrpc": "2.0", "id": 77, "method": "c\nFORGED method"}
                        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}
                        for item in (note, odd, reply):
                            await stream.send_all(msgspec.json.encode(item) + b"\n")

    try:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                listeners = await nursery.start(
                    functools.partial(trio.serve_tcp, hostile, 0, host="127.0.0.1")
                )
                port = listeners[0].socket.getsockname()[1]
                async with open_client(f"tcp://127.0.0.1:{port}", era="handshake") as client:
                    await client.list_tools()
                    await trio.sleep(0.2)  # the notification and the request are served
                nursery.cancel_scope.cancel()
    finally:
        client_log.removeHandler(keep)
        client_log.setLevel(before)
    forged = [r.getMessage() for r in records if "FORGED" in r.getMessage()]
    assert any('"b\\nFORGED data\\x1b[2J"' in m for m in forged), forged
    assert not any(char in m for m in forged for char in "\n\r\x1b"), forged


async def test_the_request_log_shows_no_secret_a_request_carries() -> None:
    """``x-api-key``, ``api-key``, ``auth``, ``pwd`` among the arguments (and among
    ``headers`` nested in them), a password in a URL's userinfo and a key in its query:
    neither the default request log nor one showing every argument shows any of them."""
    arguments = {
        "url": f"https://user:{SECRETS[0]}@api.example/v1?api_key={SECRETS[1]}&page=2",
        "headers": {
            "x-api-key": SECRETS[2],
            "api-key": SECRETS[3],
            "auth": SECRETS[4],
            "pwd": SECRETS[5],
        },
    }
    with trio.fail_after(60):
        async with served() as (address, lines):
            session = await open_raw_session(address)
            headers = session_headers(session)
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "fetch", "arguments": arguments},
            }
            reply = await request(address, "POST", headers=headers, body=call)
            assert reply.json()["result"]["isError"] is False
            read = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "resources/read",
                "params": {"uri": f"https://admin:{SECRETS[6]}@notes.example/welcome#frag"},
            }
            await request(address, "POST", headers=headers, body=read)
    text = "\n".join(lines)
    for secret in SECRETS:
        assert secret not in text, (secret, text)
    logged = [line for line in lines if " mcp request method=tools/call id=2 " in line]
    default = next(line for line in logged if "logger=mcp_runtime.requests " in line)
    wide = next(line for line in logged if "logger=mcp_runtime.requests.arguments " in line)
    # What is known to be safe is shown; every other value is masked, its key kept.
    assert '"name":"fetch"' in default and '"url":"[REDACTED]"' in default
    assert '"name":"fetch"' in wide
    assert '"x-api-key":"[REDACTED]"' in default and '"pwd":"[REDACTED]"' in default
    # Arguments shown: the deny-list and the URL rules still hold inside them.
    assert '"url":"https://api.example/v1?api_key=[REDACTED]&page=[REDACTED]"' in wide
    for key in ("x-api-key", "api-key", "auth", "pwd"):
        assert f'"{key}":"[REDACTED]"' in wide
    read = [line for line in lines if "method=resources/read id=3 " in line]
    assert len(read) == 2
    assert all('"uri":"https://notes.example/welcome#[REDACTED]"' in line for line in read)
