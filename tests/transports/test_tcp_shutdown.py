"""Shutdown of ``serve_tcp``: one watcher stops every connection (issue 22 item 4 took the
per-connection watcher task away; issue 16 item 4's contract must hold unchanged)."""

from __future__ import annotations

from typing import Any

import trio

from ..servers.shutdown import app
from ..wire import RawPeer


def _slow(request_id: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"seconds": 60}},
    }


async def test_shutdown_answers_in_flight_and_closes_idle_tcp_connections() -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            host, port = (await nursery.start(app.serve_tcp, 0))[:2]
            peers = []
            for _ in range(3):
                stream = await trio.open_tcp_stream(host, port)
                peer = RawPeer(stream, stream, "ndjson")
                await peer.initialize()
                peers.append(peer)
            busy = peers[0]
            await busy.send(_slow("s"))
            await trio.sleep(0.2)
            started = trio.current_time()
            app.shutdown()
            # The call outliving the grace is answered -32000, then the connection ends.
            reply = await busy.receive(10)
            assert reply["id"] == "s" and reply["error"]["code"] == -32000, reply
            assert 0.4 < trio.current_time() - started < 5
            for peer in peers:
                try:
                    extra = await peer.receive(10)
                except EOFError:
                    continue
                raise AssertionError(f"expected EOF, got {extra!r}")
        # serve_tcp returned by itself once every connection ended.
