"""SocketIO's reader task stays consistent when stopping it is itself cancelled (the SSE
pump's watch is woken by a message while it stops the reader): the connection's own task
must still read the client's next request afterwards (a stuck keep-alive connection broke
conformance check server-sse-multiple-streams when the idle-stream watch first landed)."""

from __future__ import annotations

import socket

import trio

from runtime.transports.http._http11 import RequestParser
from runtime.transports.http._socket import SocketIO


async def test_a_cancelled_stop_reader_still_stops_the_reader_and_reads_on() -> None:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                io = SocketIO(ours, RequestParser(8192, 100), 5.0, read_cap=1 << 16)
                io.nursery = nursery
                io.start_reader()
                await trio.lowlevel.checkpoint()  # the reader task waits on the socket
                with trio.CancelScope() as scope:
                    scope.cancel()  # as a pump's wake cancels its watch meanwhile
                    await io.stop_reader()
                assert not io.reader_running
                # The next request on this keep-alive connection is read by this task.
                theirs.sendall(b"GET / HTTP/1.1\r\n\r\n")
                await io.wait_data()
                assert bytes(io.parser.buffer) == b"GET / HTTP/1.1\r\n\r\n"
                # And a reader started again reads too.
                io.start_reader()
                theirs.sendall(b"more")
                await io.wait_data()
                assert bytes(io.parser.buffer).endswith(b"more")
                await io.stop_reader()
                assert not io.reader_running
    finally:
        ours.close()
        theirs.close()
