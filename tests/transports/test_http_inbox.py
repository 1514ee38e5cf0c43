"""``Inbox``: a handshake session's input queue in place of a memory channel pair (issue 22
item 4): FIFO, bounded (a sender waits for room), one parked receiver woken by a send or
by ``close``, cancellation loses nothing."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from runtime.transports.http._inbox import Inbox


async def test_fifo_and_a_parked_receiver_is_woken_by_a_send() -> None:
    inbox = Inbox(4)
    got: list[bytes] = []

    async def read(n: int) -> None:
        for _ in range(n):
            got.append(await inbox.receive())

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read, 3)
            await trio.testing.wait_all_tasks_blocked()
            inbox.send_nowait(b"a")
            await inbox.send(b"b")
            inbox.send_nowait(b"c")
    assert got == [b"a", b"b", b"c"]


async def test_full_send_nowait_refuses_and_send_waits_for_room() -> None:
    inbox = Inbox(2)
    inbox.send_nowait(b"1")
    inbox.send_nowait(b"2")
    with pytest.raises(trio.WouldBlock):
        inbox.send_nowait(b"3")
    sent: list[bool] = []

    async def send() -> None:
        await inbox.send(b"3")
        sent.append(True)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send)
            await trio.testing.wait_all_tasks_blocked()
            assert sent == []  # no room: waits
            assert await inbox.receive() == b"1"
            await trio.testing.wait_all_tasks_blocked()
            assert sent == [True]
        assert [await inbox.receive(), await inbox.receive()] == [b"2", b"3"]


async def test_close_drains_then_ends_and_wakes_the_waiting() -> None:
    inbox = Inbox(1)
    inbox.send_nowait(b"last")
    outcomes: list[str] = []

    async def blocked_send() -> None:
        try:
            await inbox.send(b"never")
        except trio.ClosedResourceError:
            outcomes.append("sender closed")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(blocked_send)
            await trio.testing.wait_all_tasks_blocked()
            inbox.close()
        assert outcomes == ["sender closed"]
        assert await inbox.receive() == b"last"  # what was queued is still read
        with pytest.raises(trio.EndOfChannel):
            await inbox.receive()
        with pytest.raises(trio.ClosedResourceError):
            inbox.send_nowait(b"x")

    parked = Inbox(1)

    async def receive() -> None:
        with pytest.raises(trio.EndOfChannel):
            await parked.receive()
        outcomes.append("receiver ended")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive)
            await trio.testing.wait_all_tasks_blocked()
            parked.close()
    assert outcomes[-1] == "receiver ended"


async def test_a_cancelled_receiver_loses_nothing_and_one_receiver_at_a_time() -> None:
    inbox = Inbox(2)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(inbox.receive)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(trio.BusyResourceError):
                await inbox.receive()
            nursery.cancel_scope.cancel()
        inbox.send_nowait(b"kept")
        assert await inbox.receive() == b"kept"


async def test_receive_nowait_and_on_input_for_a_reader_that_never_parks() -> None:
    """A session's connection reads with ``receive_nowait`` only while there is input;
    ``on_input`` tells it of each body and of the close (none while a receiver parks)."""
    inbox = Inbox(2)
    told: list[int] = []
    inbox.on_input = lambda: told.append(len(inbox._items))
    with pytest.raises(trio.WouldBlock):
        inbox.receive_nowait()
    inbox.send_nowait(b"a")
    inbox.send_nowait(b"b")
    assert told == [1, 2]
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(inbox.send, b"c")  # waits for room
            await trio.testing.wait_all_tasks_blocked()
            assert told == [1, 2]
            assert inbox.receive_nowait() == b"a"  # makes room: the sender goes on
    assert told == [1, 2, 2]
    assert [inbox.receive_nowait(), inbox.receive_nowait()] == [b"b", b"c"]
    inbox.close()
    assert told == [1, 2, 2, 0]
    with pytest.raises(trio.EndOfChannel):
        inbox.receive_nowait()
