"""One change to many HTTP subscribers (issue 22 item 3), over real sockets: a waiting stream
gets it written in the publisher's step, in order; a stalled reader neither delays the others
nor loses the last change; both eras (2026-07-28 listen streams, 2025-11-25 GET streams)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import trio
import trio.lowlevel
import trio.testing

from runtime import Server

from .app import open_listen, serving, until
from .http_client import HttpConn, connect, request
from .test_http_session import _h, open_session

UPDATED = "notifications/resources/updated"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def make_app() -> Server:
    app = Server("fanout", "1.0.0")

    @app.resource("mem://t/{key}")
    def t(key: str) -> str:
        return key

    return app


async def open_get_stream(address: Any, uris: list[str]) -> HttpConn:
    session_id = await open_session(address)
    for n, uri in enumerate(uris):
        body = {"jsonrpc": "2.0", "id": n, "method": "resources/subscribe", "params": {"uri": uri}}
        reply = await request(address, "POST", headers=_h(session_id), body=body)
        assert reply.status == 200 and b'"result"' in reply.body, reply
    conn = await connect(address)
    await conn.send("GET", "/mcp", headers=_h(session_id, accept="text/event-stream"))
    head = await conn.head()
    assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
    return conn


async def updated_uris(conn: HttpConn, count: int) -> list[str]:
    out: list[str] = []
    while len(out) < count:
        event = await conn.next_event()
        assert event is not None, f"the stream ended after {out}"
        if not event.data:
            continue  # (a priming event)
        message = json.loads(event.data)
        assert message["method"] == UPDATED, message
        out.append(message["params"]["uri"])
    return out


class StepCounter(trio.abc.Instrument):
    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1


async def publish_counting_steps(app: Server, bursts: list[list[str]]) -> int:
    """Publish each burst at once (no checkpoint inside it), letting the server run after
    each; how many task steps the server took for all of it."""
    counter = StepCounter()
    await trio.testing.wait_all_tasks_blocked()
    trio.lowlevel.add_instrument(counter)
    try:
        for burst in bursts:
            for uri in burst:
                app.notify_resource_updated(uri)
            await trio.testing.wait_all_tasks_blocked()
    finally:
        trio.lowlevel.remove_instrument(counter)
    return counter.steps


async def test_waiting_listens_get_each_change_in_order_without_a_task_step_each() -> None:
    app = make_app()
    uris = ["mem://t/a", "mem://t/b", "mem://t/c"]
    with trio.fail_after(10):
        async with serving(app) as address:
            conns = [
                await open_listen(address, 10 + i, {"resourceSubscriptions": uris})
                for i in range(30)
            ]
            # A burst published at once coalesces (one notification per URI, first-changed
            # first); bursts published apart arrive apart, in order.
            steps = await publish_counting_steps(app, [uris * 20, ["mem://t/b"], ["mem://t/a"]])
            # Written to every stream in one pass of one task: not a wake-up of each
            # listen's task (nor of its response's pump) per subscriber (issue 22 item 3).
            assert steps < 3 * 10, steps
            for conn in conns:
                assert await updated_uris(conn, 5) == [*uris, "mem://t/b", "mem://t/a"]
            # Every one tagged with its own listen's id.
            app.notify_resource_updated("mem://t/c")
            for i, conn in enumerate(conns):
                event = await conn.next_event()
                assert event is not None
                assert json.loads(event.data)["params"]["_meta"] == {SUBSCRIPTION_ID: 10 + i}
                await conn.aclose()


async def test_waiting_get_streams_get_each_change_in_order_without_a_task_step_each() -> None:
    app = make_app()
    uris = ["mem://t/a", "mem://t/b"]
    with trio.fail_after(10):
        async with serving(app) as address:
            conns = [await open_get_stream(address, uris) for _ in range(30)]
            steps = await publish_counting_steps(app, [uris * 10, ["mem://t/b"], ["mem://t/a"]])
            assert steps < 3 * 10, steps
            for conn in conns:
                assert await updated_uris(conn, 4) == [*uris, "mem://t/b", "mem://t/a"]
                await conn.aclose()


def follows_the_cycle(got: list[str], cycle: list[str]) -> bool:
    """Whether each change in ``got`` is the cyclic successor of the one before: what a
    stream of ``cycle`` published over and over looks like when nothing is reordered (a
    coalesced backlog is delivered first-changed first, which keeps the cycle)."""
    pairs = itertools.pairwise(got)
    return all(cycle.index(b) == (cycle.index(a) + 1) % len(cycle) for a, b in pairs)


async def test_a_stalled_listen_neither_delays_the_others_nor_loses_or_reorders() -> None:
    app = make_app()
    # 280 rounds of three 8 KB events (URIs near MAX_URI_LENGTH): 6.7 MB, more than the
    # kernel holds for a reader that stopped (at most 4 MiB of send buffer, tcp_wmem, and a
    # receive buffer that does not grow while nothing is read), so the stalled stream's
    # writes stop being taken at once and fall back to its queue (841 events, within
    # stream_queue_size).
    pad = "x" * 8000
    uris = [f"mem://t/{letter}{pad}" for letter in "abc"]
    end = "mem://t/end"
    rounds = 280
    with trio.fail_after(30):
        async with serving(app) as address:
            stalled = await open_listen(address, 1, {"resourceSubscriptions": [*uris, end]})
            fast = [
                await open_listen(address, 2 + i, {"resourceSubscriptions": [*uris, end]})
                for i in range(2)
            ]
            seen: list[list[str]] = [[], []]

            async def read(i: int) -> None:
                while not seen[i] or seen[i][-1] != end:
                    seen[i] += await updated_uris(fast[i], 1)

            async with trio.open_nursery() as nursery:
                for i in range(2):
                    nursery.start_soon(read, i)
                for _ in range(rounds):
                    for uri in uris:
                        app.notify_resource_updated(uri)
                    await trio.sleep(0.001)
                app.notify_resource_updated(end)
                # The fast readers get the last change while the stalled one reads nothing.
            for i in range(2):
                assert seen[i][-1] == end and set(seen[i]) == {*uris, end}
                assert follows_the_cycle(seen[i][:-1], uris)
            got: list[str] = []
            while not got or got[-1] != end:
                got += await updated_uris(stalled, 1)
            # Not cut, nothing it could act on lost, nothing reordered across the switch
            # from writes at once to its queue and back.
            assert set(got) == {*uris, end}
            assert follows_the_cycle(got[:-1], uris)
            assert got[0] == uris[0]
            for conn in [stalled, *fast]:
                await conn.aclose()


async def next_data(conn: HttpConn) -> str:
    while True:
        event = await conn.next_event()
        assert event is not None, "the stream ended"
        if event.data:  # (skip a priming event)
            return event.data


async def test_every_subscriber_gets_the_exact_bytes_and_a_closed_one_is_dropped() -> None:
    app = make_app()
    hub = app.registry.changes
    uri = "mem://t/a"
    with trio.fail_after(20):
        async with serving(app) as address:
            listens = [
                await open_listen(address, 100 + i, {"resourceSubscriptions": [uri]})
                for i in range(12)
            ]
            gets = [await open_get_stream(address, [uri]) for _ in range(6)]
            assert len(hub) == 18
            # Two of each kind hang up before the change; the server may not have seen it
            # yet when it writes: the others must get theirs all the same.
            for conn in [listens[3], listens[7], gets[1], gets[4]]:
                await conn.aclose()
            app.notify_resource_updated(uri)
            for i, conn in enumerate(listens):
                if i in (3, 7):
                    continue
                # One encoding spliced around each listen's own id (basic/patterns/
                # subscriptions: tagged with the listen request's id in _meta).
                assert await next_data(conn) == (
                    '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":'
                    f'{{"_meta":{{"{SUBSCRIPTION_ID}":{100 + i}}},"uri":"{uri}"}}}}'
                )
            for i, conn in enumerate(gets):
                if i in (1, 4):
                    continue
                assert await next_data(conn) == (
                    '{"jsonrpc":"2.0","method":"notifications/resources/updated",'
                    f'"params":{{"uri":"{uri}"}}}}'
                )
            # The closed listens are dropped from the hub (their requests end). A closed GET
            # stream is not its session: the session's subscriber stays, for the client's
            # next GET (2025-11-25 basic/transports "Listening for Messages from the Server").
            await until(lambda: len(hub) == 16)
            app.notify_resource_updated(uri)
            for conn in [*listens[:3], *gets[:1]]:
                assert json.loads(await next_data(conn))["params"]["uri"] == uri
            for conn in listens:
                if conn not in (listens[3], listens[7]):
                    await conn.aclose()
            await until(lambda: len(hub) == len(gets))
            for conn in gets:
                if conn not in (gets[1], gets[4]):
                    await conn.aclose()


async def test_a_get_stream_change_written_directly_is_one_chunk_of_one_event_with_its_id() -> None:
    """The publisher frames a GET stream's event (with its id, for resumption) and its
    HTTP/1.1 chunk in one step (issue 22 item 3): each chunk on the wire is exactly one
    whole ``id:``/``data:`` event, and the ids are distinct."""
    import h11

    app = make_app()
    uri = "mem://t/a"
    with trio.fail_after(10):
        async with serving(app) as address:
            conn = await open_get_stream(address, [uri])
            chunks: list[bytes] = []
            for _ in range(2):
                await trio.testing.wait_all_tasks_blocked()
                app.notify_resource_updated(uri)
                while True:
                    event = await conn._event()
                    assert isinstance(event, h11.Data), event
                    if b"data: {" in event.data:  # (not a priming event or a keep-alive)
                        assert event.chunk_start and event.chunk_end, event
                        chunks.append(event.data)
                        break
            await conn.aclose()
    ids = []
    for chunk in chunks:
        head, sep, data = chunk.partition(b"\ndata: ")
        assert head.startswith(b"id: ") and len(head) > 4 and sep, chunk
        ids.append(head[4:])
        assert data == (
            b'{"jsonrpc":"2.0","method":"notifications/resources/updated",'
            b'"params":{"uri":"mem://t/a"}}\n\n'
        )
    assert ids[0] != ids[1]


async def test_changes_written_directly_to_a_get_stream_are_stored_and_resume_in_order() -> None:
    """A change a session routes in the publisher's step (``HttpSession.route_now``) is
    stored with its event id as a routed one is: a client that reconnects with the id of
    the first gets the second and one published while no GET stream was open, in order."""
    app = make_app()
    uri = "mem://t/a"
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            reply = await request(
                address,
                "POST",
                headers=_h(session_id),
                body={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "resources/subscribe",
                    "params": {"uri": uri},
                },
            )
            assert reply.status == 200 and b'"result"' in reply.body, reply
            conn = await connect(address)
            await conn.send("GET", "/mcp", headers=_h(session_id, accept="text/event-stream"))
            assert (await conn.head()).status == 200
            ids: list[str] = []
            for _ in range(2):
                await trio.testing.wait_all_tasks_blocked()
                app.notify_resource_updated(uri)
                while True:
                    event = await conn.next_event()
                    assert event is not None
                    if event.data:
                        assert json.loads(event.data)["params"]["uri"] == uri
                        ids.append(event.id)
                        break
            await conn.aclose()
            await trio.testing.wait_all_tasks_blocked(0.05)  # (the server sees the hang-up)
            app.notify_resource_updated(uri)  # (no GET stream: routed the usual way)
            await trio.testing.wait_all_tasks_blocked()
            again = await connect(address)
            await again.send(
                "GET",
                "/mcp",
                headers=_h(session_id, accept="text/event-stream", **{"last-event-id": ids[0]}),
            )
            assert (await again.head()).status == 200
            resumed: list[str] = []
            while len(resumed) < 2:
                event = await again.next_event()
                assert event is not None
                if event.data:
                    assert json.loads(event.data)["params"]["uri"] == uri
                    resumed.append(event.id)
            assert resumed[0] == ids[1] and len(set([*ids, *resumed])) == 3, (ids, resumed)
            await again.aclose()
