"""The proxy in-process over loopback TCP, our client on both ends: era bridging, errors,
middleware on the way, and server-to-client requests forwarded across eras."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime._lifetime import ServerCrashed
from runtime.bridge import Forward, proxy_server, proxy_target
from runtime.client import Backoff, PeerError, open_client
from runtime.middleware import Next, Request
from runtime.protocol import JSONRPCError


def upstream() -> Server:
    app = Server("upstream", "3.0.0", instructions="the remote")

    @app.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool
    def refuse() -> str:
        """Refuses with a JSON-RPC error of its own."""
        raise JSONRPCError(-32042, "refused upstream", {"why": "test"})

    @app.tool
    async def ask_name(ctx: Context) -> str:
        """Elicits a name from the user."""
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"hello {answer['content']['name']}"

    return app


@pytest.mark.parametrize("downstream_era", ["handshake", "modern"])
@pytest.mark.parametrize("upstream_era", ["handshake", "auto"])
async def test_eras_errors_middleware_through_the_proxy(
    upstream_era: str, downstream_era: Any
) -> None:
    seen: list[str] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            remote = upstream()
            port = (await nursery.start(remote.serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era=upstream_era)

            @proxy.middleware
            async def record(request: Request, call_next: Next) -> Any:
                seen.append(request.method)
                return await call_next()

            proxy_port = (await nursery.start(proxy.serve_tcp))[1]

            async def elicit(params: dict[str, Any]) -> dict[str, Any]:
                assert params["message"] == "Your name?"
                return {"action": "accept", "content": {"name": "Ada"}}

            async with open_client(
                f"tcp://127.0.0.1:{proxy_port}", era=downstream_era, elicitation=elicit
            ) as client:
                assert client.era == downstream_era
                assert client.description is not None
                assert client.description.instructions == "the remote"
                tools = [tool.name for tool in await client.all_tools()]
                assert tools == ["add", "refuse", "ask_name"]
                result = await client.call_tool("add", {"a": 2, "b": 40})
                assert result.structured_content == {"result": 42}
                invalid = await client.call_tool("add", {"a": "x", "b": 1})
                assert invalid.is_error  # the remote's isError result, as is
                with pytest.raises(PeerError) as raised:
                    await client.call_tool("refuse", {})
                assert (raised.value.code, raised.value.message) == (-32042, "refused upstream")
                assert raised.value.data == {"why": "test"}
                # The remote's elicitation (a server-to-client request, or a 2026-07-28
                # input round) reaches our client in its own era's form and the answer
                # goes back. A handshake-era remote and a 2026-07-28 client: an input round
                # of our client's request, the remote's request waiting meanwhile (over TCP
                # the question goes to the newest forwarded request, the only one here).
                asked = await client.call_tool("ask_name", {})
                assert asked.text == "hello Ada"
            nursery.cancel_scope.cancel()
    assert "tools/call" in seen and "tools/list" in seen  # middleware saw forwarded requests


def test_proxy_target() -> None:
    assert proxy_target("stdio:python 'my server.py' --x") == ["python", "my server.py", "--x"]
    assert proxy_target("http://h/mcp") == "http://h/mcp"
    with pytest.raises(ValueError):
        proxy_target("stdio:")


@pytest.mark.parametrize("upstream_era", ["handshake", "auto"])
async def test_the_proxy_reconnects_to_a_restarted_remote(upstream_era: str) -> None:
    """The remote (TCP) goes away and comes back on the same port: the proxy's client
    re-opens the link with its backoff and our client's next requests are answered."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            first = trio.CancelScope()

            async def serve_remote(
                scope: trio.CancelScope, port: int, *, task_status: trio.TaskStatus[Any]
            ) -> None:
                with scope:
                    await upstream().serve_tcp(port, task_status=task_status)

            port = (await nursery.start(serve_remote, first, 0))[1]
            proxy = proxy_server(
                f"tcp://127.0.0.1:{port}",
                era=upstream_era,
                # Attempts bounded by time only: with full jitter, 8 of them (the default) can
                # all fall inside the 0.3 s the remote is away.
                backoff=Backoff(initial=0.05, cap=0.2, max_attempts=1000, max_elapsed=10),
            )
            proxy_port = (await nursery.start(proxy.serve_tcp))[1]
            async with open_client(f"tcp://127.0.0.1:{proxy_port}", era="handshake") as client:
                assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"
                first.cancel()  # the remote is gone
                await trio.sleep(0.3)
                await nursery.start(serve_remote, trio.CancelScope(), port)
                tools = [tool.name for tool in await client.all_tools()]
                assert tools == ["add", "refuse", "ask_name"]
                assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
                (forward,) = [m for m in proxy.middleware_chain if isinstance(m, Forward)]
                # Our handshake-era session has an upstream session of its own.
                (session,) = forward.sessions
                assert session.client is not None and session.client.reconnects == 1
            nursery.cancel_scope.cancel()


async def test_an_unreachable_remote_is_one_clear_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proxy = proxy_server(f"tcp://127.0.0.1:{port}", backoff=Backoff(max_attempts=1))
    with trio.fail_after(10), pytest.raises(BaseException) as raised:
        await proxy.serve_tcp()
    crashed = raised.value
    while isinstance(crashed, BaseExceptionGroup) and len(crashed.exceptions) == 1:
        crashed = crashed.exceptions[0]
    assert isinstance(crashed, ServerCrashed)
    assert str(crashed) == (
        f"cannot reach the remote MCP server: cannot connect to tcp://127.0.0.1:{port}: "
        "connection refused (is the server running, and on this port?)"
    )


@pytest.mark.parametrize("downstream_era", ["handshake", "modern"])
async def test_http_client_to_proxy_to_websocket_remote(downstream_era: Any) -> None:
    """HTTP <-> WebSocket: our client over Streamable HTTP to the proxy, the proxy over
    WebSocket to the remote; progress and errors cross both."""
    app = upstream()

    @app.tool
    async def count(ctx: Context) -> str:
        """Reports progress 1 and 2 of 2."""
        await ctx.report_progress(1, 2, "half")
        await ctx.report_progress(2, 2, "done")
        return "counted"

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(app.serve_websocket))[1]
            proxy = proxy_server(f"ws://127.0.0.1:{port}/mcp")
            proxy_port = (await nursery.start(proxy.serve_http))[1]
            progress: list[tuple[float, float | None, str | None]] = []
            async with open_client(
                f"http://127.0.0.1:{proxy_port}/mcp", era=downstream_era
            ) as client:
                assert client.era == downstream_era
                result = await client.call_tool(
                    "count", {}, progress=lambda *args: progress.append(args)
                )
                assert result.text == "counted"
                assert progress == [(1.0, 2.0, "half"), (2.0, 2.0, "done")]
                with pytest.raises(PeerError) as raised:
                    await client.call_tool("refuse", {})
                assert raised.value.code == -32042
            nursery.cancel_scope.cancel()
