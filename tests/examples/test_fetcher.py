"""examples/fetcher.py against a loopback HTTP server the test runs (no internet)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
from fetcher import app

from runtime.testing import open_client

BODY = b"".join(b"line %03d of a slow page\n" % i for i in range(40))  # 960 bytes


class Site:
    """Serves ``BODY`` in four slow chunks at /slow, never finishes /hang, 404 elsewhere."""

    def __init__(self) -> None:
        self.port = 0
        self.closed_by_client = trio.Event()

    async def handle(self, stream: trio.SocketStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive_some(4096)
            path = data.split(b" ", 2)[1]
            if path == b"/slow":
                await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 960\r\n\r\n")
                for start in range(0, len(BODY), 240):
                    await trio.sleep(0.02)
                    await stream.send_all(BODY[start : start + 240])
            elif path == b"/hang":
                await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nx")
                # Wait for the client to hang up (receive_some returns b"" at its close).
                while await stream.receive_some(4096):
                    pass
                self.closed_by_client.set()
            else:
                await stream.send_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


@asynccontextmanager
async def serve_site() -> AsyncIterator[Site]:
    site = Site()
    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, site.handle, 0, host="127.0.0.1")
        listeners = await nursery.start(serve)
        site.port = listeners[0].socket.getsockname()[1]
        yield site
        nursery.cancel_scope.cancel()


async def test_fetch_reports_progress_in_bytes() -> None:
    seen: list[tuple[float, float | None]] = []

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    with trio.fail_after(10):
        async with serve_site() as site, open_client(app) as client:
            url = f"http://127.0.0.1:{site.port}/slow"
            page = await client.call_tool("fetch", {"url": url}, progress=on_progress)
            short = await client.call_tool("fetch", {"url": url, "max_bytes": 100})
            missing = await client.call_tool("fetch", {"url": f"http://127.0.0.1:{site.port}/x"})
            bad = await client.call_tool("fetch", {"url": "file:///etc/passwd"})
    assert page.text == BODY.decode()
    assert seen[-1] == (960, 960)
    assert len(seen) >= 4 and [p for p, _ in seen] == sorted({p for p, _ in seen})
    assert short.text == BODY[:100].decode() + "\n[truncated at 100 bytes]"
    assert missing.is_error and "HTTP 404" in missing.text
    assert bad.is_error and "not an http(s) URL" in bad.text


async def test_cancelling_the_call_closes_the_download() -> None:
    with trio.fail_after(10):
        async with serve_site() as site, open_client(app) as client:
            async with trio.open_nursery() as nursery:
                url = f"http://127.0.0.1:{site.port}/hang"
                nursery.start_soon(functools.partial(client.call_tool, "fetch", {"url": url}))
                await trio.sleep(0.2)
                # The call is request 2 (initialize was 1).
                await client.notify("notifications/cancelled", {"requestId": 2})
                with trio.fail_after(2):
                    await site.closed_by_client.wait()  # the socket was closed
                nursery.cancel_scope.cancel()
            assert (await client.ping()) == {}  # the server lives on
