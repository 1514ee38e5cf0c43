"""``mcp-runtime serve --workers N``: N worker processes accepting on one listening socket
(HTTP, legacy SSE, WebSocket, TCP or a Unix socket).

The supervisor (this module, no trio: it only waits on children and signals) binds the
socket, starts each worker as ``python -m runtime serve ...`` with the socket's file
descriptor inherited (``MCP_RUNTIME_LISTEN_FD``), and the kernel hands each new connection
to one of the workers blocked in ``accept``. A worker that exits on its own is restarted
(after a backoff that grows while it keeps crashing at start-up). SIGTERM or SIGINT is
forwarded to every worker, which drains as one process would (``Limits.shutdown_grace``);
a worker still running ``grace + KILL_AFTER`` seconds later is killed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

__all__ = ["KILL_AFTER", "bind_socket", "bind_unix_socket", "supervise", "worker_argv"]

log = logging.getLogger("mcp_runtime.workers")

#: Seconds past the shutdown grace before a worker that has not exited is killed.
KILL_AFTER = 5.0
#: A worker that dies sooner than this after starting counts as crashing at start-up.
STARTUP_CRASH = 2.0
#: The longest wait before restarting a worker that keeps crashing.
MAX_RESTART_DELAY = 10.0


def bind_socket(host: str, port: int) -> socket.socket:
    """The shared listening socket (inheritable, so workers accept on it)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    sock.bind(address)
    sock.listen(socket.SOMAXCONN)
    sock.set_inheritable(True)
    return sock


def bind_unix_socket(path: str) -> socket.socket:
    """The shared listening Unix socket at ``path`` (inheritable; the supervisor removes it
    on exit). A stale socket file there is replaced; anything else there is refused
    (FileExistsError), so a typo never deletes a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(mode):
            raise FileExistsError(errno.EEXIST, f"{path} exists and is not a socket")
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        sock.listen(socket.SOMAXCONN)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def worker_argv(argv: Sequence[str]) -> list[str]:
    """The worker's command line: the supervisor's, without ``--workers``."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--workers":
            skip = True
            continue
        if arg.startswith("--workers="):
            continue
        out.append(arg)
    return [sys.executable, "-m", "runtime", *out]


def supervise(argv: Sequence[str], workers: int, sock: socket.socket, grace: float) -> int:
    """Run ``workers`` workers on ``sock`` until SIGTERM/SIGINT; returns the exit status."""
    env = {**os.environ, "MCP_RUNTIME_LISTEN_FD": str(sock.fileno()), "MCP_RUNTIME_WORKERS": "1"}
    command = worker_argv(argv)
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if not stopping:
            log.info("supervisor: %s, stopping workers", signal.Signals(signum).name)
        stopping.append(signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    slots: list[subprocess.Popen[bytes] | None] = [None] * workers
    started = [0.0] * workers
    delay = [0.0] * workers
    next_start = [0.0] * workers

    def start(i: int) -> None:
        slots[i] = subprocess.Popen(command, env=env, pass_fds=(sock.fileno(),))
        started[i] = time.monotonic()
        log.info("supervisor: worker %d started pid=%d", i, slots[i].pid)  # type: ignore[union-attr]

    try:
        for i in range(workers):
            start(i)
        while not stopping:
            time.sleep(0.05)
            now = time.monotonic()
            for i, proc in enumerate(slots):
                if proc is None:
                    if now >= next_start[i] and not stopping:
                        start(i)
                    continue
                code = proc.poll()
                if code is None:
                    continue
                slots[i] = None
                lived = now - started[i]
                delay[i] = (
                    min(MAX_RESTART_DELAY, max(0.1, delay[i] * 2)) if lived < STARTUP_CRASH else 0
                )
                next_start[i] = now + delay[i]
                log.warning(
                    "supervisor: worker %d pid=%d exited code=%s after %.1fs; restarting in %.1fs",
                    i,
                    proc.pid,
                    code,
                    lived,
                    delay[i],
                )
        # Forward the signal; each worker drains like a single process.
        for proc in slots:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace + KILL_AFTER
        for proc in slots:
            if proc is None:
                continue
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("supervisor: worker pid=%d still running, killing it", proc.pid)
                proc.kill()
                proc.wait()
        log.info("supervisor: all workers stopped")
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        unix_path = sock.getsockname() if sock.family == socket.AF_UNIX else None
        sock.close()
        if isinstance(unix_path, str) and unix_path:
            with contextlib.suppress(OSError):
                os.unlink(unix_path)
