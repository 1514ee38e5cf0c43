"""A stdio server's whole process tree ends with the client, sessions left included (Linux).

The server below is a raw ndjson MCP server (it answers ``initialize`` and one tool) that
starts a descendant which leaves its process group with ``setsid()``: signalling the group
cannot reach it, so only the reaper (``runtime.client._reaper``, a child subreaper) can.
Each test reads the descendant's pid from a file the server writes and polls ``/proc`` for
it after the client is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from runtime.client import TransportLost, open_client
from runtime.client._connectors import REAPER_AVAILABLE

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the reaper is Linux's (docs/client.md)"
)

#: ``{how}``: "child" (a child of the server calls setsid and sleeps), "daemon" (a double
#: fork: the setsid process is orphaned at once, while the client is still open) or
#: "stubborn" (a daemon that also ignores SIGTERM: only SIGKILL ends it).
SERVER = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, time
    how, pid_file = sys.argv[1], sys.argv[2]
    sleeper = (
        "import os, signal, sys, time\\n"
        "os.setsid()\\n"
        "if sys.argv[1] == 'stubborn': signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        "open(sys.argv[2] + '.tmp', 'w').write(str(os.getpid()))\\n"
        "os.rename(sys.argv[2] + '.tmp', sys.argv[2])\\n"
        "time.sleep(600)\\n"
    )
    if how == "child":
        subprocess.Popen([sys.executable, "-c", sleeper, how, pid_file],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    else:  # the daemon's parent exits at once: the daemon is an orphan
        subprocess.run([sys.executable, "-c",
                        "import subprocess, sys; subprocess.Popen(sys.argv[1:])",
                        sys.executable, "-c", sleeper, how, pid_file],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "tree", "version": "1"}}
        else:
            result = {"content": [{"type": "text", "text": "pong"}]}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    """
)

GRACE = 0.5
#: The client's close takes at most about 3 x grace (EOF, SIGTERM, SIGKILL); the margin is
#: for a loaded machine.
GONE_WITHIN = 3 * GRACE + 5.0


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), None once it no longer runs
    (gone, or a zombie: it runs no more and waits only to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


async def _descendant(pid_file: Path) -> tuple[int, str]:
    path = trio.Path(pid_file)
    with trio.fail_after(20):
        while not await path.exists():  # noqa: ASYNC110 - a file another process writes
            await trio.sleep(0.02)
    pid = int(await path.read_text())
    started = _start_time(pid)
    assert started is not None, "the descendant is not running"
    return pid, started


async def _gone(pid: int, started: str, within: float) -> bool:
    """Whether ``pid`` (started at ``started``) stops running within ``within`` seconds."""
    with trio.move_on_after(within):
        while _start_time(pid) == started:  # noqa: ASYNC110 - polling /proc is the point
            await trio.sleep(0.05)
        return True
    return False


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["child", "daemon", "stubborn"])
async def test_a_descendant_that_left_the_group_ends_with_the_client(
    how: str, tmp_path: Path
) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    pid_file = tmp_path / "descendant.pid"
    command = [sys.executable, str(script), how, str(pid_file)]
    pid = 0
    try:
        with trio.fail_after(60):
            async with open_client(command, era="handshake", close_grace=GRACE) as client:
                assert (await client.call_tool("ping", {})).text == "pong"
                pid, started = await _descendant(pid_file)
                assert os.getsid(pid) == pid  # it left the server's session and group
                assert (await client.call_tool("ping", {})).text == "pong"
            assert await _gone(pid, started, GONE_WITHIN), f"pid {pid} outlived the client"
    finally:
        if pid:
            _kill(pid)  # on the old code, don't leave it behind the test run


CLIENT = textwrap.dedent(
    """
    import sys, trio
    from runtime.client import open_client

    async def main():
        async with open_client(sys.argv[1:], era="handshake", close_grace=0.5) as client:
            await client.call_tool("ping", {})
            print("ready", flush=True)
            await trio.sleep_forever()

    trio.run(main)
    """
)


async def test_the_tree_ends_when_the_clients_process_is_killed(tmp_path: Path) -> None:
    """The client's process dies with SIGKILL (no close at all): the reaper sees its socket
    close and ends the server's tree, the descendant that left the group included."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    pid_file = tmp_path / "descendant.pid"
    pid = 0
    client = await trio.lowlevel.open_process(
        [sys.executable, "-c", CLIENT, sys.executable, str(script), "daemon", str(pid_file)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        with trio.fail_after(60):
            assert client.stdout is not None
            ready = b""
            while not ready.endswith(b"\n"):
                data = await client.stdout.receive_some(64)
                assert data, "the client exited before it was ready"
                ready += data
            assert ready == b"ready\n"
            pid, started = await _descendant(pid_file)
            client.kill()
            await client.wait()
            assert await _gone(pid, started, GONE_WITHIN), f"pid {pid} outlived the client"
    finally:
        with trio.CancelScope(shield=True):
            client.kill()
            await client.wait()
        if pid:
            _kill(pid)


async def test_a_command_that_cannot_start_fails_at_open(tmp_path: Path) -> None:
    """Under the reaper too, a command that cannot be run is a TransportLost at once, naming
    the command and the reason, as a failed spawn always was."""
    with trio.fail_after(30), pytest.raises(TransportLost) as caught:
        async with open_client([str(tmp_path / "no-such-server")], era="handshake"):
            pass
    assert "cannot start" in str(caught.value)
    assert "No such file or directory" in str(caught.value)


def test_the_reaper_is_used_on_linux() -> None:
    """Under CI the reaper is required where it can run: a skip would hide the guarantee."""
    assert REAPER_AVAILABLE
