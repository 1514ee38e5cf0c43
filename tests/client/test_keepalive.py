"""HTTP keep-alive: the client's connections are persistent and pooled (runtime/client/_http.py).

Our server runs in-process on a real socket; a counting proxy in front of it counts the TCP
connections the client makes (its accepts)."""

from __future__ import annotations

import trio

from runtime.client import open_client
from runtime.transports import HttpLimits

from .proxy import open_proxy
from .targets import load_app


async def test_sequential_calls_share_one_connection() -> None:
    """Both eras: N sequential requests over Streamable HTTP use one TCP connection."""
    for era in ("modern", "handshake"):
        app = load_app()
        async with trio.open_nursery() as nursery:
            address = await nursery.start(app.serve_http)
            async with open_proxy(address[1]) as proxy:
                with trio.fail_after(20):
                    async with open_client(f"http://127.0.0.1:{proxy.port}/mcp", era=era) as client:
                        for n in range(20):
                            result = await client.call_tool("add", {"a": n, "b": 1})
                            assert result.structured_content == {"result": n + 1}
                        await client.all_tools()
                        await client.read_resource("data://counter")
                        # A call answered on an SSE stream (progress) ends its stream and
                        # gives its connection back too.
                        assert (
                            await client.call_tool(
                                "countdown", {"start": 2}, progress=lambda *a: None
                            )
                        ).text == "liftoff"
                        await client.call_tool("add", {"a": 1, "b": 1})
                        used = proxy.connections  # start-up requests included
                        pool = client._link.pool  # type: ignore[union-attr]
                # the handshake era's standing GET stream holds a second connection
                assert used == (1 if era == "modern" else 2), (era, used)
                assert pool.opened == used
            nursery.cancel_scope.cancel()


async def test_an_idle_connection_the_server_closed_is_replaced() -> None:
    """The server closes idle keep-alive connections after 0.2 s: the next request goes over
    a fresh connection, with no error, whatever its method (a tool call is not safe to
    repeat, so it must not have been sent on the dead connection)."""
    app = load_app()
    limits = HttpLimits(keep_alive_timeout=0.2)
    async with trio.open_nursery() as nursery:
        address = await nursery.start(
            lambda task_status: app.serve_http(http_limits=limits, task_status=task_status)
        )
        async with open_proxy(address[1]) as proxy:
            with trio.fail_after(20):
                async with open_client(
                    f"http://127.0.0.1:{proxy.port}/mcp", era="modern"
                ) as client:
                    pool = client._link.pool  # type: ignore[union-attr]
                    for n in range(3):
                        assert (
                            await client.call_tool("add", {"a": n, "b": 1})
                        ).structured_content == {"result": n + 1}
                        await trio.sleep(0.6)  # the server closes the idle connection
                    assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
                    opened = pool.opened
        assert opened == 4  # one per idle period: each dead connection was replaced
        nursery.cancel_scope.cancel()


async def test_closing_the_client_closes_its_idle_connections() -> None:
    app = load_app()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_http)
        async with open_proxy(address[1]) as proxy:
            with trio.fail_after(20):
                async with open_client(
                    f"http://127.0.0.1:{proxy.port}/mcp", era="modern"
                ) as client:
                    await client.call_tool("add", {"a": 1, "b": 1})
                    assert proxy.open_connections == 1
                # the proxy sees the client's end close
                for _ in range(100):
                    if not proxy.open_connections:
                        break
                    await trio.sleep(0.01)
                assert proxy.open_connections == 0
        nursery.cancel_scope.cancel()
