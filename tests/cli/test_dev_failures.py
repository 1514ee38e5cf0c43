"""``mcp-runtime dev`` when a version fails: it crashes, it hangs at import, it is still
loading when dev is told to stop, or the port is taken. A real dev process, real edits of
the served file, raw HTTP on 127.0.0.1; each test bounded in time."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from ..peers import ROOT, cli
from ..transports.app import modern, modern_headers
from ..transports.http_client import Response, request
from ..wire import RawPeer

QUICKSTART = ROOT / "examples" / "quickstart.py"

CRASH_TOOL = '''

@app.tool()
def crash() -> str:
    """End this process at once, as a segfault or the OOM killer would."""
    import os

    os._exit(3)
'''


def hang_at_import(pid_file: Path, helper_pid_file: Path | None = None) -> str:
    """Lines that make the served file hang at import, after writing its pid (and starting a
    helper process of its own, whose pid is written too)."""
    lines = ["", "import os as _os, time as _time"]
    if helper_pid_file is not None:
        lines += [
            "import subprocess as _sp",
            "_helper = _sp.Popen(['sleep', '600'])",
            f"open({str(helper_pid_file)!r}, 'w').write(str(_helper.pid))",
        ]
    lines += [f"open({str(pid_file)!r}, 'w').write(str(_os.getpid()))", "_time.sleep(600)", ""]
    return "\n".join(lines)


@contextlib.asynccontextmanager
async def dev(served: Path, tmp_path: Path, *extra: str) -> AsyncIterator[trio.Process]:
    err = tmp_path / "dev.stderr"
    with err.open("wb") as err_file:
        process = await trio.lowlevel.open_process(
            cli("dev", str(served), "--port", "0", "--poll", *extra),
            stdin=subprocess.DEVNULL,
            stderr=err_file,
            cwd=ROOT,
        )
    try:
        yield process
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.terminate()
                with trio.move_on_after(15):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert "Traceback" not in err.read_text()


async def wait_for(err: Path, pattern: str, count: int = 1) -> str:
    """dev's stderr once ``pattern`` occurs ``count`` times (polled: no event for it)."""
    while True:
        text = await trio.Path(err).read_text()
        if len(re.findall(pattern, text)) >= count:
            return text
        await trio.sleep(0.05)


async def port_of(err: Path) -> int:
    text = await wait_for(err, r"serving http://127\.0\.0\.1:\d+/mcp \(reloads")
    found = re.search(r"serving http://127\.0\.0\.1:(\d+)/mcp \(reloads", text)
    assert found is not None
    return int(found[1])


async def post(port: int, request_id: int, method: str, params: Any = None) -> Response:
    name = params.get("name") if isinstance(params, dict) else None
    return await request(
        ("127.0.0.1", port),
        "POST",
        headers=modern_headers(method, name),
        body=modern(request_id, method, params),
    )


async def tools(port: int) -> list[str]:
    reply = await post(port, 1, "tools/list")
    assert reply.status == 200, reply
    return [tool["name"] for tool in reply.json()["result"]["tools"]]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


async def read_pids(*pid_files: Path) -> list[int]:
    """The pids the served file wrote down, once it has (polled: no event for it)."""
    while True:
        try:
            return [int(await trio.Path(pid_file).read_text()) for pid_file in pid_files]
        except (FileNotFoundError, ValueError):  # not yet written, or not yet whole
            await trio.sleep(0.05)


async def until_gone(*pids: int) -> None:
    while True:
        if all(gone(pid) for pid in pids):
            return
        await trio.sleep(0.05)


def end_leftovers(*pid_files: Path) -> None:
    """Kill what a failed test left running (the processes the served file wrote down)."""
    for pid_file in pid_files:
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie no one reaped yet counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


async def test_a_crash_is_reported_and_answered_with_503_until_an_edit_fixes_it(
    tmp_path: Path,
) -> None:
    served = tmp_path / "server.py"
    served.write_text(QUICKSTART.read_text() + CRASH_TOOL)
    err = tmp_path / "dev.stderr"
    async with dev(served, tmp_path) as process:
        with trio.fail_after(60):
            port = await port_of(err)
            await wait_for(err, r"loaded quickstart")
            assert "crash" in await tools(port)
            # The call ends the version: its connection closes without an answer.
            with contextlib.suppress(Exception):
                await post(port, 2, "tools/call", {"name": "crash", "arguments": {}})
        with trio.fail_after(5):
            text = await wait_for(err, r"the server exited")
        assert (
            "mcp-runtime dev: the server exited (exit status 3): answering 503 until the "
            "next change\n" in text
        )
        # Meanwhile a client gets a precise error at once, not a hang.
        with trio.fail_after(5):
            reply = await post(port, 7, "tools/list")
        assert reply.status == 503
        assert reply.headers["content-type"] == "application/json"
        assert reply.json() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32603,
                "message": "mcp-runtime dev: the server exited (exit status 3); fix it and save",
            },
        }
        # A GET (no body) gets the same, with id null.
        with trio.fail_after(5):
            listen = await request(("127.0.0.1", port), "GET", headers={"accept": "*/*"})
        assert listen.status == 503 and listen.json()["id"] is None
        # The next edit brings a new version, which serves.
        with trio.fail_after(30):
            edit(served, "def add(", "def plus(")
            await wait_for(err, r"reloaded:")
            assert await tools(port) == ["plus", "countdown", "divide", "crash"]
        assert process.returncode is None


