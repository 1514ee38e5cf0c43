"""A pipe's file descriptor as a trio stream, without the scheduler round trips it need not make.

``trio.lowlevel.FdStream`` passes through the scheduler before every read and every write
(a checkpoint up front), then, when nothing is there to read, fails a ``read``, waits and
reads again. For stdio that is two scheduler passes and a failed system call per lone
request on top of the one wait that cannot be avoided; a refused request costs little else
(issue 22 item 5). Here a read goes to the descriptor first and waits only when it must; a
read that did not wait still yields once (shielded, so no byte read is lost), so a peer that
always has input ready cannot starve the other tasks. A write goes to the descriptor at
once: :meth:`FdIO.write_now` returns what is left when the pipe is full, for the caller to
finish under whatever scope bounds it (the connection's outbox: shielded, with its
``write_timeout``). Relies on POSIX non-blocking descriptors (the constructor makes it so,
as ``FdStream`` does; a regular file stays readable at once and is never waited on).
"""

from __future__ import annotations

import errno
import os

import trio

__all__ = ["FdIO"]

_DEFAULT_RECEIVE_SIZE = 64 * 1024


def _error(exc: OSError) -> trio.BrokenResourceError | trio.ClosedResourceError:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("file was already closed")
    return trio.BrokenResourceError(str(exc))


class FdIO(trio.abc.Stream):
    """One file descriptor (a pipe end, stdin or stdout, or a connected stream socket taken
    from its ``trio.SocketStream``) read and written directly. One task at a time reads and
    one writes (the connection's reader and outbox). ``pipe`` says a read gives at most a
    pipe's capacity (``FramedChannel`` sizes its reads by it)."""

    def __init__(self, fd: int, *, pipe: bool = True) -> None:
        self._fd = fd
        self._closed = False
        self.pipe = pipe
        os.set_blocking(fd, False)

    @property
    def fd(self) -> int:
        return self._fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint_if_cancelled()  # (no scheduler pass unless cancelled)
        waited = False
        while True:
            if self._closed:
                raise trio.ClosedResourceError("file was already closed")
            try:
                data = os.read(self._fd, max_bytes or _DEFAULT_RECEIVE_SIZE)
            except BlockingIOError:
                data = None
            except OSError as exc:
                raise _error(exc) from exc
            if data is None:
                # Waited for outside the ``except``: there the BlockingIOError and its
                # traceback would stay alive as long as the wait (~0.5 KiB per idle
                # connection, issue 22 item 4).
                await trio.lowlevel.wait_readable(self._fd)
                waited = True
                continue
            if not waited:
                # Input was there already: let the other tasks run before it is handled.
                await trio.lowlevel.cancel_shielded_checkpoint()
            return data

    def write_now(self, data: bytes) -> memoryview | None:
        """Write what the descriptor takes without waiting: None when that was all of
        ``data``, else the rest (for :meth:`write_rest`)."""
        if self._closed:
            raise trio.ClosedResourceError("file was already closed")
        try:
            sent = os.write(self._fd, data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise _error(exc) from exc
        return None if sent == len(data) else memoryview(data)[sent:]

    async def write_rest(self, view: memoryview) -> None:
        """Write ``view`` whole, waiting for room as often as it takes."""
        while view:
            await trio.lowlevel.wait_writable(self._fd)
            if self._closed:
                raise trio.ClosedResourceError("file was already closed")
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise _error(exc) from exc

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        rest = self.write_now(bytes(data) if not isinstance(data, bytes) else data)
        if rest is None:
            await trio.lowlevel.checkpoint()  # (a plain ``send_all`` is a checkpoint)
        else:
            await self.write_rest(rest)

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.wait_writable(self._fd)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            trio.lowlevel.notify_closing(self._fd)
            os.close(self._fd)
        await trio.lowlevel.checkpoint()
