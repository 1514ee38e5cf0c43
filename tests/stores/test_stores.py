"""The store contracts, on both implementations, against a real redis-server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
import trio

from runtime.stores import (
    MemoryStore,
    RedisClient,
    RedisError,
    RedisStore,
    SessionRecord,
    Store,
    StoreUnavailable,
    StreamState,
    TaskSnapshot,
    open_store,
)

from .servers import RedisServer, free_port


async def _until(condition: Callable[[], bool]) -> None:
    """Poll (the bus delivers from another task, or another process)."""
    for _ in range(500):
        if condition():
            return
        await trio.sleep(0.01)
    raise AssertionError("condition not met in 5s")


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        made: Store = MemoryStore(max_events=5)
    else:
        url = request.getfixturevalue("redis_url")
        made = RedisStore.from_url(url, max_events=5)
    async with made.running():
        yield made


async def test_events_replay_after_last_event_id(store: Store) -> None:
    with trio.fail_after(5):
        prime = await store.events.append("s1", "g0", None)
        first = await store.events.append("s1", "g0", b'{"a":1}')
        other = await store.events.append("s1", "p1", b'{"b":2}')
        second = await store.events.append("s1", "g0", b'{"a": "x y"}')
        assert (prime, first, other, second) == ("g0_1", "g0_2", "p1_1", "g0_3")
        assert await store.events.replay("s1", prime) == (
            "g0",
            [("g0_2", b'{"a":1}'), ("g0_3", b'{"a": "x y"}')],
        )
        assert await store.events.replay("s1", second) == ("g0", [])
        assert await store.events.replay("s1", "nope_1") is None
        assert await store.events.replay("s2", first) is None
        assert await store.events.replay("s1", "g0") is None
        assert await store.events.replay("s1", "g0_\u00b2") is None  # isdigit, not int()


async def test_an_event_id_longer_than_any_given_is_unknown(store: Store) -> None:
    """A ``Last-Event-ID`` numbered with 5,000 digits (past CPython's 4,300-digit ``int``
    guard) raised ValueError out of the replay: a 500 and a traceback. Numbers past 19
    digits (a 64-bit counter) and ids past 256 characters name no event: unknown (None)."""
    with trio.fail_after(5):
        await store.events.append("s1", "g0", None)
        await store.events.append("s1", "g0", b"x")
        assert await store.events.replay("s1", "g0_" + "9" * 5000) is None
        assert await store.events.replay("s1", "g0_" + "0" * 20) is None
        assert await store.events.replay("s1", "g0_" + "0" * 19) == ("g0", [("g0_2", b"x")])
        assert await store.events.replay("s1", "g" * 300 + "_1") is None


async def test_last_number_is_where_a_stream_stands(store: Store) -> None:
    """The number of a stream's latest id, priming events counted; 0 before its first."""
    with trio.fail_after(5):
        assert await store.events.last_number("s1", "g0") == 0
        await store.events.append("s1", "g0", None)
        await store.events.append("s1", "g0", b"x")
        await store.events.append("s1", "p1", b"y")
        assert await store.events.last_number("s1", "g0") == 2
        assert await store.events.last_number("s1", "p1") == 1
        assert await store.events.last_number("s1", "p2") == 0
        assert await store.events.last_number("s2", "g0") == 0
        await store.events.forget("s1")
        assert await store.events.last_number("s1", "g0") == 0


