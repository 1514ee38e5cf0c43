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
