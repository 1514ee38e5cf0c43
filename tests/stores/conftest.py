from __future__ import annotations

from collections.abc import Iterator

import pytest

from .cluster import Cluster
from .servers import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One real redis-server for the test session, on a free loopback port."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis_server.flush()
    return redis_server.url


@pytest.fixture
def cluster(redis_server: RedisServer) -> Iterator[Cluster]:
    """Three ``mcp-runtime serve`` replicas on a flushed Redis behind HAProxy (round-robin)."""
    redis_server.flush()
    made = Cluster(redis_server.url)
    try:
        made.start()
        yield made
    finally:
        made.stop()
