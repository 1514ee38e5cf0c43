"""The WebSocket server's own wsproto loop (runtime/transports/_wsproto.py; issue 22 item 4):
pings from the client, the closing handshake, control frames between fragments, writes from
two tasks at once, a plain HTTP request, and what an idle socket holds in trio's task tree.
Raw wsproto peers on 127.0.0.1 (tests/transports/raw_ws.py) check the frames on the wire."""

from __future__ import annotations

import json

import trio
from wsproto.events import CloseConnection, Ping, Pong, TextMessage

from runtime.transports import HttpLimits

from .app import call, init_body, make_app, serving
from .raw_ws import open_raw_websocket

PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
PONG = '{"jsonrpc":"2.0","id":1,"result":{}}'


async def test_a_ping_from_the_client_is_answered_with_its_pong() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, "ws", http_limits=HttpLimits(ws_ping_interval=None)) as address:
            raw = await open_raw_websocket(address)
            for payload in (b"one", b"", b"x" * 125):  # 125: the largest control payload
                await raw.send(Ping(payload=payload))
                event = await raw.next_event()
                assert isinstance(event, Pong), event
                assert bytes(event.payload) == payload
            await raw.send(TextMessage(data=PING))  # the socket still serves
            event = await raw.next_event()
            assert isinstance(event, TextMessage) and event.data == PONG, event


async def test_a_close_from_the_client_is_answered_then_tcp_closed() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, "ws") as address:
            raw = await open_raw_websocket(address)
            await raw.send(CloseConnection(code=1000, reason="bye"))
            event = await raw.next_event()
            # RFC 6455 section 5.5.1: the endpoint echoes the status code it received.
            assert isinstance(event, CloseConnection) and event.code == 1000, event
            assert await raw.next_event() is None  # the server closed TCP (section 7.1.1)


async def test_pings_between_the_fragments_of_a_message() -> None:
    app, _ = make_app()
    limits = HttpLimits(ws_message_timeout=5.0, ws_ping_interval=None)
    with trio.fail_after(10):
        async with serving(app, "ws", http_limits=limits) as address:
            raw = await open_raw_websocket(address)
            third = len(PING) // 3
            pieces = [PING[:third], PING[third : 2 * third], PING[2 * third :]]
            pongs = []
            for index, piece in enumerate(pieces):
                await raw.send(TextMessage(data=piece, message_finished=index == 2))
                if index < 2:  # control frames may come between fragments (section 5.4)
                    await raw.send(Ping(payload=b"%d" % index))
                    event = await raw.next_event()
                    assert isinstance(event, Pong), event
                    pongs.append(bytes(event.payload))
            event = await raw.next_event()
            assert isinstance(event, TextMessage) and event.data == PONG, event
            assert pongs == [b"0", b"1"]


async def test_a_ping_written_while_a_big_reply_is_stuck_goes_out_after_it() -> None:
    """The sweep's ping is written while the reply to a 3 MiB request is blocked on a peer
    that does not read: the ping's frame waits for the reply's (never inside it)."""
    app, _ = make_app(max_frame_size=8 * 1024 * 1024)
    limits = HttpLimits(ws_ping_interval=0.2, ws_ping_timeout=5.0)
    big_id = "i" * (3 * 1024 * 1024)
    with trio.fail_after(20):
        async with serving(app, "ws", http_limits=limits) as address:
            raw = await open_raw_websocket(address)
            request = json.dumps({"jsonrpc": "2.0", "id": big_id, "method": "ping"})
            await raw.send(TextMessage(data=request))
            await trio.sleep(1.0)  # five ping intervals with the reply stuck in the socket
            seen: list[str] = []
            parts: list[str] = []
            while len(seen) < 2 or seen[-1] != "ping":
                event = await raw.next_event()
                if isinstance(event, Ping):
                    await raw.send(event.response())
                    seen.append("ping" if not parts else "ping inside the reply")
                    continue
                assert isinstance(event, TextMessage), event
                parts.append(event.data)  # wsproto hands a big message over in pieces
                if event.message_finished:
                    reply = json.loads("".join(parts))
                    assert reply == {"jsonrpc": "2.0", "id": big_id, "result": {}}
                    parts.clear()
                    seen.append("reply")
            assert seen.count("reply") == 1, seen
            await raw.send(TextMessage(data=PING))
            while isinstance(event := await raw.next_event(), Ping):
                await raw.send(event.response())
            assert isinstance(event, TextMessage) and event.data == PONG, event


