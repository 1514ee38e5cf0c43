"""Legacy HTTP+SSE (2024-11-05) sessions across three replicas on one Redis behind HAProxy
(round-robin per request, issue 19): the official SDK's ``sse_client`` holds its GET /sse
stream on one replica while its POSTs /messages land on all three; each is routed through
the store's bus to the replica holding the stream, so the conversation (initialize, tools,
progress, resources, elicitation round trips) sees no 404 and loses nothing."""

from __future__ import annotations

import trio

from ..transports.app import init_body
from ..transports.http_client import connect, request
from .cluster import Cluster, run_sdk_client


async def sdk_sse_conversation(url: str) -> dict:
    report: dict = await run_sdk_client("sdk_sse_replica_client.py", url)
    return report


async def test_sdk_sse_client_through_haproxy_sees_no_404(cluster: Cluster) -> None:
    url = f"http://127.0.0.1:{cluster.port}/sse"
    before = {row["svname"]: int(row["stot"]) for row in cluster.servers()}
    outs: list[dict] = []

    async def one() -> None:
        outs.append(await sdk_sse_conversation(url))

    async with trio.open_nursery() as nursery:  # two sessions at once
        nursery.start_soon(one)
        nursery.start_soon(one)
    for out in outs:
        assert "errors" not in out, out["errors"]
        # The SDK offers its latest revision over the legacy transport too; it is agreed.
        assert out["initialize"] == "2025-11-25"
        assert "whoami" in out["tools"]
        # Every request runs where the session's stream is, whichever replica got the POST.
        assert len(set(out["who"])) == 1 and out["who"][0] in ("r0", "r1", "r2"), out["who"]
        assert out["add"] == [str(i + 1) for i in range(6)]
        assert out["count"] == f"counted to 3 on {out['who'][0]}"
        assert [p[0] for p in out["progress"]] == [1, 2, 3]
        assert out["resource"] == "welcome"
        assert out["confirm"] == ["accept:{'ok': True}"] * 3
        assert out["asked"] == ["ok 0?", "ok 1?", "ok 2?"]
        assert out["ping"] == {}
    backend = cluster.backend()
    assert int(backend["hrsp_4xx"]) == 0, cluster.logs()
    assert int(backend["hrsp_5xx"]) == 0, cluster.logs()
    # The POSTs were spread over all three replicas (round-robin): each got several.
    after = {row["svname"]: int(row["stot"]) for row in cluster.servers()}
    assert all(after[name] - before[name] >= 8 for name in after), (before, after)


async def test_unknown_or_ended_legacy_session_is_404_on_every_replica(cluster: Cluster) -> None:
    """A POST for a session no replica holds is 404 wherever it lands; once its stream
    closes, the session is gone for every replica."""
    address = ("127.0.0.1", cluster.port)
    with trio.fail_after(30):
        for _ in range(3):  # one per replica (round-robin)
            got = await request(address, "POST", "/messages?session_id=0123", body=init_body())
            assert got.status == 404, got
        conn = await connect(address)
        await conn.send("GET", "/sse", headers={"accept": "text/event-stream"})
        assert (await conn.head()).status == 200
        first = await conn.next_event()
        assert first is not None and first.event == "endpoint"
        endpoint = first.data
        for _ in range(3):
            got = await request(address, "POST", endpoint, body=init_body("2024-11-05"))
            assert got.status == 202, got
        # Its store record is never adopted as a Streamable HTTP session.
        session_id = endpoint.split("session_id=")[1]
        for _ in range(3):
            got = await request(
                address,
                "POST",
                headers={
                    "mcp-session-id": "sse:" + session_id,
                    "mcp-protocol-version": "2025-11-25",
                },
                body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            )
            assert got.status == 404, got
        await conn.aclose()
        statuses: list[int] = []
        for _ in range(50):  # the holder notices the closed stream and drops the record
            statuses = [
                (await request(address, "POST", endpoint, body=init_body("2024-11-05"))).status
                for _ in range(3)
            ]
            if statuses == [404, 404, 404]:
                break
            await trio.sleep(0.1)
        assert statuses == [404, 404, 404]
