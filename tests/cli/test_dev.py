"""``mcp-runtime dev``: a real supervisor process, its children, one listening socket kept
across reloads; modern HTTP requests and the official SDK client as peers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from ..peers import ROOT, cli, run_sdk_client
from ..transports.app import modern, modern_headers
from ..transports.http_client import request
from ..wire import RawPeer

QUICKSTART = ROOT / "examples" / "quickstart.py"


async def _wait_for(err: Path, pattern: str, count: int = 1) -> str:
    while True:
        text = await trio.Path(err).read_text()
        if len(re.findall(pattern, text)) >= count:
            return text
        await trio.sleep(0.05)


async def _tools(address: tuple[str, int]) -> list[str]:
    reply = await request(
        address, "POST", headers=modern_headers("tools/list"), body=modern(1, "tools/list")
    )
    assert reply.status == 200, reply
    return [tool["name"] for tool in reply.json()["result"]["tools"]]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("watcher", ["watchfiles", "poll"])
async def test_dev_reloads_keeps_the_socket_and_survives_import_errors(
    tmp_path: Path, watcher: str
) -> None:
    server = tmp_path / "server.py"
    shutil.copy(QUICKSTART, server)
    err = tmp_path / "dev.stderr"
    extra = ["--poll"] if watcher == "poll" else []
    with err.open("wb") as err_file:
        process = await trio.lowlevel.open_process(
            cli("dev", str(server), "--port", "0", *extra),
            stdin=subprocess.DEVNULL,
            stderr=err_file,
            cwd=ROOT,
            env={**os.environ},
        )
    try:
        with trio.fail_after(90):
            text = await _wait_for(err, r"loaded quickstart")
            port = int(re.search(r"serving http://127\.0\.0\.1:(\d+)/mcp \(reloads", text)[1])
            assert "3 tools (add, countdown, divide)" in text
            assert "stdio" in text  # the hint for stdio clients
            address = ("127.0.0.1", port)
            assert await _tools(address) == ["add", "countdown", "divide"]

            await trio.sleep(0.3)  # a distinct modification time for the polling watcher
            _edit(server, "def add(", "def plus(")
            await _wait_for(err, r"reloaded:", 1)
            assert await _tools(address) == ["plus", "countdown", "divide"]

            await trio.sleep(0.3)
            _edit(server, "def plus(", "def plus((")  # a syntax error
            text = await _wait_for(err, r"reload failed")
            assert "SyntaxError" in text
            assert await _tools(address) == ["plus", "countdown", "divide"]  # still served

            await trio.sleep(0.3)
            _edit(server, "def plus((", "def sum_of(")
            await _wait_for(err, r"reloaded:", 2)
            assert await _tools(address) == ["sum_of", "countdown", "divide"]
            # back to the original, then the official SDK client (both eras) on the same URL
            await trio.sleep(0.3)
            _edit(server, "def sum_of(", "def add(")
            await _wait_for(err, r"reloaded:", 3)
            url = f"http://127.0.0.1:{port}/mcp"
            for mode in ("modern", "streamable"):
                seen: dict[str, Any] = await run_sdk_client(
                    "transports/sdk_http_client.py", mode, url
                )
                assert seen["add"]["content"] == [{"type": "text", "text": "42"}]
                assert [p[0] for p in seen["progress"]] == [1, 2, 3]
            assert process.returncode is None  # the supervisor never died
    finally:
        with trio.CancelScope(shield=True):
            process.terminate()
            with trio.move_on_after(15):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
    text = err.read_text()
    assert "Traceback" not in text
    assert process.returncode == 0  # SIGTERM: the supervisor stopped its child and itself


async def test_dev_over_stdio_keeps_the_session_across_reloads(tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    shutil.copy(QUICKSTART, server)
    err = tmp_path / "dev.stderr"
    with err.open("wb") as err_file:
        process = await trio.lowlevel.open_process(
            cli("dev", str(server), "--transport", "stdio"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_file,
            cwd=ROOT,
        )
    assert process.stdin is not None and process.stdout is not None
    peer = RawPeer(process.stdin, process.stdout, "ndjson")
    notes: list[dict[str, Any]] = []

    async def call(request_id: int, method: str, params: Any) -> dict[str, Any]:
        await peer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = await peer.receive(timeout=30)
            if message.get("id") == request_id:
                return message
            notes.append(message)

    try:
        with trio.fail_after(90):
            init = await peer.initialize()
            assert init["result"]["serverInfo"]["name"] == "quickstart"
            tools = await call(2, "tools/list", {})
            assert [t["name"] for t in tools["result"]["tools"]] == ["add", "countdown", "divide"]

            _edit(server, "def add(", "def plus(")
            await _wait_for(err, r"reloaded:", 1)
            # the same session, no new initialize: the new version knows it
            tools = await call(3, "tools/list", {})
            assert [t["name"] for t in tools["result"]["tools"]] == ["plus", "countdown", "divide"]
            assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in notes
            plus = await call(4, "tools/call", {"name": "plus", "arguments": {"a": 2, "b": 3}})
            assert plus["result"]["content"][0]["text"] == "5"

            await trio.sleep(0.3)
            _edit(server, "def plus(", "def plus((")
            text = await _wait_for(err, r"reload failed")
            assert "SyntaxError" in text
            again = await call(5, "tools/call", {"name": "plus", "arguments": {"a": 1, "b": 1}})
            assert again["result"]["content"][0]["text"] == "2"  # the old version serves on
            # the supervisor's own requests never reach the client
            assert all("mcp-runtime-dev" not in str(m.get("id")) for m in notes)

            await process.stdin.aclose()  # the client leaves: everything ends
            assert await process.wait() == 0
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert "Traceback" not in err.read_text()
