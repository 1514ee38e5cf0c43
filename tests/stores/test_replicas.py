"""Three replicas on one Redis behind HAProxy (round-robin per request): the official SDK
client's handshake-era conversations see no 404 and lose nothing (issue 19)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
import trio

from .cluster import HERE, Cluster
from .servers import RedisServer


@pytest.fixture
def cluster(redis_server: RedisServer) -> Iterator[Cluster]:
    redis_server.flush()
    made = Cluster(redis_server.url)
    try:
        made.start()
        yield made
    finally:
        made.stop()


async def sdk_conversation(url: str) -> dict:
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, str(HERE / "sdk_replica_client.py"), url],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return json.loads(done.stdout)


async def test_sdk_conversations_through_haproxy_see_no_404(cluster: Cluster) -> None:
    before = int(cluster.backend()["stot"])
    seen = [await sdk_conversation(cluster.url) for _ in range(2)]
    for out in seen:
        assert out["initialize"] == "2025-11-25"
        assert "whoami" in out["tools"]
        # Requests of one session answered by every replica: nothing is sticky.
        assert set(out["who"]) == {"r0", "r1", "r2"}, out["who"]
        assert out["add"] == [str(i + 1) for i in range(6)]
        assert out["count"].startswith("counted to 3")
        assert [p[0] for p in out["progress"]] == [1, 2, 3]
        assert out["resource"] == "welcome"
        assert out["prompt"] == "Hello Ada"
        # Elicitation: the answer POST lands on another replica than the one that asks.
        assert out["confirm"] == ["accept:{'ok': True}"] * 3
        assert out["asked"] == ["ok 0?", "ok 1?", "ok 2?"]
        assert out["heard_list_changed"], out["notifications"]
        assert out["heard_prompts_changed"], out["notifications"]
        assert out["heard_updated"], out["notifications"]
        # Each list change heard once (one replica delivers a session's list changes).
        for method in ("tools", "prompts"):
            assert out["notifications"].count(f"notifications/{method}/list_changed") == 1
        assert "errors" not in out, out["errors"]
    backend = cluster.backend()
    # Every response through the balancer: no 4xx (no 404 for a session), no 5xx.
    assert int(backend["hrsp_4xx"]) == 0, cluster.logs()
    assert int(backend["hrsp_5xx"]) == 0, cluster.logs()
    assert int(backend["stot"]) - before > 60
    assert all(int(row["stot"]) > 15 for row in cluster.servers())
