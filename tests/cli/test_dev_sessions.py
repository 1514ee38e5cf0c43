"""Handshake-era HTTP sessions across a reload of ``mcp-runtime dev``, with the official
SDK client as the peer and a real edit of the served file.

By default the supervisor holds the sessions (runtime/stores/_unix.py) and the next
version serves the session on. With ``--store memory://`` a session belongs to the version
that opened it: after a reload the client's next POST gets 404 and it opens a new session
(2025-11-25 basic/transports, "Session Management"). With ``--store redis://...`` the
session lives in Redis (tests/stores/test_dev_store.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from ..peers import ROOT, cli

QUICKSTART = ROOT / "examples" / "quickstart.py"


async def _wait_for(err: Path, text: str) -> str:
    """dev's stderr once it says ``text`` (a process's output: polled, no event for it)."""
    while True:
        seen = await trio.Path(err).read_text()
        if text in seen:
            return seen
        await trio.sleep(0.05)


async def across_a_reload(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    """Serve a copy of quickstart with ``dev``, open an SDK session, change ``add`` to add
    100 more, wait for the reload, and return what the client saw and dev's stderr."""
    server = tmp_path / "server.py"
    shutil.copy(QUICKSTART, server)
    err = tmp_path / "dev.stderr"
    with err.open("wb") as err_file:
        dev = await trio.lowlevel.open_process(
            cli("dev", str(server), "--port", "0", "--poll", *extra),
            stdin=subprocess.DEVNULL,
            stderr=err_file,
            cwd=ROOT,
        )
    try:
        with trio.fail_after(90):
            found = re.search(
                r"serving (http://\S+/mcp) \(reloads", await _wait_for(err, "loaded quickstart")
            )
            assert found is not None
            client = await trio.lowlevel.open_process(
                [sys.executable, str(ROOT / "tests/cli/sdk_dev_client.py"), found[1]],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=ROOT,
                env={**os.environ},
            )
            assert client.stdin is not None and client.stdout is not None
            output = b""
            while b"edit\n" not in output:
                chunk = await client.stdout.receive_some(4096)
                assert chunk, "the SDK client ended before the edit"
                output += chunk
            await trio.sleep(0.3)  # a distinct modification time for the polling watcher
            text = server.read_text()
            server.write_text(text.replace("    return a + b\n", "    return a + b + 100\n"))
            await _wait_for(err, "reloaded:")
            await client.stdin.send_all(b"go\n")
            while True:
                chunk = await client.stdout.receive_some(4096)
                if not chunk:
                    break
                output += chunk
            await client.wait()
            assert client.returncode == 0
    finally:
        with trio.CancelScope(shield=True):
            dev.terminate()
            with trio.move_on_after(15):
                await dev.wait()
            if dev.returncode is None:
                dev.kill()
                await dev.wait()
    seen: dict[str, Any] = json.loads(output.decode().splitlines()[-1])
    return seen, err.read_text()


async def test_sessions_survive_a_reload_by_default(tmp_path: Path) -> None:
    seen, stderr = await across_a_reload(tmp_path)
    assert seen["before"] == "5"
    # The same session (no 404, no new initialize), answered by the new code.
    assert seen.get("same_session") == "105", seen
    assert "same_session_error" not in seen and "new_session" not in seen
    assert "Traceback" not in stderr


async def test_a_reload_ends_per_version_memory_sessions_and_the_client_initializes_again(
    tmp_path: Path,
) -> None:
    seen, stderr = await across_a_reload(tmp_path, "--store", "memory://")
    assert seen["before"] == "5"
    # The old version took its session with it: 404, which the SDK reports as an error.
    assert "same_session" not in seen
    assert "Not Found: unknown or ended session" in seen["same_session_error"]
    # A new session meets the new version.
    assert seen["new_session"] == "105"
    assert "Traceback" not in stderr


async def test_store_over_stdio_is_a_usage_error() -> None:
    with trio.fail_after(30):
        done = await trio.run_process(
            cli("dev", str(QUICKSTART), "--transport", "stdio", "--store", "redis://x:1/0"),
            cwd=ROOT,
            capture_stderr=True,
            check=False,
            stdin=b"",
        )
    assert done.returncode == 2
    assert b"--store applies to dev over HTTP" in done.stderr
