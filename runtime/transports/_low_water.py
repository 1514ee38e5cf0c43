"""A socket's send low-water mark, lifted for the rest of one big write and put back after.

``trio.SocketStream`` sets ``TCP_NOTSENT_LOWAT`` to 16 KiB, so that a streaming writer
learns of a slow peer early: the socket reports itself writable only while less than 16 KiB
wait unsent. For a whole message already in memory that only means the kernel takes it a
few hundred KiB at a time, with a wait for writability (an ``epoll`` round and a task
switch) between: several rounds per MiB, a large share of the server's CPU for a 1 MiB
``resources/read`` (benchmarks/README.md, "Send low-water mark"). Lifted (back to the
system's default, as a plain blocking socket has it), the kernel takes as much as its send
buffer holds, a 1 MiB reply at once. The mark is put back when that write ends (cancelled
included), so small writes (SSE events, notifications) keep trio's pace and a slow reader's
messages back up to where the runtime can see them rather than into the kernel's buffer.

One idea, one place: HTTP's socket (``runtime.transports.http``), the TCP stream transport
(``FdIO``) and the WebSocket writer use it. Linux and macOS have the option; elsewhere, and
on a socket that is no TCP socket (a Unix socket), nothing is lifted.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from typing import Final, Protocol

__all__ = ["LIFT_OVER", "LowWater", "lifted"]

#: The rest of a write longer than this (bytes) goes on with the send low-water mark lifted
#: (see the module): one message already in memory, which waiting at trio's pace only makes
#: dearer. A shorter one (an SSE event for a slow reader, say) waits at trio's pace, so that
#: a slow reader's messages back up to the runtime (an SSE stream, where changes coalesce;
#: a connection's outbox, bounded by its write timeout) rather than into the kernel's
#: buffer. 64 KiB: four times trio's mark, and the size over which an HTTP response body is
#: written beside its head (``WRITE_APART_OVER``).
LIFT_OVER: Final = 64 * 1024

#: ``TCP_NOTSENT_LOWAT`` where the platform has it (Linux, macOS), else None.
_OPTION: Final[int | None] = getattr(socket, "TCP_NOTSENT_LOWAT", None)


class Socket(Protocol):
    """What :class:`LowWater` needs of a socket (a ``trio.socket.SocketType`` or a
    ``socket.socket``): its options."""

    def getsockopt(self, level: int, option: int, /) -> int: ...

    def setsockopt(self, level: int, option: int, value: int, /) -> None: ...


class LowWater:
    """One socket's send low-water mark: :meth:`lift` it for the rest of a big write,
    :meth:`put_back` when that write ends. The socket's own mark is read at the first lift
    (none, or no TCP socket: never lifted again)."""

    __slots__ = ("_mark", "_sock", "lifted")

    def __init__(self, sock: Socket) -> None:
        self._sock = sock
        #: The socket's own mark, read at the first lift: what :meth:`put_back` sets again;
        #: 0 when it has none (or is no TCP socket), None until read.
        self._mark: int | None = None
        #: The mark is lifted, for the write in progress.
        self.lifted = False

    def lift(self, rest: int) -> bool:
        """Lift the mark for the rest of a write, ``rest`` bytes, when that is over
        ``LIFT_OVER`` and the socket has a mark: whether it is lifted now."""
        if rest <= LIFT_OVER or _OPTION is None or self._mark == 0:
            return False
        if self.lifted:
            return True
        try:
            if self._mark is None:
                self._mark = self._sock.getsockopt(socket.IPPROTO_TCP, _OPTION)
                if self._mark == 0:
                    return False
            # 0: the system's default (net.ipv4.tcp_notsent_lowat; unlimited unless set).
            self._sock.setsockopt(socket.IPPROTO_TCP, _OPTION, 0)
        except OSError:  # no TCP socket (a Unix socket), or a broken one
            self._mark = 0
            return False
        self.lifted = True
        return True

    def write_lifted(self, fd: int, rest: memoryview) -> memoryview | None:
        """``rest`` written at once to ``fd`` (this socket's descriptor) with the mark
        lifted (:meth:`lift` said so): None when all of it went (the mark is put back), else
        what is left (the mark stays lifted for the caller's wait). Any other ``OSError``
        than ``BlockingIOError`` puts the mark back and propagates."""
        try:
            rest = rest[os.write(fd, rest) :]
        except BlockingIOError:
            return rest
        except OSError:
            self.put_back()
            raise
        if rest:
            return rest
        self.put_back()
        return None

    def put_back(self, *, closed: bool = False) -> None:
        """Put the mark back, if it was lifted; ``closed``: the socket's descriptor is
        closed (its number may be another connection's by now), so only forget the lift."""
        if not self.lifted:
            return
        self.lifted = False
        if closed or not self._mark or _OPTION is None:
            return
        # (A broken socket: the write that waited has said so, or the next one will.)
        with contextlib.suppress(OSError):
            self._sock.setsockopt(socket.IPPROTO_TCP, _OPTION, self._mark)


@contextlib.contextmanager
def lifted(sock: Socket | None, size: int) -> Iterator[None]:
    """The mark of ``sock`` lifted while a write of ``size`` bytes (over ``LIFT_OVER``) goes
    through a trio stream (``send_all``), put back when it ends, however it ends. None: no
    socket (a pipe, say), nothing to lift."""
    if sock is None or size <= LIFT_OVER:
        yield
        return
    mark = LowWater(sock)
    mark.lift(size)
    try:
        yield
    finally:
        mark.put_back()