async def test_a_target_that_fails_to_load_at_start_is_answered_with_503(
    tmp_path: Path,
) -> None:
    served = tmp_path / "server.py"
    served.write_text("this is not python(\n")
    err = tmp_path / "dev.stderr"
    async with dev(served, tmp_path):
        with trio.fail_after(30):
            port = await port_of(err)
            text = await wait_for(err, r"answering 503")
        assert "SyntaxError" in text
        with trio.fail_after(5):
            reply = await post(port, 4, "tools/list")
        assert reply.status == 503
        assert reply.json()["error"]["message"] == (
            f"mcp-runtime dev: {served} failed to load; fix it and save"
        )
        assert reply.json()["id"] == 4
        with trio.fail_after(30):
            shutil.copy(QUICKSTART, served)
            await wait_for(err, r"reloaded:")
            assert await tools(port) == ["add", "countdown", "divide"]


async def test_sigterm_while_a_version_is_loading_leaves_no_process_and_frees_the_port(
    tmp_path: Path,
) -> None:
    """The version hangs at import (with a helper process of its own): SIGTERM to dev ends
    all three, and the port can be bound again."""
    pid_file, helper_pid_file = tmp_path / "child.pid", tmp_path / "helper.pid"
    served = tmp_path / "server.py"
    served.write_text(QUICKSTART.read_text() + hang_at_import(pid_file, helper_pid_file))
    err = tmp_path / "dev.stderr"
    with contextlib.ExitStack() as leftovers:
        leftovers.callback(end_leftovers, pid_file, helper_pid_file)
        port = await sigterm_while_loading(served, err, pid_file, helper_pid_file, tmp_path)
    probe = socket.socket()
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("127.0.0.1", port))  # EADDRINUSE while any process still listens
        probe.listen()
    finally:
        probe.close()


async def sigterm_while_loading(
    served: Path, err: Path, pid_file: Path, helper_pid_file: Path, tmp_path: Path
) -> int:
    async with dev(served, tmp_path) as process:
        with trio.fail_after(30):
            port = await port_of(err)
            child, helper = await read_pids(pid_file, helper_pid_file)
            assert not gone(child) and not gone(helper)
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(10):
            assert await process.wait() == 0
        with trio.fail_after(5):
            await until_gone(child, helper)
    return port


async def test_an_edit_replaces_a_version_hung_at_import_at_once(tmp_path: Path) -> None:
    served = tmp_path / "server.py"
    shutil.copy(QUICKSTART, served)
    pid_file = tmp_path / "hung.pid"
    err = tmp_path / "dev.stderr"
    with contextlib.ExitStack() as leftovers:
        leftovers.callback(end_leftovers, pid_file)
        await replace_a_hung_load(served, err, pid_file, tmp_path)


async def replace_a_hung_load(served: Path, err: Path, pid_file: Path, tmp_path: Path) -> None:
    async with dev(served, tmp_path):
        with trio.fail_after(60):
            port = await port_of(err)
            await wait_for(err, r"loaded quickstart")
            # Served (not only loaded): an edit before would replace the load in progress.
            assert await tools(port) == ["add", "countdown", "divide"]
            await trio.sleep(0.3)  # a distinct modification time for the polling watcher
            await trio.Path(served).write_text(QUICKSTART.read_text() + hang_at_import(pid_file))
            (hung,) = await read_pids(pid_file)
            # Meanwhile the previous version serves on.
            assert await tools(port) == ["add", "countdown", "divide"]
        # The fix: well under START_TIMEOUT (30 s), the hung load is stopped and the fixed
        # version serves.
        with trio.fail_after(10):
            edited = trio.current_time()
            fixed = QUICKSTART.read_text().replace("def add(", "def plus(")
            await trio.Path(served).write_text(fixed)
            text = await wait_for(err, r"reloaded:")
            took = trio.current_time() - edited
            assert await tools(port) == ["plus", "countdown", "divide"]
        assert took < 10
        assert "the version still loading is stopped: loading the newer one" in text
        assert gone(hung)


