"""A request POSTed to a handshake-era session and run in its POST's own task holds a
``DirectSlot``: its response stream is made only when a message comes before its answer or
the stream is cut (issue 22 target 1: most are answered as JSON with nothing before)."""

from __future__ import annotations

import json
import sys

import trio

from runtime.core import Session
from runtime.stores import MemoryEventStore
from runtime.transports import HttpLimits
from runtime.transports.http._session import HttpSession

from .app import call, make_app, serving
from .http_client import connect, request
from .test_http_session import _h, open_session

KEY = (int, 7)


def _session(store: MemoryEventStore | None = None) -> HttpSession:
    return HttpSession(
        "s" * 32, None, Session("http"), store or MemoryEventStore(), HttpLimits(), 4
    )


async def test_a_slot_answered_without_messages_makes_no_stream() -> None:
    session = _session()
    slot = session.open_direct(KEY)
    assert slot is not None and slot.stream is None
    assert session.open_direct(KEY) is None  # the id is in flight
    assert session.open_stream([KEY]) is None  # for a fed POST too
    session.close_direct(slot)
    assert slot.stream is None and list(session.streams) == ["g0"]
    assert sys.getsizeof(session._by_key) == sys.getsizeof({})
    again = session.open_direct(KEY)  # the id is free once answered
    assert again is not None


async def test_a_message_before_the_answer_makes_the_stream_and_wakes_the_writer() -> None:
    store = MemoryEventStore()
    session = _session(store)
    slot = session.open_direct(KEY)
    assert slot is not None
    woken: list[bool] = []
    slot.on_message = lambda: woken.append(True)
    # A notification related to the request goes to its stream, made now, not the GET's.
    await session.route([(b'{"jsonrpc":"2.0","method":"notifications/progress"}', 7)])
    stream = slot.stream
    assert stream is not None and woken == [True]
    assert stream.id in session.streams and stream.pending == {KEY}
    queued = stream.take_nowait()
    assert queued is not None and queued[0] is not None  # stored: resumable
    assert session.standing.take_nowait() is None
    # Its stored events: the lazily made priming event, then the notification.
    assert [data is None for _, _, data in store._events[session.id]] == [True, False]
    # The answer routed to it ends the stream and frees the index.
    await session.route([(b'{"jsonrpc":"2.0","id":7,"result":{}}', None)])
    assert stream.done and sys.getsizeof(session._by_key) == sys.getsizeof({})


async def test_a_cut_or_a_cancellation_reaches_a_slot() -> None:
    session = _session()
    slot = session.open_direct(KEY)
    assert slot is not None
    assert session.cut_stream(7)  # Context.close_sse_stream: the stream is made to be cut
    assert slot.stream is not None and slot.stream.cut_requested
    other = session.open_direct((int, 8))
    assert other is not None
    session.cancelled(8)  # no stream yet: the id is free, nothing else to end
    assert other.stream is None and session.open_direct((int, 8)) is not None
    session.cancelled(7)
    assert slot.stream.done


async def test_session_posts_over_the_wire_json_then_sse_then_json() -> None:
    """Over a real socket: a plain call answered as JSON, one that sends progress first
    answered as SSE (priming event, progress, result, all with ids), then JSON again."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            plain = await request(
                address, "POST", headers=_h(session_id), body=call(1, "add", a=2, b=3)
            )
            assert plain.headers["content-type"] == "application/json"
            assert set(plain.json()) == {"jsonrpc", "id", "result"} and plain.json()["id"] == 1
            assert plain.json()["result"]["content"][0]["text"] == "5"
            conn = await connect(address)
            await conn.send("POST", "/mcp", headers=_h(session_id), body=call(2, "countdown", "t"))
            head = await conn.head()
            assert head.headers["content-type"] == "text/event-stream"
            events = await conn.events()
            await conn.aclose()
            assert all(event.id for event in events)
            last = json.loads(events[-1].data)
            assert last["id"] == 2 and last["result"]["content"][0]["text"] == "liftoff"
            again = await request(
                address, "POST", headers=_h(session_id), body=call(2, "add", a=1, b=1)
            )
            assert again.status == 200 and again.json()["result"]["content"][0]["text"] == "2"
