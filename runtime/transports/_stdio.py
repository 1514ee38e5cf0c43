"""stdio: the process's stdin/stdout as one message channel.

MCP stdio transport (2025-11-25 basic/transports): "The server MUST NOT write anything to
its stdout that is not a valid MCP message." While the channel is open, file descriptor 1 is
pointed at stderr (so ``print()``, C extensions and subprocesses cannot corrupt the protocol)
and the protocol writes to a private duplicate of the original stdout.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import trio

from ._fdio import FdIO
from ._framed import FramedChannel, FramingName, make_framer

__all__ = ["PIPE_SIZE", "open_stdio_channel"]

#: The capacity asked for on stdin and stdout when they are pipes (Linux ``F_SETPIPE_SZ``; an
#: unprivileged process may go up to /proc/sys/fs/pipe-max-size, 1 MiB by default). With the
#: default 64 KiB a 16 MiB reply is 256 partial writes, each a trip through trio's event loop
#: (benchmarks/README.md, "Stdio pipes grown"). Best effort: left as it is where refused (the
#: user's pipe quota, pipe-user-pages-soft, may be spent), on non-pipes and off Linux.
PIPE_SIZE: Final = 1 << 20


def _grow_pipe(fd: int) -> int | None:
    """Ask for PIPE_SIZE on ``fd`` if it is a pipe; its capacity then, when known."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if setpipe is None:
        return None
    with contextlib.suppress(OSError):
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            try:
                return fcntl.fcntl(fd, setpipe, PIPE_SIZE)  # (the capacity it now has)
            except OSError:
                return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    return None


class _StdioChannel(FramedChannel):
    """stdin/stdout as a channel that outlives the connection over it: a connection's
    ``aclose`` leaves the pipes open, and ``open_stdio_channel`` closes them as it exits. So
    after a fault of ours ``Server.serve_stdio`` serves on with a new connection, reading on
    where the last one stopped (the framer keeps what it had buffered)."""

    __slots__ = ()

    async def aclose(self) -> None:
        """Nothing: the pipes close when ``open_stdio_channel`` exits."""


@asynccontextmanager
async def open_stdio_channel(
    *,
    framing: FramingName = "ndjson",
    max_frame_size: int = 4 * 1024 * 1024,
    read_timeout: float | None = None,
    idle_timeout: float | None = None,
) -> AsyncIterator[FramedChannel]:
    """Yield a channel on stdin/stdout; restore the process's stdout on exit. The channel's
    pipes close on exit, not when a connection over it ends (a server may serve another
    connection over them)."""
    sys.stdout.flush()
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    saved_fd1 = os.dup(1)
    saved_stdout = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # A big message arrives in reads of the pipe's capacity: a 1 MiB tools/call in one or two
    # reads, not 16 trips through the event loop (benchmarks/README.md, "Reads of a pipe's
    # capacity").
    in_capacity = _grow_pipe(in_fd)
    _grow_pipe(out_fd)
    channel = _StdioChannel(
        FdIO(in_fd),
        FdIO(out_fd),
        make_framer(framing, max_frame_size),
        read_timeout=read_timeout,
        idle_timeout=idle_timeout,
        big_receive_size=in_capacity,
    )
    try:
        yield channel
    finally:
        with trio.CancelScope(shield=True):
            # FdIO made the shared file descriptions non-blocking; undo that for the
            # code that runs after us (O_NONBLOCK lives on the description, not the fd).
            for fd in (in_fd, out_fd):
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)
            await FramedChannel.aclose(channel)
        sys.stderr.flush()
        os.dup2(saved_fd1, 1)
        os.close(saved_fd1)
        sys.stdout = saved_stdout
