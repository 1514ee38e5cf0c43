"""``Connection.at_close``: per-connection cleanup without a task (issue 22 item 4)."""

from __future__ import annotations

import trio
import trio.testing

from runtime import Server
from runtime.core import Connection, Session
from runtime.transports import FramedChannel, make_framer


async def test_at_close_runs_once_the_connection_ended_and_at_once_after() -> None:
    app = Server("at-close", "0.0.1")
    client, server_end = trio.testing.memory_stream_pair()
    channel = FramedChannel(server_end, server_end, make_framer("ndjson", 1 << 20))
    calls: list[str] = []
    served: list[Connection] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: app.serve_connection(
                    channel, session=Session("memory"), started=served.append
                )
            )
            await trio.sleep(0.05)
            connection = served[0]
            connection.at_close(lambda: calls.append("first"))
            connection.at_close(lambda: calls.append("second"))
            await trio.sleep(0.05)
            assert calls == []  # still serving
            await client.send_stream.aclose()  # EOF ends the connection
        assert calls == ["first", "second"]
        connection.at_close(lambda: calls.append("late"))
        assert calls == ["first", "second", "late"]
