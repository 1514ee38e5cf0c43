"""A pipe's file descriptor as a trio stream, without the scheduler round trips it need not make.

``trio.lowlevel.FdStream`` passes through the scheduler before every read and every write
(a checkpoint up front), then, when nothing is there to read, fails a ``read``, waits and
reads again. For stdio that is two scheduler passes and a failed system call per lone
request on top of the one wait that cannot be avoided, and a refused request costs little
else. Here a read goes to the descriptor first and waits only when it must; a
read that did not wait still yields once (shielded, so no byte read is lost), so a peer that
always has input ready cannot starve the other tasks. A write goes to the descriptor at
once: :meth:`FdIO.write_now` returns what is left when the pipe is full, for the caller to
finish under whatever scope bounds it (the connection's outbox: shielded, with its
``write_timeout``). Relies on POSIX non-blocking descriptors (the constructor makes it so,
as ``FdStream`` does; a regular file stays readable at once and is never waited on).

On a socket (``pipe=False``: the TCP transport), the rest of a big write the socket did not
take at once goes on with its send low-water mark lifted (``LowWater``: at trio's 16 KiB
pace the kernel takes a 1 MiB reply a few hundred KiB per wait), put back when that write
ends; small writes keep trio's pace.
"""

from __future__ import annotations

import errno
import os
import socket

import trio

from ._low_water import LIFT_OVER, LowWater

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
        #: A socket's send low-water mark, made at its first big write (an idle connection
        #: holds none); None as well for a pipe.
        self._low_water: LowWater | None = None
        #: The ``socket.socket`` that mark is set through, over the same descriptor: detached
        #: before :meth:`aclose` closes it, so that it never closes the number itself.
        self._sock: socket.socket | None = None
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
                # traceback would stay alive as long as the wait, for every idle connection.
                await trio.lowlevel.wait_readable(self._fd)
                waited = True
                continue
            if not waited:
                # Input was there already: let the other tasks run before it is handled.
                await trio.lowlevel.cancel_shielded_checkpoint()
            return data

    def write_now(self, data: bytes | bytearray | memoryview) -> memoryview | None:
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
        if sent == len(data):
            return None
        rest = memoryview(data)[sent:]
        if len(rest) > LIFT_OVER and not self.pipe and self._lift(len(rest)):
            # Lifted (see the module): the socket may take much more at once.
            assert self._low_water is not None  # (made by the lift)
            try:
                return self._low_water.write_lifted(self._fd, rest)
            except OSError as exc:
                raise _error(exc) from exc
        return rest

    async def write_rest(self, view: memoryview) -> None:
        """Write ``view`` whole, waiting for room as often as it takes; a low-water mark
        lifted for it (:meth:`write_now`) is put back when it ends, however it ends."""
        try:
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
        finally:
            if self._low_water is not None and self._low_water.lifted:
                self._put_back()

    def _lift(self, rest: int) -> bool:
        """Lift the socket's send low-water mark for the ``rest`` of a write: whether it is
        lifted (not when the descriptor is no TCP socket, or has no mark)."""
        low_water = self._low_water
        if low_water is None:
            try:  # (the family, type and protocol are read from the descriptor)
                self._sock = socket.socket(fileno=self._fd)
            except OSError:  # (no socket after all: a closed descriptor, say)
                return False
            low_water = self._low_water = LowWater(self._sock)
        return low_water.lift(rest)

    def _put_back(self) -> None:
        if self._low_water is not None:
            self._low_water.put_back(closed=self._closed)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        # (Not copied: nothing changes ``data`` until the write has ended; a reply's long
        # text, a 16 MiB bytearray, is written as it is.)
        rest = self.write_now(data)
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
            if self._sock is not None:
                self._sock.detach()  # (it must not close the number again, someone else's)
            os.close(self._fd)
        await trio.lowlevel.checkpoint()
