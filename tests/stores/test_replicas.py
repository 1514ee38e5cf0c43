"""Three replicas on one Redis behind HAProxy (round-robin per request): the official SDK
client's handshake-era conversations see no 404 and lose nothing (issue 19)."""

from __future__ import annotations

import h11
import trio

from ..transports.app import call, init_body
from ..transports.http_client import request
from .cluster import Cluster, run_sdk_client

VERSION = "2025-11-25"


def headers(session: str) -> dict[str, str]:
    return {"mcp-session-id": session, "mcp-protocol-version": VERSION}


async def sdk_conversation(url: str) -> dict:
    report: dict = await run_sdk_client("sdk_replica_client.py", url)
    return report


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


async def test_kill_9_of_one_replica_under_load(cluster: Cluster) -> None:
    """Six handshake sessions call tools through HAProxy while one replica is killed (-9):
    at most the requests in flight on it fail (one per client at most), every session goes
    on on the other two (adopted there), and nothing fails once HAProxy has seen it go."""
    address = ("127.0.0.1", cluster.port)
    results: list[tuple[float, int, int]] = []  # (time, client, status)
    killed_at: list[float] = []

    async def client(n: int) -> None:
        response = await request(address, "POST", body=init_body(VERSION))
        assert response.status == 200
        session = response.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await request(address, "POST", headers=headers(session), body=note)).status == 202
        request_id = 1
        end = trio.current_time() + 5.0
        while trio.current_time() < end:
            request_id += 1
            try:
                got = await request(
                    address,
                    "POST",
                    headers=headers(session),
                    body=call(request_id, "add", a=n, b=request_id),
                )
                status = got.status
                if status == 200:
                    assert got.json()["result"]["content"][0]["text"] == str(n + request_id)
            except (OSError, trio.BrokenResourceError, h11.RemoteProtocolError):
                status = 0  # the connection died with the replica
            results.append((trio.current_time(), n, status))

    async def killer() -> None:
        await trio.sleep(1.5)
        killed_at.append(trio.current_time())
        cluster.kill_replica(1)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(client, n)
            nursery.start_soon(killer)
    failed = [r for r in results if r[2] != 200]
    after = [r for r in results if r[0] > killed_at[0] + 1.5]
    print(
        f"requests={len(results)} failed={len(failed)} statuses="
        f"{sorted({r[2] for r in failed})} after_kill_ok={sum(r[2] == 200 for r in after)}"
    )
    assert len(failed) <= 6, failed
    assert all(r[2] == 200 for r in after), after
    for n in range(6):  # every session went on after the kill
        assert any(r[1] == n and r[2] == 200 for r in after), n
    assert sum(int(row["stot"]) > 0 for row in cluster.servers()) == 3
