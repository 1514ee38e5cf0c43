"""The client test server (tests/client/server.py) on HTTP, in a process of its own, behind a
front that drops chosen requests' connections in the middle of their answers.

    python tests/client/dropping_server.py PORT METHOD:N [METHOD:N ...]

The front listens on 127.0.0.1:PORT and relays to the server. The N-th request (counted from
1) whose ``Mcp-Method`` header is METHOD (2026-07-28 requests carry it) reaches the server,
but only the first half of the first piece of its answer reaches the client; then the front
closes the client's connection. The tool ``forwarded(method)`` answers how many requests of
that method reached the server.
"""

from __future__ import annotations

import collections
import functools
import re
import runpy
import sys
from pathlib import Path

import trio

_METHOD = re.compile(rb"\r\nmcp-method: *([^\r\n]+)\r\n", re.IGNORECASE)

app = runpy.run_path(str(Path(__file__).with_name("server.py")))["app"]
forwarded: collections.Counter[str] = collections.Counter()
drops: set[tuple[str, int]] = set()


@app.tool
def forwarded_count(method: str) -> int:
    """How many requests of ``method`` reached the server."""
    return forwarded[method]


async def relay(upstream_port: int, client: trio.SocketStream) -> None:
    upstream = await trio.open_tcp_stream("127.0.0.1", upstream_port)
    async with client, upstream:
        drop_next_answer = False

        async def to_server() -> None:
            nonlocal drop_next_answer
            while data := await client.receive_some(65536):
                match = _METHOD.search(data)
                if match is not None:
                    method = match.group(1).decode().strip()
                    forwarded[method] += 1
                    if (method, forwarded[method]) in drops:
                        drop_next_answer = True
                await upstream.send_all(data)

        async def to_client() -> None:
            nonlocal drop_next_answer
            while data := await upstream.receive_some(65536):
                if drop_next_answer:
                    await client.send_all(data[: max(1, len(data) // 2)])
                    nursery.cancel_scope.cancel()  # mid-answer: both ends close
                    return
                await client.send_all(data)

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(to_server)
                nursery.start_soon(to_client)
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass


async def main(port: int) -> None:
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_http)
        await trio.serve_tcp(functools.partial(relay, address[1]), port, host="127.0.0.1")


if __name__ == "__main__":
    for spec in sys.argv[2:]:
        name, _, count = spec.rpartition(":")
        drops.add((name, int(count)))
    trio.run(main, int(sys.argv[1]))
