"""The order keeper of a GET stream fed by several replicas (``_in_order.InOrder``), and
``ResponseStream.take_below``: each decision on its own (the wire is in
tests/stores/test_get_stream_order.py)."""

from __future__ import annotations

from runtime.transports.http._in_order import DROP, FILL, WRITE, InOrder, seq_of
from runtime.transports.http._streams import ResponseStream


def _stored(*numbers: int) -> list[tuple[str, bytes]]:
    return [(f"g0_{n}", b"%d" % n) for n in numbers]


def test_ids_in_sequence_are_written_and_their_repeats_dropped() -> None:
    order = InOrder(4, None)  # type: ignore[arg-type]  # (never asked to fill here)
    assert order.judge(5) == WRITE
    order.wrote(5)
    assert [order.judge(n) for n in (4, 5, 6)] == [DROP, DROP, WRITE]


def test_an_id_past_the_next_asks_for_the_gap() -> None:
    order = InOrder(4, None)  # type: ignore[arg-type]
    assert order.judge(7) == FILL


async def test_a_straggler_after_a_known_start_goes_out_first_from_the_store() -> None:
    """A reopened GET stream starts from the stream's counter (6). Replica X's event 7 was
    stored before replica Y's 8, but 8's bus message comes first: 7 is fetched and written
    before 8, and its own bus copy, coming after, is dropped (on main, which started from
    the first event written, 8 went out and then 7: ids going backwards)."""
    asked: list[int] = []

    async def fill(after: int) -> list[tuple[str, bytes]]:
        asked.append(after)
        return _stored(7, 8)

    order = InOrder(6, fill)
    assert order.judge(8) == FILL
    assert await order.missing(8) == _stored(7)
    order.wrote(8)
    assert asked == [6]
    assert [order.judge(n) for n in (7, 8, 9)] == [DROP, DROP, WRITE]


def test_ids_at_or_below_the_start_are_not_written() -> None:
    """Given out before the stream opened (and not routed to it by then): the client's
    cursor is past them; they stay in the store."""
    order = InOrder(6, None)  # type: ignore[arg-type]
    assert [order.judge(n) for n in (1, 5, 6, 7)] == [DROP, DROP, DROP, WRITE]


def test_an_unknown_start_is_the_first_written_and_nothing_goes_below_it() -> None:
    """The store could not say where the stream stood as it opened: the first event is the
    start; a later one numbered below it is dropped, never written after it."""
    order = InOrder(None, None)  # type: ignore[arg-type]
    assert order.judge(10) == WRITE
    order.wrote(10)
    assert [order.judge(n) for n in (9, 10, 11, 12)] == [DROP, DROP, WRITE, FILL]


async def test_the_gap_is_the_stored_events_strictly_between() -> None:
    asked: list[int] = []

    async def fill(after: int) -> list[tuple[str, bytes]]:
        asked.append(after)
        return _stored(5, 6, 8, 9, 10)  # (7: a priming event, stored without data)

    order = InOrder(4, fill)
    assert order.judge(9) == FILL
    assert await order.missing(9) == _stored(5, 6, 8)
    order.wrote(9)
    assert asked == [4]
    assert [order.judge(n) for n in (5, 8, 9, 10)] == [DROP, DROP, DROP, WRITE]


def test_take_below_takes_the_earlier_ids_in_order_and_keeps_the_rest_queued() -> None:
    stream = ResponseStream("g0")
    for event_id in ("g0_3", "g0_1", None, "g0_6", "g0_2"):
        stream.push(event_id, b"x")
    assert [i for i, _ in stream.take_below(4)] == ["g0_1", "g0_2", "g0_3"]
    rest = []
    while (item := stream.take_nowait()) is not None:
        rest.append(item[0])
    assert rest == [None, "g0_6"]
    assert stream.take_below(4) == []  # (nothing queued)


def test_seq_of_reads_the_number_after_the_last_underscore() -> None:
    assert [seq_of(i) for i in ("g0_12", "p_ab_3", "g0_", "x")] == [12, 3, 0, 0]
