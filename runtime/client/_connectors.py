"""Connectors: how a link to the server is opened, once or again after a loss.

Each connector's ``open()`` is an async context manager yielding a :class:`Link`;
``reconnects`` says whether the client may open it again after the link broke: yes for TCP,
Unix sockets, WebSocket and named pipes (the server is still there, listening), no for a
spawned stdio server (re-spawning a process behind the caller's back would hide a crash;
``open_client(..., respawn=True)`` asks for it explicitly).

Process hygiene for stdio: the server runs in its own process group
(``start_new_session``); closing the link closes its stdin, waits ``close_grace`` seconds for
it to exit, then sends SIGTERM to the whole group, waits again, and finally SIGKILLs the
group. On Linux the server is started under the reaper (``runtime.client._reaper``), a small
process that is a child subreaper: a descendant that left the group (``setsid()``) is still
below it, and it ends the whole tree on SIGTERM or when the client lets go, so no process the
server started survives the client; elsewhere the group is what is ended. Its stderr goes
line by line to the ``mcp_runtime.client.server`` logger.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Final, Protocol

import trio

from ..framing import loggable
from ..transports import open_fifo_pair, pipe_client_lock, pipe_paths
from ._errors import TransportLost
from ._link import FramedLink, Link, make_framer, single_errors
from ._unreached import connect_failure

__all__ = [
    "Connector",
    "PipeConnector",
    "SocketConnector",
    "StdioConnector",
]

log = logging.getLogger("mcp_runtime.client")
server_log = logging.getLogger("mcp_runtime.client.server")

#: Stderr lines of a stdio server kept to explain its early exit.
_STDERR_TAIL: Final = 5
#: Longest stderr line forwarded to the log as one record (longer lines are split).
_STDERR_LINE: Final = 8192

#: The reaper script (see its module), run by this interpreter: Linux only (a child
#: subreaper is a Linux feature), and not from a frozen application, whose executable is not
#: a Python interpreter that can run a script.
_REAPER: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_reaper.py")
REAPER_AVAILABLE: Final = (
    sys.platform.startswith("linux")
    and bool(sys.executable)
    and not getattr(sys, "frozen", False)
    and os.path.isfile(_REAPER)
)

#: How long the reaper may take to say whether the server started (an interpreter's start
#: and one posix_spawn: tens of milliseconds; the bound is for a machine under heavy load).
_REAPER_REPORT: Final = 30.0


class Connector(Protocol):
    """How the client reaches one server: each ``open()`` a new link.

    ``open()`` is an async context manager: entering it connects (or spawns the server) and
    yields a :class:`Link` ready to send on; leaving it closes the link and releases
    everything the connection held (a stdio server is stopped, its process group and, on
    Linux, its whole process tree ended), also when left by cancellation or an error. It
    raises :class:`TransportLost` when no link can be made, with ``refused`` True when
    nothing is there to answer (a port nothing listens on, a host that does not resolve, a
    404 at the endpoint: trying again in a moment cannot help), and a loss inside the
    context may be raised again with more said (a stdio server's exit status and its last
    stderr lines). It may be opened again after a loss, one link at a time.

    ``reconnects``: whether the client may open it again by itself after a loss (the
    reconnection policy, ``LinkKeeper``): yes where the server is still there to reach (a
    socket, a URL), no for a spawned stdio server unless ``respawn`` was asked. An HTTP
    connector says no: its link retries each request itself. ``description`` names the
    server in logs and errors, with no secret in it (a URL loses its userinfo and query
    values).
    """

    reconnects: bool
    description: str

    def open(self) -> contextlib.AbstractAsyncContextManager[Link]: ...


class StdioConnector:
    """Spawn ``command`` with its stdin/stdout as the link (own process group; on Linux,
    under the reaper unless ``reaper=False``: see the module docstring).

    ``open`` spawns, and under the reaper waits (at most ``_REAPER_REPORT`` seconds) for its
    word that the command runs: a command that cannot start is :class:`TransportLost`
    naming it, as a failed spawn is. Leaving ``open``, whatever ended it, stops the server
    (``_stop_process``: EOF, then SIGTERM, then SIGKILL, ``close_grace`` apart; shielded),
    so no server outlives its link. A loss inside ``open`` is raised again with the exit
    status and the last ``_STDERR_TAIL`` stderr lines of a server that ended. Each ``open``
    is a new process: ``reconnects`` only with ``respawn``.
    """

    reconnects = False

    def __init__(
        self,
        command: Sequence[str],
        *,
        framing: str = "ndjson",
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        close_grace: float = 2.0,
        max_frame_size: int = 4 * 1024 * 1024,
        read_timeout: float | None = 10.0,
        respawn: bool = False,
        restart_after_probe: bool = True,
        reaper: bool = True,
    ) -> None:
        if not command:
            raise ValueError("an empty server command")
        #: ``era="auto"`` may start the server once more for the handshake when it exits in
        #: answer to the ``server/discover`` probe, as a server that predates 2026-07-28 may
        #: (see ``Client._start``). False for a server file, which ``mcp-runtime serve``
        #: serves: it answers the probe, so an exit there is a failure to report, and a
        #: second start would only fail again and repeat why.
        self.restart_after_probe = restart_after_probe
        #: Start the server again after it exited or broke (only when asked: a respawn
        #: loses the server's state, and hides a crash unless the caller expects it).
        self.reconnects = respawn
        self.command = list(command)
        self.framing = framing
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.close_grace = close_grace
        self.max_frame_size = max_frame_size
        self.read_timeout = read_timeout
        #: Whether the server runs under the reaper (where it can: ``REAPER_AVAILABLE``).
        self.reaper = reaper and REAPER_AVAILABLE
        self.description = " ".join(self.command)
        #: The process of the last ``open()``: the reaper where it runs, else the server
        #: (tests check its group after close).
        self.process: trio.Process | None = None
        #: Its last stderr lines: a server that dies at start-up says why in them.
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)

    async def _explain(self, error: TransportLost, process: trio.Process) -> TransportLost:
        """``error`` with the exit status and the last stderr lines of a server that ended
        (given a moment to exit: its stdout closes just before it does)."""
        with trio.move_on_after(0.5):
            await process.wait()
        await trio.sleep(0.05)  # let the stderr forwarder take in its last lines
        if process.returncode is None:
            return error
        tail = " | ".join(self.stderr_tail)
        detail = f"{error} (exit status {process.returncode}" + (
            f"; stderr: {tail})" if tail else ")"
        )
        return TransportLost(
            detail,
            attempts=error.attempts,
            exit_status=process.returncode,
            stderr=tuple(self.stderr_tail),
        )

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Link]:
        framer = make_framer(self.framing, self.max_frame_size)
        self.stderr_tail.clear()  # a new process: the tail explains this one only
        argv, control, theirs = self.command, None, None
        if self.reaper:
            control, theirs = socket.socketpair()
            argv = [
                sys.executable,
                "-I",  # isolated: no user site, no PYTHON* variables, no script dir
                "-S",  # no site: the reaper needs the standard library only
                _REAPER,
                str(theirs.fileno()),
                repr(self.close_grace),
                *self.command,
            ]
        try:
            process = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # its own process group: we can signal all of it
                pass_fds=(theirs.fileno(),) if theirs is not None else (),
            )
        except OSError as exc:
            if control is not None:
                control.close()
            raise TransportLost(f"cannot start {self.description!r}: {exc}") from None
        finally:
            if theirs is not None:
                theirs.close()  # the reaper's end: its EOF must mean the reaper is gone
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        link = FramedLink(
            process.stdout,
            process.stdin,
            framer,
            read_timeout=self.read_timeout,
            name=f"stdio pid={process.pid}",
        )
        try:
            async with single_errors(), trio.open_nursery() as nursery:
                nursery.start_soon(_forward_stderr, process.stderr, process.pid, self.stderr_tail)
                try:
                    if control is not None:
                        await self._started(control)
                    yield link
                except TransportLost as exc:
                    raise await self._explain(exc, process) from None
                finally:
                    with trio.CancelScope(shield=True):
                        await _stop_process(process, link, self.close_grace, control)
                    # stderr ends when the group is gone; don't wait on a stray holder of it.
                    nursery.cancel_scope.cancel()
        finally:
            if control is not None:
                control.close()
            with trio.CancelScope(shield=True), contextlib.suppress(OSError):
                await process.stderr.aclose()

    async def _started(self, control: socket.socket) -> None:
        """Wait for the reaper's line: ``ok``, or why the command could not start (raised as
        :class:`TransportLost`, as a failed spawn without the reaper is; ``open`` then stops
        the reaper as it stops any server)."""
        sock = trio.socket.from_stdlib_socket(control)
        report = b""
        with trio.move_on_after(_REAPER_REPORT):
            while not report.endswith(b"\n"):
                data = await sock.recv(4096)
                if not data:
                    break
                report += data
        line = report.decode("utf-8", "replace").strip()
        if line == "ok":
            return
        reason = (
            line[len("error ") :] if line.startswith("error ") else "the reaper did not start it"
        )
        raise TransportLost(f"cannot start {self.description!r}: {reason}")


async def _forward_stderr(
    stream: trio.abc.ReceiveStream, pid: int, tail: collections.deque[str]
) -> None:
    buffer = bytearray()
    try:
        while True:
            data = await stream.receive_some(65536)
            if not data:
                break
            buffer += data
            while True:
                cut = buffer.find(b"\n")
                if cut < 0 and len(buffer) < _STDERR_LINE:
                    break
                end = cut if 0 <= cut < _STDERR_LINE else _STDERR_LINE
                line = bytes(buffer[:end]).decode("utf-8", "replace").rstrip("\r")
                del buffer[: end + 1 if end == cut else end]
                server_log.info("pid=%d %s", pid, loggable(line))
                tail.append(line)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    if buffer:
        line = bytes(buffer).decode("utf-8", "replace")
        server_log.info("pid=%d %s", pid, loggable(line))
        tail.append(line)


def _signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to process group ``pgid``; False when the group no longer exists."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a reused id owned by someone else
        return False
    return True


async def _group_gone(pgid: int, timeout: float) -> bool:
    # Polling: a process group has no handle to wait on once its leader is reaped.
    with trio.move_on_after(timeout):
        while _signal_group(pgid, 0):  # noqa: ASYNC110
            await trio.sleep(0.02)
        return True
    return False


async def _stop_process(
    process: trio.Process, link: FramedLink, grace: float, control: socket.socket | None = None
) -> None:
    """Close stdin, wait ``grace``; SIGTERM the group, wait ``grace``; SIGKILL the group.

    Under the reaper, ``process`` is the reaper: it exits once the server's whole tree is
    gone, and ends that tree itself when SIGTERM reaches it (within ``grace``), so the
    group's SIGKILL is only a backstop should it not; ``control`` (the reaper's socket) is
    closed with stdin: the client has let go."""
    pgid = process.pid  # start_new_session: the leader's pid is the group id
    await link.aclose()  # closes its stdin: a well-behaved server exits on EOF
    if control is not None:
        control.close()
    with trio.move_on_after(grace):
        await process.wait()
    if process.returncode is None:
        log.info("server pid=%d did not exit on EOF within %gs: SIGTERM", process.pid, grace)
    # Terminate the group even when the leader exited: its children may still be running.
    if _signal_group(pgid, signal.SIGTERM):
        with trio.move_on_after(grace):
            await process.wait()
        if not await _group_gone(pgid, grace if process.returncode is None else 0.5):
            log.warning("server group pgid=%d survived SIGTERM: SIGKILL", pgid)
            _signal_group(pgid, signal.SIGKILL)
            # SIGKILL cannot be refused; wait a moment for the kernel to finish the group
            # (reparented children linger as zombies until their new parent reaps them).
            await _group_gone(pgid, grace)
    await process.wait()


class SocketConnector:
    """TCP (``tcp://host:port``) or Unix socket (``unix:PATH``), framed.

    ``open`` connects within ``connect_timeout`` (:class:`TransportLost` otherwise,
    ``refused`` when nothing listens or the host does not resolve) and frames the stream as
    :class:`FramedLink` does, with ``max_frame_size`` and ``read_timeout``. ``reconnects``:
    the server is still listening after a lost connection.
    """

    reconnects = True

    def __init__(
        self,
        *,
        host: str | None = None,
        port: int | None = None,
        path: str | None = None,
        framing: str = "ndjson",
        max_frame_size: int = 4 * 1024 * 1024,
        read_timeout: float | None = 10.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.host, self.port, self.path = host, port, path
        self.framing = framing
        self.max_frame_size = max_frame_size
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.description = f"unix:{path}" if path is not None else f"tcp://{host}:{port}"

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Link]:
        try:
            with trio.fail_after(self.connect_timeout):
                if self.path is not None:
                    stream: trio.SocketStream = await trio.open_unix_socket(self.path)
                else:
                    assert self.host is not None and self.port is not None
                    stream = await trio.open_tcp_stream(self.host, self.port)
        except (OSError, trio.TooSlowError) as exc:
            reason, refused = connect_failure(exc, self.connect_timeout)
            raise TransportLost(
                f"cannot connect to {self.description}: {reason}", refused=refused
            ) from None
        link = FramedLink(
            stream,
            stream,
            make_framer(self.framing, self.max_frame_size),
            read_timeout=self.read_timeout,
            name=self.description,
        )
        try:
            yield link
        finally:
            await link.aclose()


class PipeConnector:
    """A named pipe pair (two FIFOs in ``directory``, made by ``mcp-runtime serve --transport
    pipe --pipe-dir DIR``). POSIX FIFOs only: Windows named pipes are not covered.

    Both FIFOs are opened together in blocking mode (``runtime.transports.open_fifo_pair``):
    each open returns once the server holds the other end, so "not there yet" is never EOF.
    """

    reconnects = True

    def __init__(
        self,
        directory: str,
        *,
        framing: str = "ndjson",
        max_frame_size: int = 4 * 1024 * 1024,
        read_timeout: float | None = 10.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.directory = directory
        self.framing = framing
        self.max_frame_size = max_frame_size
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.description = f"pipe:{directory}"

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Link]:
        to_server, from_server = pipe_paths(self.directory)
        for path in (to_server, from_server):
            if not os.path.exists(path):  # noqa: ASYNC240 - a stat of a local path
                raise TransportLost(
                    f"cannot connect to {self.description}: no FIFO {path}", refused=True
                )
        async with contextlib.AsyncExitStack() as stack:
            try:
                with trio.fail_after(self.connect_timeout):
                    # One client per pair at a time (see runtime.transports._pipe).
                    await stack.enter_async_context(pipe_client_lock(self.directory))
                    read_fd, write_fd = await open_fifo_pair(from_server, to_server)
            except (OSError, trio.TooSlowError) as exc:
                reason, _refused = connect_failure(exc, self.connect_timeout)
                raise TransportLost(f"cannot connect to {self.description}: {reason}") from None
            link = FramedLink(
                trio.lowlevel.FdStream(read_fd),
                trio.lowlevel.FdStream(write_fd),
                make_framer(self.framing, self.max_frame_size),
                read_timeout=self.read_timeout,
                name=self.description,
            )
            try:
                yield link
            finally:
                await link.aclose()