async def test_a_post_stream_is_followed_by_its_lease(store: Store) -> None:
    """``open_stream`` primes a POST stream with the requests it answers and a lease;
    ``follow`` reads its events after a point and whether the lease still holds; ``renew``
    extends it; a lease not renewed runs out (the producer is gone)."""
    with trio.fail_after(5):
        prime = await store.events.open_stream("s1", "p1-r", b'[7,"x"]', 0.4)
        await store.events.append("s1", "p1-r", b'{"n":1}')
        await store.events.append("s1", "g0", b'{"other":1}')
        second = await store.events.append("s1", "p1-r", b'{"n":2}')
        assert (prime, second) == ("p1-r_1", "p1-r_3")
        state = await store.events.follow("s1", "p1-r", 1)
        assert state == StreamState(
            requests=b'[7,"x"]', held=True, events=[("p1-r_2", b'{"n":1}'), (second, b'{"n":2}')]
        )
        following = await store.events.follow("s1", "p1-r", 3)
        assert following is not None and following.events == []
        assert await store.events.follow("s1", "p9-r", 0) is None
        assert await store.events.follow("s2", "p1-r", 0) is None
        # A stream primed without open_stream (the GET stream) is followed, unrecorded.
        await store.events.append("s1", "p2-r", None)
        assert await store.events.follow("s1", "p2-r", 0) == StreamState(
            requests=None, held=False, events=[]
        )
        await trio.sleep(0.25)
        await store.events.renew([("s1", "p1-r"), ("s1", "nope")], 0.4)
        await trio.sleep(0.25)  # past the first lease, within the renewed one
        renewed = await store.events.follow("s1", "p1-r", 3)
        assert renewed is not None and renewed.held
        await trio.sleep(0.3)
        expired = await store.events.follow("s1", "p1-r", 3)
        assert expired is not None and not expired.held
        assert expired.requests == b'[7,"x"]'  # still known: its errors answer them
        await store.events.forget("s1")
        assert await store.events.follow("s1", "p1-r", 0) is None


async def test_events_bounded_per_session(store: Store) -> None:
    with trio.fail_after(5):
        for n in range(8):
            await store.events.append("s1", "g0", b"%d" % n)
        found = await store.events.replay("s1", "g0_0")
        assert found == ("g0", [(f"g0_{n}", b"%d" % (n - 1)) for n in range(4, 9)])
        await store.events.forget("s1")
        assert await store.events.replay("s1", "g0_0") is None


async def test_session_records(store: Store) -> None:
    record = SessionRecord(
        version="2025-06-18",
        client_capabilities={"elicitation": {}},
        client_info={"name": "c", "version": "1"},
        log_level="debug",
        principal='"alice"',
    )
    with trio.fail_after(5):
        assert await store.sessions.load("x") is None
        await store.sessions.save("x", record, 60)
        assert await store.sessions.load("x") == record
        await store.sessions.touch("x", 60)
        await store.sessions.delete("x")
        assert await store.sessions.load("x") is None


async def test_a_sessions_events_expire_with_its_record(redis_url: str) -> None:
    """Redis: a session's events, counters and stream records take the TTL of its record
    when written and when the record is saved or touched (without a record yet, as for
    ``initialize``'s stream, ``event_ttl``), so they never outlive the session."""
    store = RedisStore.from_url(redis_url, event_ttl=600)
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    client = RedisClient("127.0.0.1", port)

    async def ttls(session: str) -> list[int]:
        keys = [f"mcp:{kind}:{session}" for kind in ("s", "ev", "ec", "er")]
        return [await client.call("TTL", key) for key in keys]

    with trio.fail_after(5):
        async with store.running():
            await store.events.open_stream("x", "p1-r", b"[1]", 5)
            await store.events.append("x", "p1-r", b"{}")
            assert [t > 500 for t in await ttls("x")] == [False, True, True, True]
            await store.sessions.save("x", SessionRecord(version="2025-11-25"), 30)
            assert all(0 < t <= 30 for t in await ttls("x")), await ttls("x")
            await store.sessions.touch("x", 20)
            assert all(0 < t <= 20 for t in await ttls("x")), await ttls("x")
            await store.events.append("x", "g0", b"{}")  # takes the record's, not event_ttl
            await store.events.open_stream("x", "p2-r", b"[2]", 5)
            assert all(0 < t <= 20 for t in await ttls("x")), await ttls("x")
    await client.aclose()


async def test_shared_secret_is_stable(store: Store) -> None:
    with trio.fail_after(5):
        a = await store.shared_secret("mrtr")
        assert len(a) == 32
        assert await store.shared_secret("mrtr") == a
        assert await store.shared_secret("other") != a


