"""``mcp-runtime list|call|inspect`` facing a hostile or broken server: the real CLI (a
subprocess) against raw servers on loopback written here. A listing that never ends, a
server that answers just in time, names and text carrying terminal escape sequences, a port
nobody listens on and an HTTP server that answers 404: each ends in bounded time with one
plain line on stderr and the documented exit status, and nothing the server chose reaches
the terminal as a control character."""

from __future__ import annotations

import functools
import json
import os
import pty
import sys
import time
from contextlib import suppress
from typing import Any

import pytest
import trio

from ..client.targets import ROOT
from ..client.test_list_limits import discovered, endless_pages, ndjson_server
from ..client.test_sdk_peer import free_port

#: Everything a terminal may act on: C0 controls but newline and tab, DEL, C1 controls, and
#: the bidi controls that reorder a line.
CONTROLS = frozenset(
    chr(code)
    for code in (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
) - {"\n", "\t"}
#: Our exceptions' class names: the CLI prints an error's sentence, never its class.
CLASS_NAMES = ("TransportLost", "ClientError", "PeerError", "BadMessage", "RequestTimeout")


async def cli(*args: str, deadline: float = 60.0) -> tuple[int, str, str, float]:
    """Run ``python -m runtime ARGS``; (exit status, stdout, stderr, seconds). Past
    ``deadline`` the process is killed and the test fails."""
    started = time.monotonic()
    with trio.fail_after(deadline):
        done = await trio.run_process(
            [sys.executable, "-m", "runtime", *args],
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    elapsed = time.monotonic() - started
    return done.returncode, done.stdout.decode(), done.stderr.decode(), elapsed


def one_error_line(err: str) -> str:
    """The CLI's one line on stderr: ``mcp-runtime: error: <sentence>``, no class, no repr."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("mcp-runtime: error: "), err
    assert not any(name in line for name in CLASS_NAMES), err
    assert "Error(" not in line and "Exception(" not in line, err  # no repr of an exception
    assert not CONTROLS & set(line), err
    return line


# -- a listing that never ends -------------------------------------------------------------


@pytest.mark.parametrize("command", [("list",), ("call", "t0-1")])
async def test_endless_pagination_stops_at_the_page_limit(command: tuple[str, ...]) -> None:
    served: list[str] = []
    async with ndjson_server(endless_pages(served)) as target:
        code, out, err, _elapsed = await cli(command[0], target, *command[1:], "--timeout", "50")
    line = one_error_line(err)
    assert code == 3 and out == "", err
    assert line == (
        "mcp-runtime: error: tools/list: the server offered more than 1000 pages (max_list_pages)"
    )
    assert len(served) == 1000  # the limit, and not one page more


async def test_a_repeated_cursor_is_a_loop() -> None:
    cursors = iter(["a", "b", "c", "a", "b"])

    async def answer(message: dict[str, Any]) -> dict[str, Any] | None:
        if message["method"] == "server/discover":
            return discovered({"tools": {}})
        tools = [{"name": "t", "inputSchema": {"type": "object"}}]
        return {"result": {"tools": tools, "nextCursor": next(cursors)}}

    async with ndjson_server(answer) as target:
        code, _out, err, _elapsed = await cli("list", target, "tools", deadline=30)
    assert code == 3
    assert one_error_line(err) == (
        "mcp-runtime: error: tools/list: the server repeated the cursor 'a'"
    )


async def test_timeout_is_a_deadline_for_the_whole_command() -> None:
    """Each page comes in 0.2 s, well within any request's timeout: only a deadline for
    the whole command stops it."""
    served: list[str] = []
    async with ndjson_server(endless_pages(served, delay=0.2)) as target:
        code, out, err, elapsed = await cli("list", target, "--timeout", "2", deadline=20)
    assert code == 3 and out == ""
    assert one_error_line(err) == "mcp-runtime: error: no result within --timeout 2 s"
    assert elapsed < 6, elapsed  # 2 s, the 0.5 s a first request has to say why, start-up
    assert 3 <= len(served) <= 13


# -- what the server chooses, printed -----------------------------------------------------

NAME = "t\x1b[2J\x1b]0;owned\x07"
DESCRIPTION = "clears\x9b2J \u202eevil\u202c the screen"
TEXT = "ok \x1b[31mred\x1b[0m\r\nnext\rover\ttab\x00\x7f"
FAILURE = "bad\x1b[2J\nmcp-runtime: forged line"


async def escaping_server(message: dict[str, Any]) -> dict[str, Any] | None:
    method = message["method"]
    if method == "server/discover":
        meta = {"io.modelcontextprotocol/serverInfo": {"name": "srv\x1b]0;x\x07", "version": "1"}}
        return discovered({"tools": {}}, instructions="one\n\x1b[2Jtwo", _meta=meta)
    if method == "tools/list":
        schema = {"type": "object", "properties": {"x\x1b[1m": {"type": "string"}}}
        tool = {"name": NAME, "description": DESCRIPTION, "inputSchema": schema}
        return {"result": {"tools": [tool]}}
    if method == "tools/call":
        arguments = message["params"].get("arguments") or {}
        if arguments:
            return {"error": {"code": -32602, "message": FAILURE}}
        return {"result": {"content": [{"type": "text", "text": TEXT}], "resultType": "complete"}}
    return {"error": {"code": -32601, "message": "Method not found"}}


async def test_control_characters_are_made_visible_in_human_output() -> None:
    async with ndjson_server(escaping_server) as target:
        listed = await cli("list", target, "tools", deadline=30)
        inspected = await cli("inspect", target, deadline=30)
        called = await cli("call", target, NAME, deadline=30)
        refused = await cli("call", target, NAME, "--json", '{"x\\u001b[1m": "1"}', deadline=30)
    for code, out, err, _elapsed in (listed, inspected, called):
        assert code == 0, err
        assert not CONTROLS & set(out), out
    assert listed[1] == (
        "t\\x1b[2J\\x1b]0;owned\\x07(x\\x1b[1m?: string)"
        "  clears\\x9b2J \\u202eevil\\u202c the screen\n"
    )
    assert "server: srv\\x1b]0;x\\x07 1\n" in inspected[1]
    assert "instructions: one\n\\x1b[2Jtwo\n" in inspected[1]
    # Newlines and tabs stay (the text's own lines); CRLF is a newline; a lone CR is shown.
    assert called[1] == "ok \\x1b[31mred\\x1b[0m\nnext\\x0dover\ttab\\x00\\x7f\n"
    # The server's error message: one line, its newline shown, not a second (forged) line.
    code, _out, err, _elapsed = refused
    assert code == 3
    assert one_error_line(err) == (
        "mcp-runtime: error: bad\\x1b[2J\\x0amcp-runtime: forged line (code -32602)"
    )


async def test_on_a_terminal_too() -> None:
    """The same on a terminal (a pty as stdout), which is where an escape would act."""
    controller, terminal = pty.openpty()
    try:
        async with ndjson_server(escaping_server) as target:
            with trio.fail_after(30):
                done = await trio.run_process(
                    [sys.executable, "-m", "runtime", "call", target, NAME],
                    cwd=ROOT,
                    stdout=terminal,
                    capture_stderr=True,
                    check=False,
                )
        os.close(terminal)
        terminal = -1
        shown = b""
        with suppress(OSError):  # EIO once everything written is read
            while chunk := os.read(controller, 65536):
                shown += chunk
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    assert done.returncode == 0, done.stderr
    text = shown.decode().replace("\r\n", "\n")  # the terminal's own line endings
    assert text == "ok \\x1b[31mred\\x1b[0m\nnext\\x0dover\ttab\\x00\\x7f\n"


async def test_json_output_is_exact_and_escapes_every_control() -> None:
    async with ndjson_server(escaping_server) as target:
        listed = await cli("list", target, "tools", "--json", deadline=30)
        called = await cli("call", target, NAME, "--json", deadline=30)
    for code, out, err, _elapsed in (listed, called):
        assert code == 0, err
        assert not CONTROLS & set(out), out  # C1 and bidi too, which JSON may leave raw
    tool = json.loads(listed[1])[0]
    assert (tool["name"], tool["description"]) == (NAME, DESCRIPTION)
    assert json.loads(called[1])["content"][0]["text"] == TEXT
    assert "\\u009b" in listed[1] and "\\u202e" in listed[1]


async def test_a_spawned_servers_stderr_is_logged_one_line_at_a_time(tmp_path: Any) -> None:
    """``--log-level info`` shows the spawned server's stderr: its escapes made visible."""
    server = tmp_path / "noisy.py"
    server.write_text(
        "import sys\n"
        "from runtime import Server\n"
        "app = Server('noisy')\n"
        "print('hello\\x1b]0;owned\\x07 there', file=sys.stderr, flush=True)\n"
    )
    code, _out, err, _elapsed = await cli("list", str(server), "--log-level", "info")
    assert code == 0, err
    assert not CONTROLS & set(err), err
    assert "hello\\x1b]0;owned\\x07 there" in err


# -- a server that cannot be reached -------------------------------------------------------


async def test_a_refused_port_is_one_plain_line_and_a_fast_exit_3() -> None:
    port = free_port()  # bound and released: nothing listens on it
    for target in (f"http://127.0.0.1:{port}/mcp", f"tcp://127.0.0.1:{port}"):
        code, out, err, elapsed = await cli("list", target, deadline=30)
        line = one_error_line(err)
        assert (code, out) == (3, ""), err
        assert f"127.0.0.1:{port}" in line
        assert elapsed <= 2.5, (target, elapsed, err)


async def test_a_404_is_one_plain_line_and_a_fast_exit_3() -> None:
    """An HTTP server that answers every request 404 (a URL without its ``/mcp``)."""
    requests: list[bytes] = []

    async def handle(stream: trio.SocketStream) -> None:
        buffer = b""
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                length = 0
                for field in head.split(b"\r\n")[1:]:
                    name, _, value = field.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    buffer += await stream.receive_some(65536)
                buffer = buffer[length:]
                requests.append(head.split(b"\r\n")[0])
                await stream.send_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: 9\r\n\r\nNot Found"
                )

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        code, out, err, elapsed = await cli("list", f"http://127.0.0.1:{port}/", deadline=30)
        nursery.cancel_scope.cancel()
    line = one_error_line(err)
    assert (code, out) == (3, ""), err
    assert "404" in line
    assert elapsed <= 2.5, (elapsed, err)
    assert 1 <= len(requests) <= 3, requests  # the era probe and its fallback, no retries
