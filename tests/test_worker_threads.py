"""issue 16 item 2: plain ``def`` handlers run in worker threads; a client that abandons slow
ones (hangs up, cancels, times out) must not starve other clients of threads."""

from __future__ import annotations

import threading
import time

import trio

from runtime import Limits, Server

from .wire import open_memory_peer


def make_app(**limits: int) -> tuple[Server, threading.Event]:
    app = Server("threads", "0", limits=Limits(**limits))
    release = threading.Event()

    @app.tool
    def block(seconds: float = 5.0) -> str:
        """Hold a worker thread (Python cannot interrupt it)."""
        release.wait(seconds)
        return "done"

    @app.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return app, release


async def _abandon(app: Server, calls: int) -> list[dict[str, object]]:
    """Start ``calls`` slow sync calls on one connection and hang up; the replies that came
    before hanging up (refusals)."""
    refused = []
    async with open_memory_peer(app) as peer:
        await peer.initialize()
        for index in range(calls):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "tools/call",
                    "params": {"name": "block", "arguments": {}},
                }
            )
        with trio.move_on_after(0.5):
            while True:
                refused.append(await peer.receive(5))
    return refused


async def test_abandoned_threads_do_not_starve_other_clients() -> None:
    app, release = make_app()
    try:
        with trio.fail_after(20):
            await _abandon(app, 40)  # the attack: trio's default limiter holds 40
            async with open_memory_peer(app) as other:
                await other.initialize()
                started = time.monotonic()
                reply = await other.call(
                    "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
                )
                elapsed = time.monotonic() - started
        assert reply["result"]["content"][0]["text"] == "3", reply
        assert elapsed < 1.0, elapsed
    finally:
        release.set()


async def test_one_connection_is_bounded_and_refused_with_overload() -> None:
    app, release = make_app(max_threads_per_connection=3)
    try:
        with trio.fail_after(20):
            refused = await _abandon(app, 5)
        assert sorted(r["id"] for r in refused) == [3, 4], refused  # type: ignore[type-var]
        for reply in refused:
            error = reply["error"]
            assert error["code"] == -32010, reply  # type: ignore[index]
            assert error["data"] == {"maxThreadsPerConnection": 3}  # type: ignore[index]
    finally:
        release.set()


async def test_abandoned_threads_are_bounded_across_connections() -> None:
    app, release = make_app(max_threads_per_connection=4, max_abandoned_threads=6)
    try:
        with trio.fail_after(20):
            await _abandon(app, 4)
            await _abandon(app, 4)  # 2 of these are refused: 6 abandoned in all
            async with open_memory_peer(app) as other:
                await other.initialize()
                reply = await other.call(
                    "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
                )
                assert reply["error"]["code"] == -32010, reply
                assert reply["error"]["data"] == {"maxAbandonedThreads": 6}
            release.set()  # the abandoned threads finish and give their places back
            with trio.fail_after(5):
                while True:
                    async with open_memory_peer(app) as other:
                        await other.initialize()
                        reply = await other.call(
                            "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
                        )
                    if "result" in reply:
                        break
                    await trio.sleep(0.05)
    finally:
        release.set()
