"""A handshake session's GET stream, fed by several replicas, carries its events in the
order of their ids (MCP 2025-11-25 basic/transports, "Resumability and Redelivery").

Replicas take a stream's event ids from one counter in the shared store, then hand each
event over the bus to the replica holding the GET stream; the bus keeps order only per
publisher, and may lose a message. Here replica A, on a real redis-server, holds the GET
stream; "other replicas" are a second store on the same Redis doing exactly what a replica
does (``EventStore.append``, then ``out <replica> <id> <data>`` on the session's channel),
with the publishing order and losses chosen by the test. Written as they arrived, a client
that lost its connection after a later id would resume past an earlier one and never get
it, and a lost bus message would be missing from the live stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import msgspec
import trio

from runtime import Server
from runtime.stores import RedisStore

from ..transports.app import serving
from ..transports.http_client import HttpConn, connect, open_raw_session
from ..transports.http_client import session_headers as headers


def log_message(text: str) -> bytes:
    return msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": text},
        }
    )


async def open_get(where: tuple[str, int], session: str) -> tuple[HttpConn, str]:
    """A's GET stream of ``session``, open, and its priming event's id."""
    stream = await connect(where)
    await stream.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
    assert (await stream.head()).status == 200
    prime = await stream.next_event()
    assert prime is not None and prime.data == "" and prime.id, prime
    return stream, prime.id


async def texts(stream: HttpConn, count: int) -> list[tuple[str, str]]:
    """``(event id, log text)`` of the stream's next ``count`` events."""
    out = []
    for _ in range(count):
        event = await stream.next_event()
        assert event is not None
        out.append((event.id, msgspec.json.decode(event.data)["params"]["data"]))
    return out


@contextlib.asynccontextmanager
async def replica_a_and_another(
    redis_url: str,
) -> AsyncIterator[tuple[tuple[str, int], RedisStore]]:
    """Replica A serving on ``redis_url``, and another replica's store beside it."""
    a_app = Server("replica-a", "1.0.0", store=RedisStore.from_url(redis_url))
    other = RedisStore.from_url(redis_url)
    async with serving(a_app) as a, other.running():
        yield a, other


async def test_events_published_out_of_order_are_written_in_order(redis_url: str) -> None:
    with trio.fail_after(20):
        async with replica_a_and_another(redis_url) as (a, other):
            session = await open_raw_session(a)
            stream, prime = await open_get(a, session)
            channel = "session:" + session
            ids = [await other.events.append(session, "g0", log_message(t)) for t in "wxyz"]
            assert [int(i.rpartition("_")[2]) for i in ids] == [
                int(prime.rpartition("_")[2]) + k for k in range(1, 5)
            ]

            # x before w (two replicas' publishes crossing), y never (a lost bus message),
            # then w late, and z.
            for k in (1, 0, 3):
                await publish_raw(other, channel, ids[k], log_message("wxyz"[k]))
            heard = await texts(stream, 4)
            # w's late copy, published before z, must not come again: one more message
            # after z shows what follows it.
            extra = await other.events.append(session, "g0", log_message("after"))
            await publish_raw(other, channel, extra, log_message("after"))
            (following,) = await texts(stream, 1)
            await stream.aclose()
    assert heard == [(ids[0], "w"), (ids[1], "x"), (ids[2], "y"), (ids[3], "z")], heard
    assert following == (extra, "after")


async def publish_raw(store: RedisStore, channel: str, event_id: str, data: bytes) -> None:
    out = b"out " + store.replica.encode() + b" " + event_id.encode() + b" " + data
    await store.bus.publish(channel, out)


async def test_a_resumed_stream_keeps_its_order_too(redis_url: str) -> None:
    """After ``Last-Event-ID``: the replayed events, then live ones in id order, each once,
    though the next id's bus message came after its successor's."""
    with trio.fail_after(20):
        async with replica_a_and_another(redis_url) as (a, other):
            session = await open_raw_session(a)
            stream, prime = await open_get(a, session)
            await stream.aclose()
            # Stored while no GET stream was open (published to nobody).
            first = await other.events.append(session, "g0", log_message("stored"))
            resumed = await connect(a)
            resume = headers(session, accept="text/event-stream", **{"last-event-id": prime})
            await resumed.send("GET", "/mcp", headers=resume)
            assert (await resumed.head()).status == 200
            replayed = await texts(resumed, 1)
            ids = [await other.events.append(session, "g0", log_message(t)) for t in "ab"]
            await publish_raw(other, "session:" + session, ids[1], log_message("b"))
            await publish_raw(other, "session:" + session, ids[0], log_message("a"))
            live = await texts(resumed, 2)
            after = await other.events.append(session, "g0", log_message("c"))
            await publish_raw(other, "session:" + session, after, log_message("c"))
            (last,) = await texts(resumed, 1)
            await resumed.aclose()
    assert replayed == [(first, "stored")]
    assert live == [(ids[0], "a"), (ids[1], "b")], live
    assert last == (after, "c")


