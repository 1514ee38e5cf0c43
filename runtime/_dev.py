"""``mcp-runtime dev TARGET``: serve over HTTP and reload on file changes.

The supervisor (this process) binds the listening socket once and keeps it for its whole
life; each version of the server runs in a child process that accepts on that inherited
socket (``serve_http(sockets=...)``). On a change, a new child loads the target; only once
it is accepting does the old one get SIGTERM (it drains its in-flight requests within the
grace period and exits). So there is no moment without a process accepting, and a client
that reconnects (or sends its next POST on a new connection) meets the new version without
a connection error. A target that fails to import is reported in one line and the previous
version keeps serving (or, at first start, the socket waits) until the next change.

Watching: ``watchfiles`` (the ``dev`` extra) runs on trio through anyio (checked: its
``awatch`` yields changes and stops on cancellation under ``trio.run``); without it, a
polling watcher (``POLL_INTERVAL``) compares modification times of the ``*.py`` files.

Each child prints what its server declares after it loaded (tools, prompts, resources) and
the URL, to stderr.

Sessions: without ``--store`` the supervisor holds a ``MemoryStore`` for its whole life and
serves it to each child over a Unix socket (``runtime.stores.UnixStore``, a shared store),
so a handshake-era HTTP session opened on one version is served on by the next (no 404, no
new ``initialize``); ``--store memory://`` gives each version its own (a reload ends its
sessions), ``--store redis://...`` a Redis.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["READY", "roots_of", "run_dev", "say", "summary", "watcher"]

#: Seconds between scans of the polling watcher (without watchfiles).
POLL_INTERVAL: Final = 0.5
#: Seconds a new child may take to import the target and start accepting.
START_TIMEOUT: Final = 30.0
#: Seconds an old child gets to drain after SIGTERM before it is killed.
STOP_TIMEOUT: Final = 10.0
#: What a child writes on its stdout once it accepts (runtime/_dev_child.py).
READY: Final = b"mcp-runtime-dev-ready\n"


def say(message: str) -> None:
    print(f"mcp-runtime dev: {message}", file=sys.stderr, flush=True)


def summary(server: Server) -> str:
    """One line of what ``server`` declares."""
    reg = server.registry

    def part(label: str, names: list[str]) -> str:
        if not names:
            return f"0 {label}"
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        return f"{len(names)} {label} ({shown})"

    return "; ".join(
        [
            f"{server.name} {server.version}",
            part("tools", list(reg.tools)),
            part("prompts", list(reg.prompts)),
            part("resources", list(reg.resources)),
            part("templates", list(reg.templates)),
        ]
    )


# -- watching --------------------------------------------------------------------------------


def _snapshot(roots: list[Path]) -> dict[str, float]:
    found: dict[str, float] = {}
    for root in roots:
        files = [root] if root.is_file() else root.rglob("*.py")
        for path in files:
            if any(part.startswith(".") or part == "__pycache__" for part in path.parts):
                continue
            try:
                found[str(path)] = path.stat().st_mtime
            except OSError:
                continue
    return found


async def _poll(roots: list[Path]) -> AsyncIterator[set[str]]:
    before = await trio.to_thread.run_sync(_snapshot, roots)
    while True:
        await trio.sleep(POLL_INTERVAL)
        now = await trio.to_thread.run_sync(_snapshot, roots)
        changed = {p for p in before.keys() | now.keys() if before.get(p) != now.get(p)}
        before = now
        if changed:
            yield changed


async def _watchfiles(roots: list[Path]) -> AsyncIterator[set[str]]:
    import watchfiles

    async for changes in watchfiles.awatch(
        *roots, watch_filter=watchfiles.PythonFilter(), debounce=200
    ):
        yield {path for _, path in changes}


def watcher(roots: list[Path], poll: bool) -> AsyncIterator[set[str]]:
    if not poll:
        try:
            import watchfiles  # noqa: F401
        except ImportError:
            say("watchfiles is not installed (pip install 'mcp-runtime[dev]'): polling")
        else:
            return _watchfiles(roots)
    return _poll(roots)


def roots_of(target: str, watch: list[str] | None) -> list[Path]:
    """What to watch: ``watch``, else the target file's directory (a module: the cwd)."""
    if watch:
        return [Path(p) for p in watch]
    spec = target.partition(":")[0]
    if spec.endswith(".py") or "/" in spec:
        return [Path(spec).resolve().parent]
    return [Path.cwd()]


