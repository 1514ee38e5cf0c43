"""A handler ends its own SSE response stream early and the client resumes it with
``Last-Event-ID`` (2025-11-25 basic/transports "Resumability and Redelivery"; SEP-1699
polling): ``Context.close_sse_stream``, on the wire."""

from __future__ import annotations

from typing import Any

import trio

from runtime import Context, Server

from .app import call, init_body, serving
from .http_client import connect, request, sse_messages

app = Server("polling")


@app.tool
async def poll_me(ctx: Context) -> str:
    await ctx.report_progress(1, 2)
    closed = await ctx.close_sse_stream()
    await trio.sleep(0.2)  # the client reconnects meanwhile
    await ctx.report_progress(2, 2)
    return f"closed={closed}"


async def _session(address: Any) -> dict[str, str]:
    response = await request(address, "POST", body=init_body())
    headers = {
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await request(address, "POST", headers=headers, body=note)).status == 202
    return headers


async def test_the_handler_closes_its_stream_and_the_client_resumes_it() -> None:
    with trio.fail_after(10):
        async with serving(app) as address:
            headers = await _session(address)
            conn = await connect(address)
            accept = {"accept": "application/json, text/event-stream"}
            await conn.send(
                "POST", "/mcp", headers={**headers, **accept}, body=call(5, "poll_me", "tok")
            )
            assert (await conn.head()).headers["content-type"] == "text/event-stream"
            events = await conn.events()  # ends when the handler closes the stream
            await conn.aclose()
            assert events[0].data == "" and events[0].id  # the priming event
            assert [e.data for e in events[1:]] and "progress" in events[1].data
            assert all('"id":5' not in e.data for e in events)  # no answer yet
            resumed = await request(
                address, "GET", headers={**headers, "last-event-id": events[-1].id}
            )
            messages = sse_messages(resumed.body)
            assert messages[0]["params"]["progress"] == 2
            assert messages[-1]["id"] == 5
            assert messages[-1]["result"]["content"][0]["text"] == "closed=True"


async def test_without_a_resumable_stream_it_is_a_no_op() -> None:
    from runtime.testing import open_client

    with trio.fail_after(10):
        async with open_client(app) as client:  # an in-memory stream: nothing to close
            result = await client.call_tool("poll_me")
    assert result["content"][0]["text"] == "closed=False"


async def test_the_served_file_sets_the_retry_interval_and_the_store() -> None:
    from runtime.transports import HttpLimits, MemoryEventStore

    store = MemoryEventStore(10)
    configured = Server("configured", http_limits=HttpLimits(sse_retry_ms=123), event_store=store)

    @configured.tool
    async def tick(ctx: Context) -> str:
        await ctx.report_progress(1)
        return "ok"

    with trio.fail_after(10):
        async with serving(configured) as address:
            headers = await _session(address)
            accept = {"accept": "application/json, text/event-stream"}
            response = await request(
                address, "POST", headers={**headers, **accept}, body=call(3, "tick", "t")
            )
            assert store._counters  # the events went to the given store
    assert response.body.startswith(b"id: ") and b"\nretry: 123\n" in response.body


async def test_prefer_sse_answers_every_session_request_as_a_stream() -> None:
    from runtime.transports import HttpLimits

    eager = Server("eager", http_limits=HttpLimits(prefer_sse=True))

    @eager.tool
    def add(a: int, b: int) -> int:
        return a + b

    both = {"accept": "application/json, text/event-stream"}
    with trio.fail_after(10):
        async with serving(eager) as address:
            headers = await _session(address)
            streamed = await request(
                address, "POST", headers={**headers, **both}, body=call(4, "add", a=1, b=2)
            )
            assert streamed.headers["content-type"] == "text/event-stream"
            assert streamed.body.startswith(b"id: ")  # resumable: a priming event first
            assert sse_messages(streamed.body)[-1]["result"]["content"][0]["text"] == "3"
            json_only = await request(
                address,
                "POST",
                headers={**headers, "accept": "application/json"},
                body=call(5, "add", a=1, b=2),
            )
            assert json_only.headers["content-type"] == "application/json"
