"""What an idle session's GET stream holds of its HTTP connection (issue 22 item 4): no
nursery of its own (a waiting app's reader task runs in the listener's connection nursery)
and one cancel scope of the connection's, with hang-ups, requests that wait, DELETE and
shutdown still reaching it."""

from __future__ import annotations

import contextlib
import gc
import json

import h11
import trio

from runtime.eager import finish
from runtime.transports import HttpLimits
from runtime.transports.http._socket import SocketIO

from .app import make_app, modern, modern_headers, serving, until
from .http_client import connect, request
from .test_http_idle_sessions import _session_tasks
from .test_http_idle_streams import _open_get, _task_names
from .test_http_session import _h, open_session


def _connection_nurseries() -> int:
    """Nurseries opened by the HTTP connections' own tasks (trio's ``_run_handler``)."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    stack, count = [root], 0
    while stack:
        task = stack.pop()
        if task.name.endswith("_run_handler"):
            count += len(task.child_nurseries)
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


def _active_scopes() -> int:
    gc.collect()
    scopes = [o for o in gc.get_objects() if isinstance(o, trio.CancelScope)]
    return sum(1 for scope in scopes if " active" in repr(scope))


async def test_idle_get_streams_hold_no_nursery_and_two_cancel_scopes_each() -> None:
    """Per idle session with its GET stream: the connection's request generation and the
    stream's keep-alive tick, nothing more (four before: the connection's own scope around
    its generations and its nursery's too); the stream still carries changes and
    keep-alives."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, http_limits=HttpLimits(sse_keepalive=0.5)) as address:
            ids = [await open_session(address) for _ in range(12)]
            streams = [await _open_get(address, session_id) for session_id in ids[:4]]
            for stream in streams:
                assert await stream.next_event() is not None  # the priming event
            await until(lambda: _session_tasks() == 0)
            before = _active_scopes()
            streams += [await _open_get(address, session_id) for session_id in ids[4:]]
            for stream in streams[4:]:
                assert await stream.next_event() is not None
            await until(lambda: _session_tasks() == 0)
            await until(lambda: _task_names().count("_reader") == 0)  # (the watch stops it)
            assert _connection_nurseries() == 0
            # Nor the reader's parking lots, scope or end (made when a reader starts).
            gc.collect()
            held = [o for o in gc.get_objects() if isinstance(o, SocketIO)]
            assert len(held) >= 12
            assert all(io._lots is None and io._reader_scope is None for io in held)
            # (Other tests' servers in this process may start or end a scope meanwhile.)
            assert (_active_scopes() - before) / 8 < 2.5

            def later() -> str:
                return "later"

            app.add_tool(later)
            for stream in streams:
                event = await stream.next_event()
                assert event is not None
                assert json.loads(event.data)["method"] == "notifications/tools/list_changed"
            raw = b""
            while b": keep-alive\n\n" not in raw:
                event = await streams[0]._event()
                assert isinstance(event, h11.Data)
                raw += event.data
            for stream in streams:
                await stream.aclose()


