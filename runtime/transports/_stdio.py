"""stdio: the process's stdin/stdout as one message channel.

MCP stdio transport (2025-11-25 basic/transports): "The server MUST NOT write anything to
its stdout that is not a valid MCP message." While the channel is open, file descriptor 1 is
pointed at stderr (so ``print()``, C extensions and subprocesses cannot corrupt the protocol)
and the protocol writes to a private duplicate of the original stdout.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from ._framed import FramedChannel, FramingName, make_framer

__all__ = ["open_stdio_channel"]


@asynccontextmanager
async def open_stdio_channel(
    *,
    framing: FramingName = "ndjson",
    max_frame_size: int = 4 * 1024 * 1024,
    read_timeout: float | None = None,
    idle_timeout: float | None = None,
) -> AsyncIterator[FramedChannel]:
    """Yield a channel on stdin/stdout; restore the process's stdout on exit."""
    sys.stdout.flush()
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    saved_fd1 = os.dup(1)
    saved_stdout = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = FramedChannel(
        trio.lowlevel.FdStream(in_fd),
        trio.lowlevel.FdStream(out_fd),
        make_framer(framing, max_frame_size),
        read_timeout=read_timeout,
        idle_timeout=idle_timeout,
    )
    try:
        yield channel
    finally:
        with trio.CancelScope(shield=True):
            # FdStream made the shared file descriptions non-blocking; undo that for the
            # code that runs after us (O_NONBLOCK lives on the description, not the fd).
            for fd in (in_fd, out_fd):
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)
            await channel.aclose()
        sys.stderr.flush()
        os.dup2(saved_fd1, 1)
        os.close(saved_fd1)
        sys.stdout = saved_stdout
