"""A session's input queue: what POSTs feed its connection's reader, without a memory
channel pair.

A handshake-era session's connection reads the messages of the POSTs that are not answered
in the POST's own task (``initialize``, notifications, responses, batches, a 2024-11-05
session's messages), as those POSTs read them (``runtime.protocol.DecodedFrame``), and the
bodies other replicas route to it, with ``receive_nowait`` only while there is input: idle,
it holds no reader task at all; ``on_input`` tells the session when a message arrives or the
inbox closes, and the session resumes its connection (a ``trio.open_memory_channel`` pair
would hold more per idle session, and a reader parked in it a task, a nursery's share and a
cancel scope: benchmarks/README.md, "Memory per idle connection").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from ...protocol import DecodedFrame

__all__ = ["Inbox"]


class Inbox:
    """Bounded FIFO of messages (bytes, or as a POST read them) with one receiver at a
    time; the subset of a memory channel a session uses: ``send`` waits for room,
    ``send_nowait`` raises ``trio.WouldBlock`` when full, ``close`` ends it (``receive`` then
    raises ``trio.EndOfChannel`` once drained; senders get ``trio.ClosedResourceError``)."""

    __slots__ = ("_closed", "_items", "_receiver", "_senders", "on_input", "size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("an inbox holds at least one message")
        #: How many messages may wait (``ServerPort.inbound_queue``): a POST past it waits.
        self.size = size
        self._items: list[bytes | DecodedFrame] = []
        self._closed = False
        #: The reader parked in ``receive``.
        self._receiver: trio.lowlevel.Task | None = None
        #: Senders waiting for room (made when the queue first fills).
        self._senders: trio.lowlevel.ParkingLot | None = None
        #: Called when a body is queued or the inbox closes while no task waits in
        #: ``receive`` (a reader that takes its input with ``receive_nowait``).
        self.on_input: Callable[[], None] | None = None

    def send_nowait(self, item: bytes | DecodedFrame) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if len(self._items) >= self.size:
            raise trio.WouldBlock
        self._items.append(item)
        self._wake_receiver()

    async def send(self, item: bytes | DecodedFrame) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                self.send_nowait(item)
            except trio.WouldBlock:
                if self._senders is None:
                    self._senders = trio.lowlevel.ParkingLot()
                await self._senders.park()
                continue
            break
        await trio.lowlevel.cancel_shielded_checkpoint()

    def receive_nowait(self) -> bytes | DecodedFrame:
        """The next body: ``trio.WouldBlock`` when none waits, ``trio.EndOfChannel`` once
        closed and drained."""
        if not self._items:
            if self._closed:
                raise trio.EndOfChannel
            raise trio.WouldBlock
        item = self._items.pop(0)
        if self._senders is not None:
            self._senders.unpark()
        return item

    async def receive(self) -> bytes | DecodedFrame:
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = False
        while not self._items:
            if self._closed:
                raise trio.EndOfChannel
            if self._receiver is not None:
                raise trio.BusyResourceError("another task is receiving from this inbox")
            self._receiver = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)
            waited = True
        item = self._items.pop(0)
        if self._senders is not None:
            self._senders.unpark()
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return item

    def close(self) -> None:
        self._closed = True
        self._wake_receiver()
        if self._senders is not None:
            self._senders.unpark_all()

    def _wake_receiver(self) -> None:
        task = self._receiver
        if task is not None:
            self._receiver = None
            trio.lowlevel.reschedule(task)
        elif self.on_input is not None:
            self.on_input()

    def _abort(self, raise_cancel: Any) -> trio.lowlevel.Abort:
        self._receiver = None  # cancelled while waiting: nothing is lost (items stay)
        return trio.lowlevel.Abort.SUCCEEDED
