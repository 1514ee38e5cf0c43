"""A handshake-era GET stream's events in the order of their ids, when several replicas
produce them (MCP 2025-11-25 basic/transports, "Resumability and Redelivery": the ids of a
stream are a cursor within it, which a client resumes from with ``Last-Event-ID``).

Replicas sharing a session take event ids from one counter per stream in the shared store
(``EventStore.append``), then hand each event to the replica holding the GET stream over
the bus. The bus keeps order per publisher only, so two replicas' events can arrive in the
other order: written as they came, a client that lost its connection between them would
resume (``Last-Event-ID``: the later id) past the earlier one and never get it. And a bus
message can be lost (the bus is at-most-once) while its event is stored.

So the holder writes ids in order, from a start it knows before the first event comes:

- the start. With ``Last-Event-ID``, the last id replayed (or that id, when nothing was).
  Without, on a stream opened for the first time, its priming event's number (the counter
  the priming write moved); on one opened again (its priming event is reused), the
  stream's counter, read from the store once as it opens (``EventStore.last_number``).
- ids above the start go out in order: an event that skips past the next id waits while
  the store is asked for the events stored in between (``fill``), which go out first;
  their own bus copies, coming later, are dropped as already written. Ids a store counts
  but keeps no data for (priming events) are simply absent from that answer.
- ids at or below the start were given out before the stream opened. Those already routed
  to the stream when the start is known go out first, in order (``ResponseStream.
  take_below``: a fresh stream's before its priming event, a reopened one's after its
  reused priming event, whose id is below them too). One whose bus copy comes later is
  dropped: an id above it may have gone out (written then, the client's cursor would go
  back, and a client that left just before it would resume past it). It stays in the
  store, like every event routed while no GET stream was open, which a stream opened
  without ``Last-Event-ID`` does not carry either: a reopened stream's reused priming
  event is a cursor before it (resuming from it replays it); a fresh stream's priming
  event is past it. An event on the wire is never below one written before it.

When the store cannot be read as the stream opens (a priming write or the counter read
failed), the start is unknown: the first event written becomes it, and the same rules hold
from there (the store being away, a gap is then left as the bus made it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from ...stores import split_event_id

__all__ = ["DROP", "FILL", "WRITE", "InOrder", "seq_of"]

WRITE: Final = 0
DROP: Final = 1
FILL: Final = 2


def seq_of(event_id: str) -> int:
    """The number of ``<stream>_<n>`` (0 when it has none)."""
    split = split_event_id(event_id)
    return 0 if split is None else split[1]


class InOrder:
    """Where the writer of one GET stream stands: ``last``, the highest id number it wrote
    or its start (None only while a start the store could not give is unknown: until the
    first event)."""

    def __init__(
        self,
        start: int | None,
        fill: Callable[[int], Awaitable[list[tuple[str, bytes]]]],
    ) -> None:
        #: ``fill(n)``: the stored events of the stream after number ``n``, in order.
        self.fill = fill
        self.last = start

    def judge(self, seq: int) -> int:
        """WRITE the event numbered ``seq`` now, DROP it (written already, or at or below
        the start), or FILL the gap before it first."""
        last = self.last
        if last is None or seq == last + 1:
            return WRITE
        if seq <= last:
            return DROP
        return FILL

    def wrote(self, seq: int) -> None:
        """``seq`` went out (judged WRITE, or FILL and its gap written): it is above ``last``."""
        self.last = seq

    async def missing(self, seq: int) -> list[tuple[str, bytes]]:
        """The stored events between the last written and ``seq``, in order (once ``seq``
        is written, their bus copies are dropped when they come)."""
        assert self.last is not None  # (FILL only from a known start)
        last = self.last
        return [
            (event_id, data)
            for event_id, data in await self.fill(last)
            if last < seq_of(event_id) < seq
        ]
