"""The reaper: a small process between the client and a stdio server it spawns (Linux).

Why a process of its own. A descendant of the server that calls ``setsid()`` (a daemon, a
double fork, ``setsid cmd &`` in a shell script) leaves the server's process group, so
signalling the group cannot reach it, and once its parent exits it is reparented to init,
out of the client's reach. Linux's child subreaper (prctl(2) ``PR_SET_CHILD_SUBREAPER``,
since 3.4) reparents orphaned descendants to the nearest subreaper ancestor instead of init.
Setting it on the user's own process would change that program for all its children (it
would inherit, and have to reap, the orphans of every descendant, not only the server's), so
this process sets it on itself and is the server's parent:

- it spawns COMMAND with its stdin, stdout, stderr, environment and working directory, then
  lets go of stdin and stdout (the pipes are the server's alone, so EOF reaches each side as
  it would without us);
- every process of the server's tree, whatever session or group it moves to, stays its
  descendant; it exits once the whole tree is gone, with the server's exit status (a server
  killed by a signal: it kills itself with the same signal);
- SIGTERM (or SIGINT, SIGHUP) ends the whole tree: SIGTERM to every descendant, GRACE
  seconds for them to exit, then SIGKILL to every one that remains, until none does;
- FD is its end of a socket pair whose other end the client holds: it writes there one line,
  ``ok`` once COMMAND runs or ``error <reason>`` when it could not start; EOF on it (the
  client closed it, or the client's process died) ends the tree the same way GRACE seconds
  later, unless it ended by itself by then.

Run as a script by path, ``python -I -S _reaper.py FD GRACE COMMAND...``: standard library
only (no ``site``, nothing of ours), so it starts in about the time of a bare interpreter; the
client starts it (``runtime.client._connectors``). It runs before every stdio server, so
what it imports is chosen for start-up time (docs/client.md has the figures): no
``typing`` or ``collections.abc`` at run time, ``_signal`` rather than ``signal`` (whose
``enum`` import alone cost more than the rest of the script), and ``_ctypes`` rather than
``ctypes`` for its one foreign call (``ctypes`` imports much more; figures:
``benchmarks/README.md``, "The reaper's imports"), with ``ctypes`` as the fallback.

What it cannot reach: processes the server asks another service to start (``systemd-run``,
a container engine, a D-Bus activated service) are not its descendants.
"""

from __future__ import annotations

import os
import select
import sys
import time

#: ``typing`` and ``collections.abc`` are imports of their own, for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
    from typing import Any, NoReturn
else:
    import _signal as signal  # the C module under ``signal``, without its enum types

#: prctl(2) option number (linux/prctl.h), not exposed by the standard library.
PR_SET_CHILD_SUBREAPER = 36

#: Signals that end the tree (SIGTERM is what the client sends; the others mean the same).
_ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

#: Between two SIGKILL rounds: descendants forked just before a round are reparented to us
#: once their parent dies, and killed by the next one.
_KILL_ROUND = 0.05


def _libc_prctl() -> tuple[Callable[..., int], Callable[[], int]]:
    """prctl(2) from the C library, and the errno it leaves: through ``_ctypes``, the C
    module under ``ctypes``, whose function-pointer and integer types are those ``ctypes``
    defines in Python (``CDLL(None, use_errno=True).prctl``, ``c_int``); through ``ctypes``
    itself should this interpreter's ``_ctypes`` differ."""
    try:
        import _ctypes

        ffi: Any = _ctypes  # typeshed describes it as ctypes uses it, not as used here

        class CInt(ffi._SimpleCData):  # type: ignore[misc]
            _type_ = "i"

        class Function(ffi.CFuncPtr):  # type: ignore[misc]
            _flags_ = ffi.FUNCFLAG_CDECL | ffi.FUNCFLAG_USE_ERRNO
            _restype_ = CInt

        class Libc:
            _handle = ffi.dlopen(None, os.RTLD_NOW)

        return Function(("prctl", Libc())), ffi.get_errno
    except (ImportError, AttributeError, TypeError, OSError):
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl, ctypes.get_errno