async def test_a_plain_http_request_gets_an_http_refusal() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, "ws") as (host, port):
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(
                b"GET /mcp HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port)
            )
            answer = b""
            while data := await stream.receive_some(4096):
                answer += data
            assert answer.startswith(b"HTTP/1.1 400 "), answer
            await stream.aclose()


def _tree() -> tuple[int, int]:
    """(tasks, nurseries) under trio's root task."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    tasks = nurseries = 0
    stack = [root]
    while stack:
        task = stack.pop()
        tasks += 1
        for nursery in task.child_nurseries:
            nurseries += 1
            stack.extend(nursery.child_tasks)
    return tasks, nurseries


async def test_an_idle_socket_holds_two_tasks_and_one_nursery() -> None:
    """The connection's handler task and its reader (which feeds wsproto), in the requests
    nursery: no reader task, nursery or channel of a WebSocket library's own."""
    app, _ = make_app()
    count = 8
    limits = HttpLimits(ws_ping_interval=None)
    with trio.fail_after(10):
        async with serving(app, "ws", http_limits=limits) as address:
            await trio.sleep(0.1)
            before = _tree()
            sockets = []
            for index in range(count):
                raw = await open_raw_websocket(address)
                await raw.send(TextMessage(data=json.dumps(init_body(request_id=index))))
                event = await raw.next_event()
                assert isinstance(event, TextMessage) and '"result"' in event.data, event
                sockets.append(raw)
            await trio.sleep(0.2)
            after = _tree()
            assert after[0] - before[0] == 2 * count, (before, after)
            assert after[1] - before[1] == count, (before, after)
            for raw in sockets:
                await raw.stream.aclose()


async def test_a_peer_that_floods_pings_but_never_reads_is_cut_off() -> None:
    """Pongs wait behind a write the peer does not take, up to a bound (BACKLOG_LIMIT, 64 KiB):
    past it the socket is closed (in seconds, not the 30 s write timeout) and the server
    serves on."""
    app, _ = make_app()
    limits = HttpLimits(ws_ping_interval=None)
    with trio.fail_after(20):
        async with serving(app, "ws", http_limits=limits) as address:
            raw = await open_raw_websocket(address)
            # Progress notifications are written by the tool's own task, not the reader: 200,000
            # of them fill the socket's buffers while the reader still reads.
            await raw.send(TextMessage(data=json.dumps(init_body())))
            event = await raw.next_event()
            assert isinstance(event, TextMessage) and '"result"' in event.data, event
            request = call(2, "countdown", progress="p", start=200_000, delay=0)
            await raw.send(TextMessage(data=json.dumps(request)))
            await trio.sleep(0.8)  # the notifications are stuck in the socket now
            started = trio.current_time()
            try:
                for _ in range(1000):  # 1000 pongs of 127 bytes would be 124 KiB
                    await raw.send(Ping(payload=b"p" * 125))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            while (event := await raw.next_event()) is not None:
                # Notifications and maybe some pongs, then the end (no 30 s write timeout).
                assert isinstance(event, TextMessage | Pong), event
            assert trio.current_time() - started < 10
            again = await open_raw_websocket(address)
            await again.send(TextMessage(data=PING))
            event = await again.next_event()
            assert isinstance(event, TextMessage) and event.data == PONG, event