# -- the supervisor --------------------------------------------------------------------------


class _Child:
    def __init__(self, process: trio.Process) -> None:
        self.process = process

    async def stop(self) -> None:
        process = self.process
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            with trio.move_on_after(STOP_TIMEOUT):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


async def _start_child(argv: list[str], fd: int, env: dict[str, str] | None) -> _Child | None:
    """A new child, once it accepts; None when it failed (it said why on stderr)."""
    process = await trio.lowlevel.open_process(
        argv, pass_fds=(fd,), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env
    )
    assert process.stdout is not None
    ready = b""
    with trio.move_on_after(START_TIMEOUT):
        while not ready.endswith(b"\n"):
            data = await process.stdout.receive_some(64)
            if not data:
                break
            ready += data
    if ready == READY:
        return _Child(process)
    child = _Child(process)
    await child.stop()
    return None


async def run_dev(
    target: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    watch: list[str] | None = None,
    poll: bool = False,
    log_level: str = "info",
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``target`` over HTTP with reload, until cancelled or SIGINT/SIGTERM (then the
    current child drains and exits first). Over stdio: ``runtime._dev_stdio``."""
    async with trio.open_nursery() as nursery:

        async def stop_on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

        nursery.start_soon(stop_on_signal)
        env: dict[str, str] | None = None
        folder: str | None = None
        if not os.environ.get("MCP_RUNTIME_STORE"):
            # No --store: this process holds the sessions (a memory store served to each
            # version over a Unix socket in a private directory), so they outlive reloads.
            from .stores import MemoryStore, serve_store

            folder = tempfile.mkdtemp(prefix="mcp-runtime-dev-")
            socket_path = os.path.join(folder, "store.sock")
            await nursery.start(serve_store, MemoryStore(), socket_path)
            env = {**os.environ, "MCP_RUNTIME_STORE": f"unix://{socket_path}"}
        try:
            await _supervise(target, host, port, path, watch, poll, log_level, env, task_status)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        nursery.cancel_scope.cancel()


async def _supervise(
    target: str,
    host: str,
    port: int,
    path: str,
    watch: list[str] | None,
    poll: bool,
    log_level: str,
    env: dict[str, str] | None,
    task_status: trio.TaskStatus[tuple[str, int]],
) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    bound = sock.getsockname()
    roots = roots_of(target, watch)
    argv = [
        sys.executable,
        "-m",
        "runtime._dev_child",
        target,
        str(sock.fileno()),
        host,
        path,
        log_level,
    ]
    shown_host = f"[{host}]" if ":" in host else host
    say(
        f"serving http://{shown_host}:{bound[1]}{path} (reloads on changes under "
        f"{', '.join(str(r) for r in roots)}; Ctrl+C stops)"
    )
    say(
        "stdio clients: point them at this URL over HTTP; a stdio session cannot survive a "
        f"restart, so over stdio use `mcp-runtime serve {target}` without reload"
    )
    current: _Child | None = None
    try:
        current = await _start_child(argv, sock.fileno(), env)
        if current is None:
            say("the target failed to load (above); waiting for a change")
        task_status.started((bound[0], bound[1]))
        async for changed in watcher(roots, poll):
            say(f"change in {', '.join(sorted(Path(p).name for p in changed))}: reloading")
            fresh = await _start_child(argv, sock.fileno(), env)
            if fresh is None:
                say(
                    "reload failed (above); "
                    + ("the previous version keeps serving" if current else "waiting for a fix")
                )
                continue
            old, current = current, fresh
            if old is not None:
                await old.stop()  # it stops accepting at once, then drains
            say("reloaded: every new connection gets the new version")
    finally:
        with trio.CancelScope(shield=True):
            if current is not None:
                await current.stop()
        sock.close()
