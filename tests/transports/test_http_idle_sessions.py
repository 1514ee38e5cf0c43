"""Idle handshake-era sessions hold no task of their own (issue 22 item 4): the session's
core connection is served in rounds, only while a POST fed it input, a task of its own runs,
or it ends; an idle session with its GET stream open is that stream's task alone."""

from __future__ import annotations

import gc
import json
import sys

import h11
import trio

from runtime.core import Session
from runtime.stores import MemoryEventStore
from runtime.transports import HttpLimits
from runtime.transports.http._session import HttpSession

from .app import call, init_body, make_app, serving, until
from .http_client import connect, request, sse_messages
from .test_http_idle_streams import _open_get, _task_names
from .test_http_session import _h, open_session

#: A session's tasks: its round (``SessionRegistry._run``), its reader generations and the
#: tasks its connection starts.
SESSION_TASKS = ("_run", "_generation", "_run_hosted")


def _session_tasks() -> int:
    return sum(_task_names().count(name) for name in SESSION_TASKS)


async def test_idle_sessions_hold_no_task_yet_get_changes_cancellations_and_end() -> None:
    app, seen = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            ids = [await open_session(address) for _ in range(3)]
            streams = [await _open_get(address, session_id) for session_id in ids]
            for stream in streams:
                assert await stream.next_event() is not None  # the priming event
            await until(lambda: _session_tasks() == 0)
            tasks = len(_task_names())

            # A change reaches every idle session's GET stream.
            def later() -> str:
                return "later"

            app.add_tool(later)
            for stream in streams:
                event = await stream.next_event()
                assert event is not None
                assert json.loads(event.data)["method"] == "notifications/tools/list_changed"

            # A cancellation POSTed to an idle session (read in a round of its own) reaches
            # the request another POST runs.
            conn = await connect(address)
            await conn.send("POST", "/mcp", headers=_h(ids[0]), body=call(5, "slow", tag="x"))
            await until(lambda: seen["started"])
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 5, "reason": "test"},
            }
            accepted = await request(address, "POST", headers=_h(ids[0]), body=cancel)
            assert accepted.status == 202
            response = await conn.response()
            await conn.aclose()
            assert seen["cancelled"] == ["x"] and response.status in (200, 204)
            await until(lambda: _session_tasks() == 0)

            # DELETE of an idle session ends its GET stream; the session is gone.
            deleted = await request(address, "DELETE", headers=_h(ids[1]))
            assert deleted.status == 200
            assert await streams[1].events() == []
            gone = await request(address, "POST", headers=_h(ids[1]), body=call(6, "add", a=1, b=2))
            assert gone.status == 404
            await streams[1].aclose()
            await until(lambda: len(_task_names()) <= tasks - 1)

            # The others still answer, and shutdown ends idle sessions (and their streams) at
            # once, not after a grace.
            answered = await request(
                address, "POST", headers=_h(ids[2]), body=call(7, "add", a=1, b=2)
            )
            assert answered.json()["result"]["content"][0]["text"] == "3"
            started = trio.current_time()
            app.shutdown()
            for stream in (streams[0], streams[2]):
                assert await stream.events() == []
                await stream.aclose()
            assert trio.current_time() - started < 2.0


async def test_a_2025_03_26_batch_is_read_by_an_idle_session_and_answered() -> None:
    """A batch is fed to the session's connection (not run in the POST's task): the idle
    connection reads it in a round, runs a suspending item there, and goes idle again."""
    app, _ = make_app()
    batch = [call(1, "add", a=1, b=1), call(2, "countdown", start=2)]
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address, "2025-03-26")
            await until(lambda: _session_tasks() == 0)
            for _ in range(2):
                response = await request(
                    address, "POST", headers={"mcp-session-id": session_id}, body=batch
                )
                assert response.status == 200
                replies = {r["id"]: r for r in response.json()}
                assert replies[1]["result"]["content"][0]["text"] == "2"
                assert replies[2]["result"]["content"][0]["text"] == "liftoff"
                await until(lambda: _session_tasks() == 0)


def _cancel_scopes() -> int:
    """Cancel scopes entered and not yet left (their repr says so: ``active``)."""
    gc.collect()
    scopes = [o for o in gc.get_objects() if isinstance(o, trio.CancelScope)]
    return sum(1 for scope in scopes if " active" in repr(scope))


async def test_an_idle_session_with_its_get_stream_holds_few_cancel_scopes() -> None:
    """Per idle session with its GET stream: the HTTP connection's one (its request
    generation; no nursery of its own), the stream's one tick (no scope around the
    ticks) and no more, each a few hundred bytes (issue 22 item 4). It still carries keep-alives."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, http_limits=HttpLimits(sse_keepalive=1.0)) as address:
            ids = [await open_session(address) for _ in range(16)]
            streams = [await _open_get(address, session_id) for session_id in ids[:8]]
            await until(lambda: _session_tasks() == 0)
            before = _cancel_scopes()
            streams += [await _open_get(address, session_id) for session_id in ids[8:]]
            for stream in streams:
                assert await stream.next_event() is not None  # the priming event
            await until(lambda: _session_tasks() == 0)
            # (Other tests' servers in this process may start or end a scope meanwhile.)
            assert (_cancel_scopes() - before) / 8 < 2.5
            raw = b""
            while b": keep-alive\n\n" not in raw:
                event = await streams[-1]._event()
                assert isinstance(event, h11.Data)
                raw += event.data
            for stream in streams:
                await stream.aclose()


async def test_an_initialize_answered_as_json_stores_no_event() -> None:
    """No client can resume a JSON answer (it carries no event id), so the initialize
    answer and a priming event for it are not kept in the replay store (issue 22 item 4):
    an idle session's store holds its GET stream's priming event alone. An SSE-only client
    still gets a resumable initialize stream."""
    app, _ = make_app()
    store = MemoryEventStore()
    with trio.fail_after(10):
        async with serving(app, event_store=store) as address:
            session_id = await open_session(address)
            stream = await _open_get(address, session_id)
            prime = await stream.next_event()
            assert prime is not None and prime.id is not None
            events = store._events[session_id]
            assert [data for _, _, data in events] == [None]  # the GET's priming event
            # SSE only: the answer is an event after a priming one, both stored.
            sse = await request(
                address, "POST", body=init_body(), headers={"accept": "text/event-stream"}
            )
            assert sse.status == 200 and sse.headers["content-type"] == "text/event-stream"
            messages = sse_messages(sse.body)
            assert messages[0]["result"]["protocolVersion"] == "2025-11-25"
            stored = store._events[sse.headers["mcp-session-id"]]
            assert [data is None for _, _, data in stored] == [True, False]
            await stream.aclose()


async def test_a_session_frees_its_emptied_stream_index() -> None:
    """The index of POST streams by request id keeps no table once empty (160 bytes per
    idle session that answered a POST, issue 22 item 4), on both ways a stream ends."""
    session = HttpSession("s" * 32, None, Session("http"), MemoryEventStore(), HttpLimits(), 4)
    empty = sys.getsizeof({})
    direct = session.open_stream([(int, 1)])
    assert direct is not None and sys.getsizeof(session._by_key) > empty
    session.close_stream(direct)  # answered by its POST's own task
    assert sys.getsizeof(session._by_key) == empty
    routed = session.open_stream([(int, 2)])
    assert routed is not None
    await session.route([(b'{"jsonrpc":"2.0","id":2,"result":{}}', None)])
    assert routed.done and sys.getsizeof(session._by_key) == empty