def _become_subreaper() -> None:
    prctl, get_errno = _libc_prctl()
    if prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        errno = get_errno()
        raise OSError(errno, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(errno)}")


def _descendants(root: int) -> list[int]:
    """Every process below ``root``, from one scan of /proc (their parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                # The command name, in parentheses, may hold spaces and parentheses.
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _signal_tree(signum: int) -> None:
    for pid in _descendants(os.getpid()):
        try:  # noqa: SIM105 - not contextlib: one import less at every spawn
            os.kill(pid, signum)
        except OSError:
            pass  # exited meanwhile


def _say(fd: int, line: str) -> None:
    try:  # noqa: SIM105 - not contextlib: one import less at every spawn
        os.write(fd, line.encode("utf-8", "replace")[:4000] + b"\n")
    except OSError:
        pass  # the client is gone: EOF on the socket will tell the loop


def _exit_like(status: int | None) -> NoReturn:
    """Exit as the server did: its exit code, or killed by the same signal."""
    if status is not None and os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the server's core, not ours
            signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP keep their default action anyway
        os.kill(os.getpid(), signum)
        time.sleep(1)  # pragma: no cover - delivered before this returns
    os._exit(os.waitstatus_to_exitcode(status) if status is not None else 0)


def main(argv: list[str]) -> NoReturn:
    if len(argv) < 4:
        print("usage: _reaper.py FD GRACE COMMAND...", file=sys.stderr)
        os._exit(2)
    fd, grace, command = int(argv[1]), float(argv[2]), argv[3:]
    os.set_inheritable(fd, False)  # the server's tree must not hold the client's socket

    # Signals are read from a pipe (their numbers, written by the interpreter's C handler),
    # so the loop below waits on one poll for signals, the client's socket and deadlines.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for signum in (signal.SIGCHLD, *_ENDING):
        signal.signal(signum, lambda *_: None)

    try:
        _become_subreaper()
    except OSError as exc:  # the server still runs, reachable through its group only
        print(f"mcp-runtime reaper: {exc}", file=sys.stderr, flush=True)
    try:
        # posix_spawn reports a failed exec here, as subprocess does. Python ignores SIGPIPE
        # and SIGXFSZ; the server gets their default action, as subprocess gives it.
        server = os.posix_spawnp(
            command[0],
            command,
            os.environ,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except OSError as exc:
        _say(fd, f"error {exc}")
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    _say(fd, "ok")

    poller = select.poll()
    poller.register(wake_r, select.POLLIN)
    poller.register(fd, select.POLLIN)
    status: int | None = None
    end_at: float | None = None  # when to start ending the tree (the client let go)
    kill_at: float | None = None  # when to SIGKILL what remains (ending started)

    def end(now: float) -> float:
        _signal_tree(signal.SIGTERM)
        return now + grace

    while True:
        while True:  # reap: the server, and every orphan of its tree reparented to us
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                _exit_like(status)  # nothing left below us: the whole tree is gone
            if pid == 0:
                break
            if pid == server:
                status = wait_status
        now = time.monotonic()
        if kill_at is None and end_at is not None and now >= end_at:
            kill_at = end(now)
        if kill_at is not None and now >= kill_at:
            _signal_tree(signal.SIGKILL)
            kill_at = now + _KILL_ROUND
        deadline = kill_at if kill_at is not None else end_at
        timeout = None if deadline is None else max(0, int((deadline - now) * 1000) + 1)
        for ready, _ in poller.poll(timeout):
            if ready == wake_r:
                try:
                    signums = os.read(wake_r, 512)
                except BlockingIOError:
                    signums = b""
                if kill_at is None and any(s in signums for s in _ENDING):
                    kill_at = end(time.monotonic())
            elif ready == fd:
                try:
                    data = os.read(fd, 512)
                except OSError:
                    data = b""
                if not data:  # the client let go: the tree gets GRACE seconds to end
                    poller.unregister(fd)
                    if end_at is None:
                        end_at = time.monotonic() + grace


if __name__ == "__main__":
    main(sys.argv)