async def test_a_hang_up_while_a_request_waits_is_seen_by_its_reader_task() -> None:
    """A modern request that waits starts its connection's reader task (now in the
    listener's nursery, not the connection's): the client hanging up cancels the request,
    the reader ends with its connection, and the server serves on."""
    app, seen = make_app()
    params = {"name": "slow", "arguments": {"tag": "gone", "seconds": 30}}
    with trio.fail_after(10):
        async with serving(app) as address:
            for round_ in range(3):
                conn = await connect(address)
                await conn.send(
                    "POST",
                    "/mcp",
                    headers=modern_headers("tools/call", "slow"),
                    body=modern(round_, "tools/call", params),
                )
                await until(lambda n=round_ + 1: len(seen["started"]) == n)
                assert _task_names().count("_reader") == 1
                assert _connection_nurseries() == 0
                await conn.aclose()
                await until(lambda n=round_ + 1: len(seen["cancelled"]) == n)
                await until(lambda: _task_names().count("_reader") == 0)
            response = await request(
                address,
                "POST",
                headers=modern_headers("tools/call", "add"),
                body=modern(9, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
            )
            assert response.status == 200
            assert response.json()["result"]["content"][0]["text"] == "5"


async def test_delete_and_shutdown_end_idle_get_streams() -> None:
    """DELETE ends its session's idle GET stream (the response's end reaches the client);
    shutdown ends the others' promptly."""
    app, _ = make_app(shutdown_grace=5)
    with trio.fail_after(10):
        async with serving(app) as address:
            ids = [await open_session(address) for _ in range(3)]
            streams = [await _open_get(address, session_id) for session_id in ids]
            for stream in streams:
                assert await stream.next_event() is not None
            await until(lambda: _session_tasks() == 0)
            response = await request(address, "DELETE", headers=_h(ids[0]))
            assert response.status == 200
            assert await streams[0].next_event() is None  # the stream ended
            started = trio.current_time()
            app.shutdown()
            for stream in streams[1:]:
                assert await stream.next_event() is None
            assert trio.current_time() - started < 2.0
            for stream in streams:
                await stream.aclose()


async def _read_until_closed(stream: trio.SocketStream) -> bytes:
    data = b""
    with contextlib.suppress(trio.BrokenResourceError):
        while chunk := await stream.receive_some(4096):
            data += chunk
    return data


async def test_a_connection_is_stopped_in_each_phase_through_its_one_scope() -> None:
    """With one scope at a time (its generation), a connection is still stopped by its
    phase deadlines: a head too slow gets 408, a keep-alive connection quiet too long is
    closed after its answer, and at shutdown an idle keep-alive connection closes at once."""
    app, _ = make_app(shutdown_grace=5)
    limits = HttpLimits(header_timeout=0.3, keep_alive_timeout=0.3)
    ping = (
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    )
    with trio.fail_after(10):
        async with serving(app, http_limits=limits) as a:
            slow = await trio.open_tcp_stream(*a)
            await slow.send_all(b"GET /healthz HTTP/1.1\r\nHost: 12")  # and no more
            started = trio.current_time()
            answer = await _read_until_closed(slow)
            assert answer.startswith(b"HTTP/1.1 408 "), answer
            assert 0.25 < trio.current_time() - started < 2.0
            await slow.aclose()

            quiet = await trio.open_tcp_stream(*a)
            await quiet.send_all(ping[0])
            started = trio.current_time()
            answer = await _read_until_closed(quiet)
            assert answer.startswith(b"HTTP/1.1 200 ") and answer.count(b"HTTP/1.1") == 1
            assert 0.25 < trio.current_time() - started < 2.0
            await quiet.aclose()

            idle = await trio.open_tcp_stream(*a)
            await idle.send_all(ping[1])
            first = await idle.receive_some(4096)
            assert first.startswith(b"HTTP/1.1 200 ")
            started = trio.current_time()
            app.shutdown()
            assert await _read_until_closed(idle) == b""
            assert trio.current_time() - started < 0.25  # not the keep-alive timeout
            await idle.aclose()


def _frames(task: trio.lowlevel.Task) -> list[str]:
    """The names of the coroutine and generator frames ``task`` is suspended in."""
    names: list[str] = []
    awaited: object = task.coro
    while awaited is not None:
        code = getattr(awaited, "cr_code", None) or getattr(awaited, "gi_code", None)
        if code is None:
            break
        names.append(code.co_name)
        if code is finish.__code__:  # (drives the suspended coroutine by send, not await)
            awaited = awaited.gi_frame.f_locals["coro"]  # type: ignore[attr-defined]
            continue
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return names


async def test_an_idle_get_streams_task_holds_a_short_chain_of_frames() -> None:
    """Each frame an idle GET stream's task is suspended in is held for as long as it
    idles (about 250 bytes each): the connection is served in one frame (``run``), and
    the app's suspended rest is driven by ``eager.finish`` with no frame around it."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            session_id = await open_session(address)
            stream = await _open_get(address, session_id)
            assert await stream.next_event() is not None
            await until(lambda: _session_tasks() == 0)
            await until(lambda: _task_names().count("_reader") == 0)
            root = trio.lowlevel.current_root_task()
            assert root is not None
            chains, todo = [], [root]
            while todo:
                task = todo.pop()
                if task.name.endswith("_run_handler"):
                    chains.append(_frames(task))
                for nursery in task.child_nurseries:
                    todo.extend(nursery.child_tasks)
            (chain,) = [c for c in chains if "pump" in c]
            ours = chain[: chain.index("watch") + 1]  # (then trio's wait_readable)
            # trio's _run_handler, handle, run, _serve_generation, _one_request, _run_app,
            # finish, _call_app, the endpoint's get, pump, watch (13 before: _serve and an
            # async def finish around the generator that drives the app's rest).
            assert len(ours) <= 11 and "_serve" not in ours, ours
            await stream.aclose()
