"""A handshake-era GET stream's events in the order of their ids, when several replicas
produce them (MCP 2025-11-25 basic/transports, "Resumability and Redelivery").

Replicas sharing a session take event ids from one counter per stream in the shared store
(``EventStore.append``), then hand each event to the replica holding the GET stream over
the bus. The bus keeps order per publisher only, so two replicas' events can arrive in the
other order: written as they came, a client that lost its connection between them would
resume (``Last-Event-ID``: the later id) past the earlier one and never get it. And a bus
message can be lost (the bus is at-most-once) while its event is stored.

So the holder writes ids in order: an event that skips past the next id waits while the
store is asked for the events stored in between (``fill``), which go out first; their own
bus copies, coming later, are dropped as already written. Ids a store counts but keeps no
data for (priming events) are simply absent from that answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

__all__ = ["DROP", "FILL", "WRITE", "InOrder", "seq_of"]

WRITE: Final = 0
DROP: Final = 1
FILL: Final = 2


def seq_of(event_id: str) -> int:
    """The number of ``<stream>_<n>`` (0 when it has none)."""
    number = event_id.rpartition("_")[2]
    return int(number) if number.isdigit() else 0


class InOrder:
    """Where the writer of one GET stream stands: ``last``, the highest id number it wrote
    (None until the first, when the stream did not start from a known id), and ``base``,
    the first: an id below ``base`` was never written by this writer (it came from another
    replica late, after its successors), so it goes out rather than being lost."""

    def __init__(
        self,
        after: int | None,
        fill: Callable[[int], Awaitable[list[tuple[str, bytes]]]],
    ) -> None:
        #: ``fill(n)``: the stored events of the stream after number ``n``, in order.
        self.fill = fill
        self.base = self.last = after

    def judge(self, seq: int) -> int:
        """WRITE the event numbered ``seq`` now, DROP it (written already), or FILL first."""
        last = self.last
        if last is None or seq == last + 1:
            return WRITE
        assert self.base is not None  # (set with last)
        if seq < self.base:
            return WRITE  # a late one from before this writer's first: out of order, not lost
        if seq <= last:
            return DROP
        return FILL

    def wrote(self, seq: int) -> None:
        if self.last is None:
            self.base = self.last = seq
        elif seq > self.last:
            self.last = seq

    async def missing(self, seq: int) -> list[tuple[str, bytes]]:
        """The stored events between the last written and ``seq``, in order (once ``seq``
        is written, their bus copies are dropped when they come)."""
        assert self.last is not None  # (FILL only once one was written)
        last = self.last
        return [
            (event_id, data)
            for event_id, data in await self.fill(last)
            if last < seq_of(event_id) < seq
        ]
