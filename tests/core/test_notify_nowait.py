"""``Connection.notify_nowait`` (``Outbox.send_nowait``): one change written to many
connections from the publishing task, without a task switch per connection (issue 22 item 3),
never reordered behind or ahead of a write in progress."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec
import trio
import trio.testing

from runtime import Server
from runtime.core import Connection, MessageChannel, Session
from runtime.transports import FramedChannel, make_framer
from runtime.transports._fdio import FdIO


@asynccontextmanager
async def serving(channel: MessageChannel) -> AsyncIterator[Connection]:
    app = Server("nowait", "0.0.1")
    served: list[Connection] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: app.serve_connection(channel, session=Session("nowait"), started=served.append)
        )
        while not served:  # noqa: ASYNC110 - the connection starts in the nursery
            await trio.sleep(0.01)
        yield served[0]
        nursery.cancel_scope.cancel()


def numbers(data: bytes) -> list[int]:
    return [msgspec.json.decode(line)["params"]["n"] for line in data.splitlines()]


async def test_written_in_the_callers_step_and_in_order_over_a_socket() -> None:
    ours, theirs = socket.socketpair()
    io = FdIO(ours.detach())  # (the channel closes it)
    channel = FramedChannel(io, io, make_framer("ndjson", 1 << 20))
    with trio.fail_after(5), theirs:
        async with serving(channel) as connection:
            # No checkpoint between these calls: every message is on the socket already.
            sent = [connection.notify_nowait("notifications/n", {"n": i}) for i in range(50)]
            assert sent == [True] * 50
            theirs.setblocking(False)
            data = b""
            while data.count(b"\n") < 50:
                data += theirs.recv(1 << 20)  # (raises BlockingIOError if one was missing)
            assert numbers(data) == list(range(50))


async def test_a_write_that_would_block_finishes_in_a_task_and_later_ones_queue_behind() -> None:
    client, server_end = trio.testing.lockstep_stream_pair()  # takes nothing without a reader
    channel = FramedChannel(server_end, server_end, make_framer("ndjson", 1 << 20))
    with trio.fail_after(5):
        async with serving(channel) as connection:
            assert connection.notify_nowait("notifications/n", {"n": 0})  # left to a task
            # A write is in progress: nothing done now, the caller sends it the usual way.
            assert not connection.notify_nowait("notifications/n", {"n": 1})
            await connection.notify("notifications/n", {"n": 1})
            await connection.notify("notifications/n", {"n": 2})
            data = b""
            while data.count(b"\n") < 3:
                data += await client.receive_some(1 << 16)
            assert numbers(data) == [0, 1, 2]
            # Written out: the next one goes the quick way again.
            await trio.testing.wait_all_tasks_blocked()
            assert connection.notify_nowait("notifications/n", {"n": 3})
            data = b""
            while not data.endswith(b"\n"):
                data += await client.receive_some(1 << 16)
            assert numbers(data) == [3]
            await client.send_stream.aclose()


async def test_a_gone_peer_drops_the_message_and_breaks_the_connection() -> None:
    ours, theirs = socket.socketpair()
    io = FdIO(ours.detach())  # (the channel closes it)
    channel = FramedChannel(io, io, make_framer("ndjson", 1 << 20))
    with trio.fail_after(5):
        async with serving(channel) as connection:
            theirs.close()
            # The write fails at once: dropped, as ``notify`` drops output of a broken
            # connection; no exception reaches the publisher.
            assert connection.notify_nowait("notifications/n", {"n": 0})
            assert connection.notify_nowait("notifications/n", {"n": 1})
            with trio.fail_after(2):
                while connection.close_reason == "running":  # noqa: ASYNC110
                    await trio.sleep(0.01)
