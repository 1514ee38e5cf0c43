"""Named pipes: MCP over a pair of POSIX FIFOs (``mkfifo``) in one directory.

``DIR/to-server`` carries client-to-server messages and ``DIR/from-server`` the answers, each
framed like stdio (ndjson or content-length). A FIFO pair holds one conversation at a time:
the server serves one client until it closes its end (EOF), then waits for the next.
Windows named pipes (``\\\\.\\pipe\\...``) are a different mechanism and are not covered.

Telling clients apart: a FIFO has no connections, so a client arriving while the server still
holds the last one's ends would join that conversation. Two rules prevent it. The server
swaps fresh FIFOs in at both paths (``rename`` is atomic) as soon as a conversation's pair is
open, so the paths always name FIFOs no conversation uses yet. And clients take an exclusive
``flock`` on ``DIR/client.lock`` for the whole conversation (:func:`pipe_client_lock`), so two
of them never open the same pair at once.

Opening: each end is opened in blocking mode in a worker thread, both ends together, so an
``open`` returns only when the peer has the other end open. Non-blocking opens would let a
reader see "no writer yet" as EOF, and a writer fail with ENXIO before the reader arrives.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import trio

from ._framed import FramedChannel, FramingName, make_framer

__all__ = [
    "PIPE_FROM_SERVER",
    "PIPE_TO_SERVER",
    "open_fifo_pair",
    "pipe_client_lock",
    "pipe_paths",
    "serve_pipe",
]

log = logging.getLogger("mcp_runtime.pipe")

PIPE_TO_SERVER: Final = "to-server"
PIPE_FROM_SERVER: Final = "from-server"
PIPE_CLIENT_LOCK: Final = "client.lock"
#: How often a client waiting for the pair checks the lock again, seconds.
_LOCK_POLL: Final = 0.02


def pipe_paths(directory: str) -> tuple[str, str]:
    """(client-to-server FIFO, server-to-client FIFO) in ``directory``."""
    return os.path.join(directory, PIPE_TO_SERVER), os.path.join(directory, PIPE_FROM_SERVER)


async def open_fifo_pair(read_path: str, write_path: str) -> tuple[int, int]:
    """Open ``read_path`` for reading and ``write_path`` for writing; returns the two file
    descriptors once a peer holds the opposite ends. Cancellable: an abandoned blocking
    open is released by briefly opening its opposite end."""
    fds: dict[int, int] = {}
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_open_end, read_path, os.O_RDONLY, fds)
            nursery.start_soon(_open_end, write_path, os.O_WRONLY, fds)
    except BaseException:
        for fd in fds.values():
            os.close(fd)
        raise
    return fds[os.O_RDONLY], fds[os.O_WRONLY]


async def _open_end(path: str, flags: int, fds: dict[int, int]) -> None:
    try:
        fds[flags] = await trio.to_thread.run_sync(os.open, path, flags, abandon_on_cancel=True)
    except trio.Cancelled:
        _release(path, flags)
        raise


def _release(path: str, flags: int) -> None:
    # The abandoned thread still waits in open(): opening the opposite end non-blocking
    # lets it return (its descriptor is then closed by nobody: rare, on cancellation only).
    other = os.O_WRONLY if flags == os.O_RDONLY else os.O_RDONLY
    try:
        fd = os.open(path, other | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno not in (errno.ENXIO, errno.ENOENT):
            log.debug("could not release a blocked FIFO open path=%s: %s", path, exc)
        return
    os.close(fd)


@contextlib.asynccontextmanager
async def pipe_client_lock(directory: str) -> AsyncIterator[None]:
    """Hold the exclusive client lock of a pipe directory for the body (waits while another
    client holds it; cancellable)."""
    fd = os.open(os.path.join(directory, PIPE_CLIENT_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await trio.sleep(_LOCK_POLL)
        yield
    finally:
        os.close(fd)  # releases the lock


def _swap_in_fresh_fifo(path: str) -> None:
    """Replace the FIFO at ``path`` with a new one; the old one lives on for whoever holds it."""
    fresh = f"{path}.{os.getpid()}.new"
    os.mkfifo(fresh, 0o600)
    os.replace(fresh, path)


def _make_fifo(path: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        os.mkfifo(path, 0o600)
        return
    if not stat.S_ISFIFO(mode):
        raise FileExistsError(f"{path} exists and is not a FIFO")


async def serve_pipe(
    directory: str,
    handle: Callable[[FramedChannel], Awaitable[None]],
    *,
    framing: FramingName = "ndjson",
    max_frame_size: int = 4 * 1024 * 1024,
    read_timeout: float | None = None,
    idle_timeout: float | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve one client after another on the FIFO pair in ``directory`` (created, mode 0700,
    when missing; the FIFOs are made with mode 0600 and removed on exit). Runs until
    cancelled; reports ``directory`` through ``task_status`` once the FIFOs exist."""
    make_framer(framing, 1)  # reject a bad framing name up front
    os.makedirs(directory, mode=0o700, exist_ok=True)
    to_server, from_server = pipe_paths(directory)
    made = []
    try:
        for path in (to_server, from_server):
            existed = os.path.exists(path)  # noqa: ASYNC240 - a stat of a local path
            _make_fifo(path)
            if not existed:
                made.append(path)
        log.info("listening transport=pipe dir=%s", directory)
        task_status.started(directory)
        while True:
            read_fd, write_fd = await open_fifo_pair(to_server, from_server)
            for path in (to_server, from_server):
                _swap_in_fresh_fifo(path)  # the next client meets new FIFOs, not this pair
            channel = FramedChannel(
                trio.lowlevel.FdStream(read_fd),
                trio.lowlevel.FdStream(write_fd),
                make_framer(framing, max_frame_size),
                read_timeout=read_timeout,
                idle_timeout=idle_timeout,
            )
            try:
                await handle(channel)
            finally:
                with trio.CancelScope(shield=True), contextlib.suppress(OSError):
                    await channel.aclose()
    finally:
        for path in made:
            with contextlib.suppress(OSError):
                os.unlink(path)
