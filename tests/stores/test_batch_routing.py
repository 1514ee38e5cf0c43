"""A 2025-03-26 JSON-RPC batch of client responses (answers to two sampling requests a tool
is waiting on) POSTed through HAProxy round-robin to three replicas on one Redis (issue 19):
the batch lands on another replica than the one running the tool, and each response is
routed there through the store's bus, so the tool completes with both answers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from ..transports.app import call
from ..transports.http_client import connect, request
from .cluster import Cluster

VERSION = "2025-03-26"  # the one revision with JSON-RPC batches


def answer(request_id: Any, text: str) -> dict[str, Any]:
    result = {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


@pytest.mark.parametrize("mixed", [False, True], ids=["responses", "responses-and-a-request"])
async def test_batch_of_responses_reaches_the_waiting_replica(
    cluster: Cluster, mixed: bool
) -> None:
    """``mixed``: the batch also carries a request (a ping), answered on that POST by the
    replica it landed on, while its responses still go to the waiting replica."""
    address = ("127.0.0.1", cluster.port)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    with trio.fail_after(60):
        got = await request(address, "POST", body=initialize)
        assert got.status == 200, got
        session = got.headers["mcp-session-id"]
        headers = {"mcp-session-id": session, "mcp-protocol-version": VERSION}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await request(address, "POST", headers=headers, body=note)).status == 202
        ran_on: list[str] = []
        for n in range(3):  # the tool's POST lands on each replica in turn
            stream = await connect(address)
            await stream.send("POST", "/mcp", headers=headers, body=call(10 + n, "sample_two"))
            head = await stream.head()
            assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
            asks: dict[str, Any] = {}
            while len(asks) < 2:
                event = await stream.next_event()
                assert event is not None
                if not event.data:
                    continue  # the priming event
                message = msgspec.json.decode(event.data)
                assert message["method"] == "sampling/createMessage", message
                asks[message["params"]["messages"][0]["content"]["text"]] = message["id"]
            # The next request through the balancer goes to another replica (round-robin).
            batch = [answer(asks["two"], f"B{n}"), answer(asks["one"], f"A{n}")]
            if mixed:
                batch.append({"jsonrpc": "2.0", "id": 90 + n, "method": "ping"})
            posted = await request(address, "POST", headers=headers, body=batch)
            if mixed:
                assert posted.status == 200, posted
                replies = msgspec.json.decode(posted.body)
                assert replies == [{"jsonrpc": "2.0", "id": 90 + n, "result": {}}], replies
            else:
                assert posted.status == 202, posted
            final = None
            while final is None:
                event = await stream.next_event()
                assert event is not None, "the tool's stream ended without its result"
                if event.data:
                    message = msgspec.json.decode(event.data)
                    if message.get("id") == 10 + n:
                        final = message
            await stream.aclose()
            text = final["result"]["content"][0]["text"]
            head_text, _, replica = text.partition(" on ")
            assert head_text == f"A{n}|B{n}", final
            ran_on.append(replica)
    assert sorted(ran_on) == ["r0", "r1", "r2"], ran_on
    backend = cluster.backend()
    assert int(backend["hrsp_4xx"]) == 0, cluster.logs()
    assert int(backend["hrsp_5xx"]) == 0, cluster.logs()
