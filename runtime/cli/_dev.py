"""``mcp-runtime dev TARGET``: serve over HTTP and reload on file changes.

The supervisor (this process) binds the listening socket once and keeps it for its whole
life; each version of the server runs in a child process that accepts on that inherited
socket (``serve_http(sockets=...)``). On a change, a new child loads the target; only once
it is accepting does the old one get SIGTERM (it drains its in-flight requests within the
grace period and exits). So there is no moment without a process accepting, and a client
that reconnects (or sends its next POST on a new connection) meets the new version without
a connection error. A target that fails to import is reported in one line and the previous
version keeps serving until the next change.

Failures: a version that exits on its own (a crash, ``os._exit``, the OOM killer) is
reported in one line with its exit status; until the next change the supervisor answers
every connection itself with 503 and a JSON-RPC error naming the crash
(``runtime.cli._dev_down``), as it does when no version loaded at all. A change while a version
is still loading stops that load at once (it may hang at import) and starts another. Each
version runs in its own process group, which is ended whole when the version is replaced,
crashes or fails to load, and when the supervisor exits (SIGINT, SIGTERM): no process of
ours keeps the port. A version also watches its supervisor from its first instruction
(``runtime.cli._dev_child``), so one whose supervisor was killed (SIGKILL) exits too.

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

import contextlib
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

from ._dev_down import serve_down

if TYPE_CHECKING:
    from .. import Server

__all__ = [
    "READY",
    "START_TIMEOUT",
    "STOP_TIMEOUT",
    "bind_listener",
    "exit_status",
    "roots_of",
    "run_dev",
    "say",
    "signal_group",
    "summary",
    "watcher",
]

#: Seconds between scans of the polling watcher (without watchfiles).
POLL_INTERVAL: Final = 0.5
#: Seconds a new child may take to import the target and start accepting; past it, it is
#: stopped and reported (a change stops it sooner).
START_TIMEOUT: Final = 30.0
#: Seconds an old child gets to drain after SIGTERM before it is killed.
STOP_TIMEOUT: Final = 10.0
#: What a child writes on its stdout once it accepts (runtime/cli/_dev_child.py).
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


def bind_listener(host: str, port: int) -> socket.socket:
    """The listening socket every version accepts on (inheritable). OSError as ``bind``
    raises it (the CLI turns it into serve's one line)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def exit_status(returncode: int) -> str:
    """How a child ended, in words: ``exit status 1``, ``killed by SIGKILL``."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def signal_group(process: trio.Process, signum: int = signal.SIGKILL) -> None:
    """Send ``signum`` to ``process``'s process group (it was started with
    ``process_group=0``): what it started and left behind gets it too."""
    # Nothing left in the group: nothing to do (its id is not reused while one member is).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


class _Child:
    """One version of the server: a process leading its own process group."""

    def __init__(self, process: trio.Process, children: set[_Child]) -> None:
        self.process = process
        #: Set once we end it: its exit is then not a crash.
        self.stopping = False
        self.children = children
        children.add(self)

    async def stop(self) -> None:
        """SIGTERM to the group (the server drains), the grace, then SIGKILL to what is
        left. Not cancellable: a child is never left behind."""
        self.stopping = True
        process = self.process
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                signal_group(process, signal.SIGTERM)
                with trio.move_on_after(STOP_TIMEOUT):
                    await process.wait()
            signal_group(process)
            await process.wait()
        self.children.discard(self)

    async def kill(self) -> None:
        """SIGKILL to the group at once (a version that serves nothing yet)."""
        self.stopping = True
        with trio.CancelScope(shield=True):
            signal_group(self.process)
            await self.process.wait()
        self.children.discard(self)


async def _start_child(
    argv: list[str], fd: int, env: dict[str, str] | None, children: set[_Child]
) -> _Child | None:
    """A new child, once it accepts; None when it failed (it said why on stderr) or took
    longer than ``START_TIMEOUT``. Cancelled (a newer change, the supervisor's exit): the
    child is killed before the cancellation goes on. It is in ``children`` until it ends."""
    process = await trio.lowlevel.open_process(
        argv,
        pass_fds=(fd,),
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        process_group=0,
    )
    child = _Child(process, children)
    assert process.stdout is not None
    try:
        ready = b""
        with trio.move_on_after(START_TIMEOUT) as waited:
            while not ready.endswith(b"\n"):
                data = await process.stdout.receive_some(64)
                if not data:
                    break
                ready += data
        if ready == READY:
            return child
        if waited.cancelled_caught:
            say(f"the new version did not start accepting within {START_TIMEOUT:g} s: stopped")
        else:
            # It exited (after saying why): let it finish, then end what it left.
            with trio.move_on_after(STOP_TIMEOUT):
                await process.wait()
    except BaseException:
        await child.kill()
        raise
    await child.kill()
    return None


async def run_dev(
    target: str,
    sock: socket.socket,
    *,
    path: str = "/mcp",
    watch: list[str] | None = None,
    poll: bool = False,
    log_level: str = "info",
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``target`` over HTTP on ``sock`` (``bind_listener``; closed on return) with
    reload, until cancelled or SIGINT/SIGTERM (then the current child drains and exits
    first). Over stdio: ``runtime.cli._dev_stdio``."""
    try:
        async with trio.open_nursery() as nursery:

            async def stop_on_signal() -> None:
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()

            nursery.start_soon(stop_on_signal)
            env: dict[str, str] | None = None
            folder: str | None = None
            if not os.environ.get("MCP_RUNTIME_STORE"):
                # No --store: this process holds the sessions (a memory store served to
                # each version over a Unix socket in a private directory), so they outlive
                # reloads.
                from ..stores import MemoryStore, serve_store

                folder = tempfile.mkdtemp(prefix="mcp-runtime-dev-")
                socket_path = os.path.join(folder, "store.sock")
                await nursery.start(serve_store, MemoryStore(), socket_path)
                env = {**os.environ, "MCP_RUNTIME_STORE": f"unix://{socket_path}"}
            try:
                supervisor = _Supervisor(target, sock, path, log_level, env, nursery)
                await supervisor.run(roots_of(target, watch), poll, task_status)
            finally:
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)
            nursery.cancel_scope.cancel()
    finally:
        sock.close()