async def reopen_get(where: tuple[str, int], session: str) -> tuple[HttpConn, str]:
    """A's GET stream of ``session`` opened again without ``Last-Event-ID`` (once A has seen
    the last one close: until then it answers 409), and its first event's id."""
    while True:
        stream = await connect(where)
        await stream.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
        if (await stream.head()).status == 200:
            break
        await stream.aclose()
        await trio.sleep(0.01)
    prime = await stream.next_event()
    assert prime is not None and prime.data == "" and prime.id, prime
    return stream, prime.id


def numbers(ids: list[str]) -> list[int]:
    return [int(i.rpartition("_")[2]) for i in ids]


async def test_a_reopened_stream_writes_a_straggler_before_its_successor(redis_url: str) -> None:
    """A GET stream opened again without ``Last-Event-ID`` reuses its priming event, so its
    first event does not say where the stream stands: A reads the stream's counter as it
    opens. Two replicas' events then cross on the bus (x's before w's, w stored first): w is
    fetched from the store and written first, and each goes out once. Started from the
    first event written instead, the stream carried x, then w: its ids went backwards."""
    with trio.fail_after(20):
        async with replica_a_and_another(redis_url) as (a, other):
            session = await open_raw_session(a)
            first, prime = await open_get(a, session)
            await first.aclose()
            stream, reused = await reopen_get(a, session)
            channel = "session:" + session
            ids = [await other.events.append(session, "g0", log_message(t)) for t in "wx"]
            await publish_raw(other, channel, ids[1], log_message("x"))
            await publish_raw(other, channel, ids[0], log_message("w"))
            ids.append(await other.events.append(session, "g0", log_message("y")))
            await publish_raw(other, channel, ids[2], log_message("y"))
            heard = await texts(stream, 3)
            await stream.aclose()
    assert reused == prime
    assert heard == [(ids[0], "w"), (ids[1], "x"), (ids[2], "y")], heard
    wire = numbers([reused] + [i for i, _ in heard])
    assert wire == sorted(set(wire)) and wire[1:] == list(range(wire[1], wire[1] + 3)), wire


async def test_ids_given_before_the_stream_opened_never_go_out_after_it(
    redis_url: str,
) -> None:
    """An event stored before A's GET stream opened, whose bus message comes once it is
    open: at or below the stream's start (a fresh stream's priming event, a reopened one's
    counter), so not written (written, it went out after an id above its own: on main, a
    fresh stream's ``early`` came after the priming event). A reopened stream's is not lost:
    resuming from its (reused) priming event replays it."""
    with trio.fail_after(20):
        async with replica_a_and_another(redis_url) as (a, other):
            session = await open_raw_session(a)
            channel = "session:" + session
            early = await other.events.append(session, "g0", log_message("early"))
            stream, prime = await open_get(a, session)  # fresh: a new priming event
            await publish_raw(other, channel, early, log_message("early"))
            after = await other.events.append(session, "g0", log_message("after"))
            await publish_raw(other, channel, after, log_message("after"))
            fresh_heard = await texts(stream, 1)
            await stream.aclose()

            late = await other.events.append(session, "g0", log_message("late"))
            stream, reused = await reopen_get(a, session)  # reopened: the counter
            await publish_raw(other, channel, late, log_message("late"))
            last = await other.events.append(session, "g0", log_message("last"))
            await publish_raw(other, channel, last, log_message("last"))
            reopened_heard = await texts(stream, 1)
            await stream.aclose()

            resumed = await connect(a)
            resume = headers(session, accept="text/event-stream", **{"last-event-id": prime})
            await resumed.send("GET", "/mcp", headers=resume)
            assert (await resumed.head()).status == 200
            replayed = await texts(resumed, 3)
            await resumed.aclose()
    assert numbers([early, prime, after]) == [1, 2, 3]
    assert fresh_heard == [(after, "after")], fresh_heard
    assert reused == prime and reopened_heard == [(last, "last")], reopened_heard
    assert replayed == [(after, "after"), (late, "late"), (last, "last")]
