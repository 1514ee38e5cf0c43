"""FramedChannel.over_socket: a TCP connection's descriptor read and written directly (FdIO),
as ``serve_tcp``/``serve_unix`` use it, over real 127.0.0.1 sockets; and an idle FdIO read
keeps nothing alive but its wait (issue 22 item 4)."""

from __future__ import annotations

import gc
import os

import trio

from runtime.transports import _fdio


async def test_an_idle_read_holds_no_exception_while_it_waits() -> None:
    """The BlockingIOError of the read that found nothing is gone before the wait (inside
    the ``except`` it would live, with its traceback, as long as the connection is idle)."""
    r, w = os.pipe()
    stream = _fdio.FdIO(r)
    got: list[bytes] = []
    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def read() -> None:
                    got.append(await stream.receive_some())

                nursery.start_soon(read)
                await trio.testing.wait_all_tasks_blocked()
                gc.collect()
                alive = [o for o in gc.get_objects() if isinstance(o, BlockingIOError)]
                assert alive == []
                os.write(w, b"late")
    finally:
        os.close(w)
        await stream.aclose()
    assert got == [b"late"]