async def test_a_busy_port_gets_serves_one_line_and_exit_code(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with trio.fail_after(60):
            dev_run = await trio.run_process(
                cli("dev", str(QUICKSTART), "--port", str(port)),
                capture_stderr=True,
                check=False,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
            )
            serve_run = await trio.run_process(
                cli("serve", str(QUICKSTART), "--transport", "http", "--port", str(port)),
                capture_stderr=True,
                check=False,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
            )
    finally:
        taken.close()
    line = (
        f"mcp-runtime: error: 127.0.0.1:{port} is already in use: stop the other server or "
        "choose another --port\n"
    )
    assert serve_run.stderr.decode().endswith(line)
    assert dev_run.stderr.decode() == line
    assert dev_run.returncode == serve_run.returncode == 1


async def test_the_banner_help_and_docs_say_stdio_sessions_survive_a_reload(
    tmp_path: Path,
) -> None:
    """What ``dev`` over stdio does (tests/cli/test_dev.py: the session goes on across
    reloads, no new initialize) is what its banner, --help and the docs say."""
    err = tmp_path / "dev.stderr"
    async with dev(QUICKSTART, tmp_path):
        with trio.fail_after(30):
            text = await wait_for(err, r"loaded quickstart")
    assert (
        "mcp-runtime dev: stdio clients: have them start `mcp-runtime dev "
        f"{QUICKSTART} --transport stdio` instead (their session survives reloads too)\n" in text
    )
    assert "cannot survive" not in text
    with trio.fail_after(30):
        helped = await trio.run_process(
            cli("dev", "--help"), capture_stdout=True, check=False, cwd=ROOT
        )
    assert "stdio (the session survives reloads)" in " ".join(helped.stdout.decode().split())
    docs = " ".join((ROOT / "docs" / "dev-loop.md").read_text().split())
    assert "its session goes on without a new `initialize`" in docs


def test_gone_reads_a_live_process_as_alive() -> None:
    """The helper the tests above rely on: this process is not gone."""
    assert not gone(os.getpid())


async def test_over_stdio_a_crash_is_answered_and_a_hung_load_is_replaced(
    tmp_path: Path,
) -> None:
    """``dev --transport stdio``: the request the crash cut short, and those sent until the
    next change, get a JSON-RPC error naming the crash; an edit brings the session back (no
    new initialize); a version hung at import is replaced by the next edit at once."""
    served = tmp_path / "server.py"
    served.write_text(QUICKSTART.read_text() + CRASH_TOOL)
    err = tmp_path / "dev.stderr"
    pid_file = tmp_path / "hung.pid"
    with err.open("wb") as err_file:
        process = await trio.lowlevel.open_process(
            cli("dev", str(served), "--transport", "stdio", "--poll"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_file,
            cwd=ROOT,
        )
    assert process.stdin is not None and process.stdout is not None
    peer = RawPeer(process.stdin, process.stdout, "ndjson")

    async def call(request_id: int, method: str, params: Any) -> dict[str, Any]:
        await peer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message: dict[str, Any] = await peer.receive(timeout=30)
            if message.get("id") == request_id:
                return message

    crashed = "mcp-runtime dev: the server exited (exit status 3); fix it and save"
    try:
        with trio.fail_after(60):
            await peer.initialize()
            await call(2, "tools/list", {})
        with trio.fail_after(5):
            cut = await call(3, "tools/call", {"name": "crash", "arguments": {}})
            assert cut == {
                "jsonrpc": "2.0",
                "id": 3,
                "error": {"code": -32603, "message": crashed},
            }
            text = await wait_for(err, r"the server exited")
            assert "the server exited (exit status 3): answering errors until the next" in text
            again = await call(4, "tools/list", {})
            assert again["error"]["message"] == crashed
        with trio.fail_after(60):
            await trio.sleep(0.3)  # a distinct modification time for the polling watcher
            await trio.Path(served).write_text(QUICKSTART.read_text() + hang_at_import(pid_file))
            (hung,) = await read_pids(pid_file)
        with trio.fail_after(10):
            fixed = QUICKSTART.read_text().replace("def add(", "def plus(")
            await trio.Path(served).write_text(fixed)
            await wait_for(err, r"reloaded:")
            tools = await call(5, "tools/list", {})
            assert [t["name"] for t in tools["result"]["tools"]] == ["plus", "countdown", "divide"]
            await until_gone(hung)
        await process.stdin.aclose()
        with trio.fail_after(15):
            assert await process.wait() == 0
    finally:
        with trio.CancelScope(shield=True):
            end_leftovers(pid_file)
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert "Traceback" not in err.read_text()