async def test_bus_reaches_every_subscriber(store: Store) -> None:
    got: list[tuple[str, bytes]] = []
    with trio.fail_after(5):
        stop_a = await store.bus.subscribe("c1", lambda d: got.append(("a", d)))
        stop_b = await store.bus.subscribe("c1", lambda d: got.append(("b", d)))
        await store.bus.publish("c1", b"one")
        await store.bus.publish("c2", b"elsewhere")
        await _until(lambda: len(got) >= 2)
        stop_a()
        await store.bus.publish("c1", b"two")
        await _until(lambda: len(got) >= 3)
        stop_b()
        await trio.sleep(0.05)
    assert sorted(got[:2]) == [("a", b"one"), ("b", b"one")]
    assert got[2:] == [("b", b"two")]


async def test_two_redis_stores_share_everything(redis_url: str) -> None:
    """Two replicas (two stores on one Redis): what one writes, the other reads or hears."""
    one, two = RedisStore.from_url(redis_url), RedisStore.from_url(redis_url)
    heard: list[bytes] = []
    with trio.fail_after(5):
        async with one.running(), two.running():
            assert one.replica != two.replica
            await two.bus.subscribe("session:x", heard.append)
            await one.sessions.save("x", SessionRecord(version="2025-11-25"), 60)
            assert await two.sessions.load("x") == SessionRecord(version="2025-11-25")
            event = await one.events.append("x", "g0", b"{}")
            assert await two.events.replay("x", "g0_0") == ("g0", [(event, b"{}")])
            await one.bus.publish("session:x", b"hello")
            await _until(lambda: bool(heard))
            assert heard == [b"hello"]
            assert await one.shared_secret("k") == await two.shared_secret("k")


async def test_a_cancelled_redis_subscribe_leaves_nothing_subscribed(redis_url: str) -> None:
    """``subscribe`` cancelled while it waits for Redis's confirmation returns no unsubscribe
    function, so nothing of it may stay: the ``deliver`` it was given never hears the
    channel, while a subscription made after it does."""
    one, two = RedisStore.from_url(redis_url), RedisStore.from_url(redis_url)
    cancelled: list[bytes] = []
    heard: list[bytes] = []
    with trio.fail_after(5):
        async with one.running(), two.running():
            with trio.CancelScope() as scope:
                scope.cancel()
                await one.bus.subscribe("c", cancelled.append)
            assert scope.cancelled_caught
            stop = await one.bus.subscribe("c", heard.append)
            await two.bus.publish("c", b"after")
            await _until(lambda: bool(heard))
            stop()
            await trio.sleep(0.05)
    assert heard == [b"after"]
    assert cancelled == []


async def test_unreachable_redis_fails_fast_and_recovers() -> None:
    """Calls against a stopped server raise StoreUnavailable within the timeout (never
    hang); once the server is back, the same client works again without a restart."""
    server = RedisServer(free_port())
    client = RedisClient("127.0.0.1", server.port, timeout=0.5, backoff_max=0.2)
    with trio.fail_after(20):
        start = trio.current_time()
        with pytest.raises(StoreUnavailable, match="unavailable"):
            await client.call("PING")
        with pytest.raises(StoreUnavailable, match="unreachable"):  # inside the backoff
            await client.call("PING")
        assert trio.current_time() - start < 1.0
        assert not client.up
        server.start()
        try:
            while True:
                try:
                    assert await client.call("PING") == b"PONG"
                    break
                except StoreUnavailable:
                    await trio.sleep(0.05)
            assert client.up
            await client.call("SET", "k", "v")
            server.stop()
            with pytest.raises(StoreUnavailable):
                await client.call("GET", "k")
            server.start()
            while True:
                try:
                    # Restarted as documented (examples/deploy/redis.conf): it kept it.
                    assert await client.call("GET", "k") == b"v"
                    break
                except StoreUnavailable:
                    await trio.sleep(0.05)
        finally:
            server.stop()
            await client.aclose()