class _Supervisor:
    """The versions of one ``dev`` run: the one serving (``current``), the one loading,
    and the 503 answerer while none serves."""

    def __init__(
        self,
        target: str,
        sock: socket.socket,
        path: str,
        log_level: str,
        env: dict[str, str] | None,
        nursery: trio.Nursery,
    ) -> None:
        host, port = sock.getsockname()[:2]
        self.target = target
        self.sock = sock
        self.env = env
        self.nursery = nursery
        self.argv = [
            sys.executable,
            "-m",
            "runtime.cli._dev_child",
            target,
            str(sock.fileno()),
            host,
            path,
            log_level,
        ]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"
        self.current: _Child | None = None
        #: Every version started and not yet ended.
        self.children: set[_Child] = set()
        #: Set when the supervisor is on its way out: nothing new may serve.
        self.closing = False
        #: The load in progress (a newer change cancels it).
        self.loading: trio.CancelScope | None = None
        #: The 503 answerer, while no version serves after a failure.
        self.down: trio.CancelScope | None = None

    async def run(
        self, roots: list[Path], poll: bool, task_status: trio.TaskStatus[tuple[str, int]]
    ) -> None:
        say(
            f"serving {self.url} (reloads on changes under "
            f"{', '.join(str(r) for r in roots)}; Ctrl+C stops)"
        )
        say(
            "stdio clients: have them start `mcp-runtime dev "
            f"{self.target} --transport stdio` instead (their session survives reloads too)"
        )
        try:
            self.nursery.start_soon(self.load, True)
            task_status.started(self.sock.getsockname()[:2])
            async for changed in watcher(roots, poll):
                say(f"change in {', '.join(sorted(Path(p).name for p in changed))}: reloading")
                if self.loading is not None:
                    self.loading.cancel()
                    say("the version still loading is stopped: loading the newer one")
                self.nursery.start_soon(self.load, False)
        finally:
            self.closing = True
            if self.loading is not None:
                self.loading.cancel()
            with trio.CancelScope(shield=True):
                for child in list(self.children):
                    # The serving one drains; any other (loading, or a crash's leftovers)
                    # serves nothing and is killed.
                    await (child.stop() if child is self.current else child.kill())

    async def load(self, first: bool) -> None:
        fresh: _Child | None = None
        with trio.CancelScope() as scope:
            self.loading = scope
            try:
                fresh = await _start_child(self.argv, self.sock.fileno(), self.env, self.children)
            finally:
                if self.loading is scope:
                    self.loading = None
        if scope.cancel_called or self.closing:
            # A newer change replaced this load, or the supervisor is exiting: the child
            # (killed already if the cancel reached it while it loaded) must not serve.
            if fresh is not None:
                await fresh.kill()
            return
        if fresh is None:
            if self.current is not None:
                say("reload failed (above); the previous version keeps serving")
                return
            say(
                f"the target failed to {'load' if first else 'reload'} (above): "
                "answering 503 until the next change"
            )
            self.go_down(f"mcp-runtime dev: {self.target} failed to load; fix it and save")
            return
        old, self.current = self.current, fresh
        if self.down is not None:
            self.down.cancel()  # the new version accepts now
            self.down = None
        self.nursery.start_soon(self.watch, fresh)
        if old is not None:
            # It stops accepting at once, then drains; once it is gone, what we say is true.
            # (A newer change meanwhile does not wait: this load is no longer ``loading``.)
            await old.stop()
        if not first:
            say("reloaded: every new connection gets the new version")

    async def watch(self, child: _Child) -> None:
        """Report ``child``'s exit when it was not ours to cause, and answer for it."""
        returncode = await child.process.wait()
        if child.stopping:
            return
        signal_group(child.process)  # what it started goes with it
        child.children.discard(child)
        if self.current is not child:
            return
        self.current = None
        status = exit_status(returncode)
        say(f"the server exited ({status}): answering 503 until the next change")
        self.go_down(f"mcp-runtime dev: the server exited ({status}); fix it and save")

    def go_down(self, message: str) -> None:
        if self.down is not None:
            self.down.cancel()
        scope = self.down = trio.CancelScope()

        async def answer() -> None:
            with scope:
                await serve_down(self.sock, message)

        self.nursery.start_soon(answer)
