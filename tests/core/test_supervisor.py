"""The connection supervisor: overload, cancellation, timeouts, isolation, shutdown."""

from __future__ import annotations

import gc
import tracemalloc

import trio

from runtime import Limits, Server

from ..wire import open_memory_peer


def _server(**limits: object) -> tuple[Server, list[str], list[str]]:
    app = Server("supervisor-test", limits=Limits(**limits))  # type: ignore[arg-type]
    started: list[str] = []
    finished: list[str] = []

    @app.tool
    async def slow(tag: str, seconds: float = 30.0) -> str:
        started.append(tag)
        try:
            await trio.sleep(seconds)
            return tag
        finally:
            finished.append(tag)

    @app.tool
    async def echo(text: str) -> str:
        return text

    return app, started, finished


def _call(request_id: object, name: str, **arguments: object) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def test_thousand_slow_requests_are_answered_or_refused_at_once() -> None:
    app, started, finished = _server(max_in_flight=64)
    tracemalloc.start()
    try:
        with trio.fail_after(20):
            async with open_memory_peer(app) as peer:
                await peer.initialize()  # 2025-11-25 lifecycle: requests follow it
                before = tracemalloc.get_traced_memory()[0]
                for i in range(1000):
                    await peer.send(_call(i, "slow", tag=str(i), seconds=30.0))
                refusals = [await peer.receive() for _ in range(1000 - 64)]
                # Refused at once, while 64 handlers are still sleeping.
                assert {r["error"]["code"] for r in refusals} == {-32010}
                assert all(r["error"]["data"] == {"maxInFlight": 64} for r in refusals)
                assert {r["id"] for r in refusals} == set(range(64, 1000))
                await trio.testing.wait_all_tasks_blocked()
                assert len(started) == 64 and not finished
                gc.collect()
                grown = tracemalloc.get_traced_memory()[0] - before
                # Bounded: 64 handler tasks and their scopes, not 1000 queued requests.
                assert grown < 4 * 1024 * 1024, grown
                # The connection still answers.
                await peer.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
                assert (await peer.receive())["id"] == "ping"
    finally:
        tracemalloc.stop()
    # Closing the connection cancelled the sleepers, and their finally blocks ran.
    assert len(finished) == 64


async def test_cancelled_request_stops_and_gets_no_response() -> None:
    app, started, finished = _server()
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()  # 2025-11-25 lifecycle: requests follow it
            await peer.send(_call("victim", "slow", tag="victim"))
            await trio.testing.wait_all_tasks_blocked()
            assert started == ["victim"]
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": "victim", "reason": "user gave up"},
                }
            )
            await peer.send(_call("after", "echo", text="next"))
            reply = await peer.receive()
            # The first thing to come back is the later call: nothing for the cancelled one.
            assert reply["id"] == "after"
            assert finished == ["victim"]
            await peer.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert (await peer.receive())["id"] == "p"


async def test_request_timeout_answers_minus_32001() -> None:
    app, _started, finished = _server(request_timeout=0.2)
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()  # 2025-11-25 lifecycle: requests follow it
            await peer.send(_call(1, "slow", tag="t", seconds=30.0))
            reply = await peer.receive()
            assert reply["id"] == 1
            assert reply["error"]["code"] == -32001
            assert finished == ["t"]


async def test_batch_item_timeout_and_failure_spoil_only_themselves() -> None:
    app, _started, _finished = _server(request_timeout=0.2)

    @app.tool
    async def crash() -> str:
        raise ValueError("boom")

    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()  # 2025-11-25 lifecycle: requests follow it
            await peer.send(
                [
                    _call(1, "slow", tag="x", seconds=30.0),
                    _call(2, "echo", text="fine"),
                    _call(3, "crash"),
                    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": 5}},
                ]
            )
            replies = {r["id"]: r for r in await peer.receive()}
            assert replies[1]["error"]["code"] == -32001
            assert replies[2]["result"]["content"][0]["text"] == "fine"
            assert replies[3]["result"]["isError"] is True
            assert replies[4]["error"]["code"] == -32602
            assert replies[4]["error"]["data"]["path"] == "params.name"


async def test_duplicate_in_flight_id_is_refused() -> None:
    app, _started, _finished = _server()
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()  # 2025-11-25 lifecycle: requests follow it
            await peer.send(_call(7, "slow", tag="a"))
            await peer.send(_call(7, "echo", text="b"))
            reply = await peer.receive()
            assert reply["id"] == 7 and reply["error"]["code"] == -32600
            assert "Duplicate" in reply["error"]["message"]


async def test_one_connection_failing_does_not_disturb_another() -> None:
    app, _started, _finished = _server()
    with trio.fail_after(10):
        async with open_memory_peer(app) as good, open_memory_peer(app) as bad:
            await good.initialize()
            await bad.initialize()
            await good.send(_call(1, "slow", tag="g", seconds=0.3))
            await bad.send_bytes(b"\xff\xfe garbage \x00\n")
            assert (await bad.receive())["error"]["code"] == -32700
            await bad.send_stream.aclose()
            reply = await good.receive()
            assert reply["result"]["content"][0]["text"] == "g"


async def test_graceful_shutdown_lets_in_flight_finish_then_cancels() -> None:
    app, _started, finished = _server(shutdown_grace=0.5)
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()  # 2025-11-25 lifecycle: requests follow it
            await peer.send(_call("quick", "slow", tag="quick", seconds=0.1))
            await peer.send(_call("long", "slow", tag="long", seconds=30.0))
            await trio.testing.wait_all_tasks_blocked()
            # serve_connection has no shutdown event here; use a TCP server for that path.
            reply = await peer.receive()
            assert reply["id"] == "quick"
    assert "long" in finished


async def test_tcp_shutdown_drains_within_grace() -> None:
    app, _started, finished = _server(shutdown_grace=1.0)
    from ..wire import RawPeer

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            address = await nursery.start(app.serve_tcp)
            stream = await trio.open_tcp_stream(*address[:2])
            peer = RawPeer(stream, stream, "ndjson")
            await peer.initialize()
            await peer.send(_call("q", "slow", tag="q", seconds=0.3))
            await peer.send(_call("l", "slow", tag="l", seconds=30.0))
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            app.shutdown()
            reply = await peer.receive()
            assert reply["id"] == "q"  # finished within the grace period
            reply = await peer.receive()  # cut short after it, and still answered (issue 16)
            assert reply["id"] == "l" and reply["error"]["code"] == -32000, reply
            with trio.fail_after(3):
                assert await stream.receive_some(100) == b""  # then the connection closes
            elapsed = trio.current_time() - start
            assert 0.9 <= elapsed < 3
            assert finished == ["q", "l"]
        # serve_tcp returned by itself: it stopped accepting.


async def test_peer_that_stops_reading_is_closed_after_the_write_timeout() -> None:
    from runtime.framing import NdjsonFramer
    from runtime.transports import FramedChannel

    app, _started, _finished = _server(write_timeout=0.3)
    client, server_end = trio.testing.lockstep_stream_pair()
    channel = FramedChannel(server_end, server_end, NdjsonFramer())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            done = trio.Event()

            async def serve() -> None:
                await app.serve_connection(channel)
                done.set()

            nursery.start_soon(serve)
            await client.send_all(
                b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
                b'"params":{"name":"echo","arguments":{"text":"x"}}}\n'
            )
            start = trio.current_time()
            await done.wait()  # the reply cannot be written: the client never reads
            assert 0.25 <= trio.current_time() - start < 3