async def test_silent_redis_times_out() -> None:
    """A server that accepts but never answers: StoreUnavailable after the timeout."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    client = RedisClient("127.0.0.1", port, timeout=0.3)
    async with trio.open_nursery() as nursery:

        async def accept_and_hang() -> None:
            stream = await listener.accept()
            async with stream:
                await trio.sleep_forever()

        nursery.start_soon(accept_and_hang)
        with trio.fail_after(5):
            start = trio.current_time()
            with pytest.raises(StoreUnavailable, match=r"no answer within 0.3s"):
                await client.call("PING")
            assert 0.25 < trio.current_time() - start < 1.0
        nursery.cancel_scope.cancel()
    await listener.aclose()


async def test_error_replies_raise_redis_error(redis_url: str) -> None:
    store = RedisStore.from_url(redis_url)
    client = store.client
    with trio.fail_after(5):
        with pytest.raises(RedisError, match="unknown command"):
            await client.call("NOSUCHCOMMAND")
        assert await client.call("PING") == b"PONG"  # the connection is still in step
        replies = await client.pipeline([["SET", "a", "1"], ["INCR", "a"], ["GET", "a"]])
        assert replies == [b"OK", 2, b"2"]
    await client.aclose()


def test_open_store_urls() -> None:
    assert isinstance(open_store(None), MemoryStore)
    assert isinstance(open_store("memory://"), MemoryStore)
    made = open_store("redis://:s3cret@localhost:6390/2")
    assert isinstance(made, RedisStore)
    assert (made.client.host, made.client.port, made.client.db) == ("localhost", 6390, 2)
    assert made.client.password == "s3cret"
    with pytest.raises(ValueError, match="unknown store"):
        open_store("postgres://x")
    with pytest.raises(ValueError, match="bad database"):
        open_store("redis://localhost/x")
    assert (made.lease, made.timeout) == (6.0, 1.0)  # the defaults
    tuned = open_store("redis://localhost/0?lease=1.5&timeout=0.25")
    assert isinstance(tuned, RedisStore)
    assert (tuned.lease, tuned.timeout, tuned.client.timeout) == (1.5, 0.25, 0.25)
    with pytest.raises(ValueError, match=r"unknown option 'leese' .*known: timeout, lease"):
        open_store("redis://localhost/0?leese=1")
    for bad in ("0", "-1", "nan", "inf", "x", ""):
        with pytest.raises(ValueError, match="lease in the store URL: expected seconds > 0"):
            open_store(f"redis://localhost/0?lease={bad}")


async def test_task_snapshots(store: Store) -> None:
    snap = TaskSnapshot(
        task={"taskId": "t1", "status": "working"}, owner=None, replica="r", lease_until=1.5
    )
    later = TaskSnapshot(
        task={"taskId": "t2", "status": "completed"}, owner='"bob"', replica="r", lease_until=2
    )
    with trio.fail_after(5):
        assert await store.tasks.get("t1") is None
        await store.tasks.put("t1", snap, 60)
        assert await store.tasks.get("t1") == snap
        await store.tasks.put_many([("t2", later, 60), ("t1", later, 60)])
        assert await store.tasks.get("t1") == later == await store.tasks.get("t2")
        await store.tasks.put_many([])


async def test_tasks_owned_by_an_owner(store: Store) -> None:
    """The owner index behind a shared session's tasks/list: its live tasks only, updated in
    place, expired ones gone (Redis drops them from the index lazily)."""

    def snap(task_id: str, owner: str | None, status: str = "working") -> TaskSnapshot:
        task = {"taskId": task_id, "status": status}
        return TaskSnapshot(task=task, owner=owner, replica="r", lease_until=1.0)

    with trio.fail_after(10):
        assert await store.tasks.owned("session a") == []
        await store.tasks.put("a1", snap("a1", "session a"), 60)
        await store.tasks.put_many(
            [("a2", snap("a2", "session a"), 1), ("b1", snap("b1", "session b"), 60)]
        )
        await store.tasks.put("n1", snap("n1", None), 60)
        found = dict(await store.tasks.owned("session a"))
        assert sorted(found) == ["a1", "a2"]
        await store.tasks.put("a1", snap("a1", "session a", "completed"), 60)
        assert dict(await store.tasks.owned("session a"))["a1"].task["status"] == "completed"
        assert [i for i, _ in await store.tasks.owned("session b")] == ["b1"]
        await trio.sleep(2.1)  # a2's TTL (1 s, whole seconds in Redis) runs out
        assert [i for i, _ in await store.tasks.owned("session a")] == ["a1"]
        assert [i for i, _ in await store.tasks.owned("session a")] == ["a1"]
