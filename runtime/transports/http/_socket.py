"""One HTTP connection's socket I/O, straight to the file descriptor.

The descriptor is non-blocking (as trio keeps it): ``os.read``/``os.write`` go first, and
``trio.lowlevel.wait_readable``/``wait_writable`` only when they must, so a response that
fits the socket buffer is one ``write`` with no scheduler round trip (trio's stream
wrappers cost a checkpoint or two per call, about a quarter of a small request here).
Once the connection is closed its descriptor number may belong to another client: nothing
is written to it again. Relies on POSIX non-blocking sockets.

The rest of a big write the socket did not take at once goes on with the socket's send
low-water mark lifted (``LowWater`` of ``runtime.transports``: at trio's 16 KiB pace a
1 MiB reply takes several rounds of waiting; benchmarks/README.md, "Send low-water mark");
small writes (SSE events) keep trio's pace (``LIFT_OVER``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final, Protocol

import trio

from ...protocol import Pieces
from .. import LIFT_OVER, LowWater
from ._exchange import Exchange
from ._http11 import RequestParser

__all__ = ["SocketIO"]

_RECEIVE_SIZE: Final = 64 * 1024
#: Buffers per ``writev`` at most: Linux's UIO_MAXIOV and macOS's IOV_MAX (more: EINVAL).
_IOV_MAX: Final = 1024


def _after(buffers: Sequence[bytes | bytearray | memoryview], sent: int) -> list[memoryview]:
    """What is left of ``buffers`` (of single bytes) once ``sent`` bytes of them went: views,
    no copies."""
    for i, buffer in enumerate(buffers):
        size = len(buffer)
        if sent < size:
            return [memoryview(buffer)[sent:], *(memoryview(rest) for rest in buffers[i + 1 :])]
        sent -= size
    return []


def _writev_now(fd: int, buffers: Sequence[bytes | bytearray | memoryview]) -> int:
    """How many bytes of ``buffers`` (in order; at most ``_IOV_MAX`` of them at a time) the
    socket ``fd`` took at once: 0 when it has no room; BrokenResourceError when the peer is
    gone."""
    try:
        return os.writev(fd, buffers[:_IOV_MAX])
    except BlockingIOError:
        return 0
    except OSError as exc:
        raise trio.BrokenResourceError(f"socket connection broken: {exc}") from exc


class Socket(Protocol):
    """What :class:`SocketIO` needs of its socket (a ``trio.socket.SocketType`` or a
    ``socket.socket``): its descriptor, and its options for the send low-water mark."""

    def fileno(self) -> int: ...

    def getsockopt(self, level: int, option: int, /) -> int: ...

    def setsockopt(self, level: int, option: int, value: int, /) -> None: ...


class SocketIO:
    """Reads into ``parser`` and writes whole byte strings. The connection's own task
    reads when it needs data (``wait_data``); between ``start_reader`` and
    ``stop_reader`` (from an app that waits until the driver sees requests stop waiting) a
    reader task reads instead, so that a hang-up is seen while an app waits, stopping once
    ``read_cap`` bytes wait unparsed (backpressure)."""

    def __init__(
        self, sock: Socket, parser: RequestParser, write_timeout: float, *, read_cap: int
    ) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._closed = False
        #: The send low-water mark, lifted for the rest of a big write (see the module);
        #: made at the first big write (an idle connection holds none).
        self._low_water: LowWater | None = None
        self.parser = parser
        self.write_timeout = write_timeout
        self._read_cap = read_cap
        self._write_lock = trio.StrictFIFOLock()
        # Reader state: EOF seen, or the socket broke; the exchange being answered (told of
        # a hang-up); bytes read since the connection's task last needed data.
        # Read by the driver on every request (plain attributes: no call each time).
        #: The client closed its side.
        self.eof = False
        #: Why the socket broke, if it did.
        self.broken: BaseException | None = None
        self.exchange: Exchange | None = None
        self.nursery: trio.Nursery | None = None
        # The reader task, while it runs: it reads and hands bytes over (the connection's
        # task, when it needs data meanwhile, parks on the first of ``_lots``).
        #: The reader task runs (between ``start_reader`` and ``stop_reader``).
        self.reader_running = False
        self._unread = 0
        # The running reader's lots (the connection's task waits for data in the first,
        # the reader for it to drain in the second), scope and end, made when it starts and
        # dropped when it has stopped (an idle stream's connection holds none of them).
        self._lots: tuple[trio.lowlevel.ParkingLot, trio.lowlevel.ParkingLot] | None = None
        self._reader_scope: trio.CancelScope | None = None
        self._reader_done: trio.Event | None = None

    def close(self) -> None:
        """From now on the descriptor number may belong to another connection: nothing (a
        session's writer task, say) may write to it any more."""
        self._closed = True
        if self._reader_scope is not None:
            self._reader_scope.cancel()

    async def write(self, data: bytes) -> None:
        """Write all of ``data``; TooSlowError after ``write_timeout`` without progress
        room, BrokenResourceError when the peer is gone."""
        if not data:
            return
        if self._closed:
            raise trio.ClosedResourceError("the connection is closed")
        if not self._write_lock.locked():
            try:
                sent = os.write(self._fd, data)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                raise trio.BrokenResourceError(f"socket connection broken: {exc}") from exc
            if sent == len(data):
                return
            # (A bytes slice would copy all that is left.)
            rest = self._write_lifted(memoryview(data)[sent:])
            if rest is None:
                return
        else:
            rest = memoryview(data)
        async with self._write_lock:
            await self._write_slowly(rest)

    async def write_pair(self, head: bytes, body: bytes | Pieces) -> None:
        """Write ``head`` and then ``body`` (bytes, or ``Pieces``: its parts in order) as
        :meth:`write` writes one byte string, in one ``writev`` as far as the socket takes
        them: none is copied into a joined whole (a 16 MiB text's pieces), and the head does
        not go out as a TCP segment of its own (benchmarks/README.md, "Head and body in one
        writev")."""
        if self._closed:
            raise trio.ClosedResourceError("the connection is closed")
        buffers = [head, *body.parts] if type(body) is Pieces else [head, body]
        if self._write_lock.locked():
            sent = 0
        else:
            sent = _writev_now(self._fd, buffers)
            if type(body) is not Pieces and sent >= len(head):  # (the usual case for bytes)
                left = memoryview(body)[sent - len(head) :]
                rest = self._write_lifted(left) if left else None
                if rest is None:
                    return
                async with self._write_lock:
                    await self._write_slowly(rest)
                return
        views = _after(buffers, sent)
        if not views:
            return
        async with self._write_lock:
            await self._writev_slowly(views)

    def write_now(self, data: bytes) -> memoryview | None:
        """Write what the socket takes of ``data`` without waiting: None when that was all
        of it, else the rest, for :meth:`write_rest` (which waits in order behind a write
        in progress). ClosedResourceError / BrokenResourceError as :meth:`write`."""
        if self._closed:
            raise trio.ClosedResourceError("the connection is closed")
        if self._write_lock.locked():
            return memoryview(data)
        try:
            sent = os.write(self._fd, data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise trio.BrokenResourceError(f"socket connection broken: {exc}") from exc
        return None if sent == len(data) else self._write_lifted(memoryview(data)[sent:])

    async def write_rest(self, rest: memoryview) -> None:
        """The rest of a :meth:`write_now`: written as :meth:`write` would."""
        async with self._write_lock:
            await self._write_slowly(rest)

    def _write_lifted(self, rest: memoryview) -> memoryview | None:
        """The ``rest`` of a write the socket did not take, over ``LIFT_OVER`` bytes,
        written again at once with the send low-water mark lifted (see the module): None
        when that took all of it (the mark is put back), else what is left (the mark stays
        lifted until ``_write_slowly`` has written it)."""
        if not self._lift(len(rest)):
            return rest
        assert self._low_water is not None  # (made by the lift)
        try:
            return self._low_water.write_lifted(self._fd, rest)
        except OSError as exc:
            raise trio.BrokenResourceError(f"socket connection broken: {exc}") from exc

    def _lift(self, size: int) -> bool:
        """Lift the send low-water mark for the rest of a write of ``size`` bytes (over
        ``LIFT_OVER``, the socket open): whether it is lifted now."""
        if size <= LIFT_OVER or self._closed:
            return False
        if self._low_water is None:
            self._low_water = LowWater(self._sock)
        return self._low_water.lift(size)

    def _put_back(self) -> None:
        if self._low_water is not None:
            self._low_water.put_back(closed=self._closed)

    async def _write_slowly(self, view: memoryview) -> None:
        # Lifted just now (a big write that waited behind another), the kernel may take
        # more at once: try before waiting.
        lifted = self._low_water is not None and self._low_water.lifted
        ready = not lifted and self._lift(len(view))
        try:
            with trio.CancelScope(deadline=trio.current_time() + self.write_timeout) as scope:
                while view:
                    if not ready:
                        await trio.lowlevel.wait_writable(self._fd)
                        if self._closed:
                            raise trio.ClosedResourceError("the connection is closed")
                    ready = False
                    try:
                        sent = os.write(self._fd, view)
                    except BlockingIOError:
                        continue
                    except OSError as exc:
                        raise trio.BrokenResourceError(f"socket connection broken: {exc}") from exc
                    view = view[sent:]
        finally:
            self._put_back()
        if scope.cancelled_caught:
            raise trio.TooSlowError

    async def _writev_slowly(self, views: list[memoryview]) -> None:
        """:meth:`_write_slowly` of several buffers in order, a ``writev`` at a time, with
        the send low-water mark lifted for the rest of them."""
        self._lift(sum(len(view) for view in views))
        try:
            with trio.CancelScope(deadline=trio.current_time() + self.write_timeout) as scope:
                while views:
                    views = _after(views, _writev_now(self._fd, views))
                    if views:
                        await trio.lowlevel.wait_writable(self._fd)
                        if self._closed:
                            raise trio.ClosedResourceError("the connection is closed")
        finally:
            self._put_back()
        if scope.cancelled_caught:
            raise trio.TooSlowError

    def _read_now(self) -> int | None:
        """One non-blocking read into the parser: how many bytes it read (0: EOF or a
        broken socket, told to the exchange as a hang-up), None when nothing was there.
        (The reader task counts them for its backpressure; the connection's own task, which
        parses as it reads, needs no count.)"""
        try:
            data = os.read(self._fd, _RECEIVE_SIZE)
        except BlockingIOError:
            return None
        except OSError as exc:
            self.broken = exc
            data = b""
        if data:
            self.parser.buffer += data  # (the parser's ``feed``, without a call per read)
            return len(data)
        self.eof = True
        if self.exchange is not None:
            self.exchange.hung_up()
        return 0

    async def read_into(self, view: memoryview) -> int:
        """Read bytes of a request body straight into ``view`` (not through the parser's
        buffer, from which they would be copied out again), as many as are there,
        waiting for some when none are: how many. BrokenResourceError at EOF or on a broken
        socket. Only while no reader task runs (``reader_running``): that one feeds the
        parser."""
        while True:
            if self.broken is not None:
                raise trio.BrokenResourceError from self.broken
            if self.eof:
                raise trio.BrokenResourceError("the client closed the connection")
            try:
                got = os.readv(self._fd, [view])
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self._fd)
                continue
            except OSError as exc:
                self.broken = exc
                continue
            if got:
                return got
            self.eof = True

    async def wait_data(self) -> None:
        """The next bytes (or EOF) in the parser; BrokenResourceError once at EOF or on a
        broken socket. The phase deadline (``_sweep_deadlines``) bounds the wait."""
        if self.broken is not None:
            raise trio.BrokenResourceError from self.broken
        if self.eof:
            raise trio.BrokenResourceError("the client closed the connection")
        if self.reader_running:
            self._unread = 0
            assert self._lots is not None  # (made with the reader)
            data_lot, drain_lot = self._lots
            drain_lot.unpark_all()
            await data_lot.park()
        else:
            while True:
                await trio.lowlevel.wait_readable(self._fd)
                if self._read_now() is not None:
                    break
        if self.broken is not None:
            raise trio.BrokenResourceError from self.broken

    def start_reader(self) -> None:
        if not (self.reader_running or self.eof or self._closed or self.nursery is None):
            self.reader_running = True
            self._unread = 0
            self._reader_scope = scope = trio.CancelScope()
            self._reader_done = done = trio.Event()
            self._lots = lots = (trio.lowlevel.ParkingLot(), trio.lowlevel.ParkingLot())
            self.nursery.start_soon(self._reader, scope, done, *lots)

    async def stop_reader(self) -> None:
        """Stop the reader task: the connection's task reads for itself again. A cancelled
        wait reads nothing, so no byte is lost."""
        if self.reader_running:
            scope, done = self._reader_scope, self._reader_done
            assert scope is not None and done is not None
            scope.cancel()
            # Shielded: a caller cancelled meanwhile (the SSE pump's watch, woken by a
            # message) must not leave ``reader_running`` set with no reader task, or the
            # connection's next request is never read. The reader's waits are all in the
            # cancelled scope, so it ends at its next checkpoint.
            with trio.CancelScope(shield=True):
                await done.wait()
            self.reader_running = False
            self._reader_scope = self._reader_done = self._lots = None

    async def watch(self) -> bool:
        """The reader task's watch, in the calling task (``Exchange.watch``): stop the
        reader task, wait until the socket is readable, read once. True: watch on (nothing
        was there, or EOF / a broken socket, told to the exchange as a hang-up); False:
        bytes arrived, and the reader task reads on from here (backpressure as before).
        Cancelling the wait reads nothing, so no byte is lost."""
        if not self.reader_running:
            # An app's first step runs eagerly in the driver's task, which starts the
            # reader once that step suspends (``_run_app``): let it, then stop it.
            await trio.lowlevel.checkpoint()
        if self.reader_running:
            await self.stop_reader()
        if self.eof or self.broken is not None or self._closed:
            await trio.sleep_forever()  # (told already; the caller is being cancelled)
        await trio.lowlevel.wait_readable(self._fd)
        if not self._read_now() or self.eof:
            return True
        self.start_reader()
        return False

    async def _reader(
        self,
        scope: trio.CancelScope,
        done: trio.Event,
        data_lot: trio.lowlevel.ParkingLot,
        drain_lot: trio.lowlevel.ParkingLot,
    ) -> None:
        """Read until EOF, a broken socket, or cancellation (a cancelled wait reads
        nothing, so no byte is lost); a pipelined next request waits in the parser."""
        cap = self._read_cap
        try:
            with scope:
                while not self.eof and self.broken is None:
                    await trio.lowlevel.wait_readable(self._fd)
                    got = self._read_now()
                    if got is None:
                        continue
                    self._unread += got
                    data_lot.unpark_all()
                    while self._unread > cap:
                        await drain_lot.park()  # stop reading: backpressure
        finally:
            done.set()
