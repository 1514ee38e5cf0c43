"""The GrantStore contract, on memory and on a real Redis: a value taken once, the first
``add`` wins, a bounded group."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from runtime.stores import GrantStore, MemoryGrantStore, RedisClient, RedisGrantStore
from tests.stores.servers import RedisServer

pytestmark = pytest.mark.trio


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[GrantStore]:
    if request.param == "memory":
        yield MemoryGrantStore()
        return
    server = request.getfixturevalue("redis")
    server.flush()
    client = RedisClient("127.0.0.1", server.port, 0, None, timeout=2.0)
    try:
        yield RedisGrantStore(client, "t:")
    finally:
        await client.aclose()


async def test_a_value_is_taken_by_exactly_one_of_many(store: GrantStore) -> None:
    with trio.fail_after(10):
        for round_ in range(5):
            await store.put(f"code:{round_}", b"grant", 60)
            got: list[bytes | None] = []

            async def take(key: str, into: list[bytes | None]) -> None:
                into.append(await store.take(key))

            async with trio.open_nursery() as nursery:
                for _ in range(20):
                    nursery.start_soon(take, f"code:{round_}", got)
            assert got.count(b"grant") == 1 and got.count(None) == 19
            assert await store.get(f"code:{round_}") is None


async def test_add_keeps_the_first_and_values_expire(store: GrantStore) -> None:
    with trio.fail_after(10):
        assert await store.add("key:1", b"first", 60) is True
        assert await store.add("key:1", b"second", 60) is False
        assert await store.get("key:1") == b"first"
        await store.put("short", b"x", 0.05)
        await trio.sleep(0.2)
        assert await store.get("short") is None
        await store.delete("key:1")
        assert await store.get("key:1") is None


async def test_a_group_is_bounded_and_renews_its_members(store: GrantStore) -> None:
    with trio.fail_after(10):
        assert all([await store.join("clients", f"c{i}", 60, 3) for i in range(3)])
        assert await store.join("clients", "c3", 60, 3) is False
        assert await store.join("clients", "c1", 60, 3) is True  # a member renews
        await store.leave("clients", "c0")
        assert await store.join("clients", "c3", 60, 3) is True
        assert await store.join("brief", "a", 0.05, 1) is True
        await trio.sleep(0.2)
        assert await store.join("brief", "b", 60, 1) is True  # the expired one left


async def test_the_endpoints_answer_503_while_the_store_is_unreachable() -> None:
    from runtime.auth import RouteRequest
    from runtime.authserver import AuthorizationServer, DevStaticUsers
    from tests.stores.servers import free_port

    client = RedisClient("127.0.0.1", free_port(), 0, None, timeout=0.5)  # nobody there
    server = AuthorizationServer(
        issuer="http://127.0.0.1:1",
        resource="http://127.0.0.1:1/mcp",
        upstream=DevStaticUsers(["a"]),
        store=RedisGrantStore(client),
    )
    register = server.routes()["/register"]
    with trio.fail_after(10):
        answer = await register(
            RouteRequest(
                "POST",
                "/register",
                {"content-type": "application/json"},
                b'{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}',
            )
        )
    assert answer.status == 503
    assert ("Retry-After", "1") in answer.headers
    assert b"temporarily_unavailable" in answer.body
    await client.aclose()
