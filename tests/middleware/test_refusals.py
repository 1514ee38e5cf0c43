"""Middleware see the refusals made before their chain (``Middleware.on_refusal``): the
shipped ``Metrics`` and ``RequestLogging`` count and log them over a real stdio subprocess
and over real HTTP on 127.0.0.1; a server without such middleware builds nothing for them."""

from __future__ import annotations

import re
from typing import Any

import trio

from runtime import Server
from runtime.middleware import Metrics, Middleware, RateLimit, Request
from runtime.protocol import Refusal

from ..peers import ROOT, open_stdio_peer
from ..transports.app import init_body, make_app, modern, modern_headers, serving
from ..transports.http_client import request

SERVER = ROOT / "tests" / "middleware" / "refusals_server.py"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def value(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert match is not None, f"{name} missing in:\n{text}"
    return float(match.group(1))


async def test_refusals_counted_and_logged_over_stdio() -> None:
    with trio.fail_after(30):
        async with open_stdio_peer(SERVER, "ndjson", "--max-in-flight", "1") as (
            peer,
            _process,
            _err,
        ):
            # Before initialize: -32600 from the connection's lifecycle, before any chain.
            early = await peer.call("tools/list")
            assert early["error"]["code"] == -32600
            await peer.initialize()
            # Not JSON: -32700 from the reader.
            await peer.send_bytes(b"{not json\n")
            assert (await peer.receive())["error"]["code"] == -32700
            # The in-flight cap (--max-in-flight 1): -32010 while the slow call runs.
            slow = {"name": "slow", "arguments": {"seconds": 1.0}}
            await peer.send({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": slow})
            await trio.sleep(0.2)
            refused = await peer.call("tools/call", slow)
            assert refused["error"]["code"] == -32010
            assert (await peer.receive())["id"] == "s"
            # An unsupported protocol version in modern _meta: -32022 from era selection.
            meta = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}
            old = await peer.call("tools/list", {"_meta": meta})
            assert old["error"]["code"] == -32022
            text = (await peer.call("test/metrics"))["result"]["text"]
    assert value(text, "mcp_server_overload_refusals_total") == 1
    assert value(text, 'mcp_server_refusals_total{transport="stdio",code="-32010",status="none"}')
    for code in ("-32600", "-32700", "-32022"):
        name = f'mcp_server_refusals_total{{transport="stdio",code="{code}",status="none"}}'
        assert value(text, name) == 1, code
    # The slow call itself went through the chain; the refused one did not.
    assert value(text, 'mcp_server_requests_total{method="tools/call",outcome="ok"}') == 1


async def test_refusals_logged_over_stdio() -> None:
    with trio.fail_after(30):
        async with open_stdio_peer(SERVER, "ndjson") as (peer, process, err_path):
            early = await peer.call("tools/list")
            assert early["error"]["code"] == -32600
            await peer.initialize()
            await peer.call("tools/list")
            await process.stdin.aclose()  # type: ignore[union-attr]
            await process.wait()
            stderr = err_path.read_text()
    lines = [line for line in stderr.splitlines() if line.startswith("test.refusals")]
    assert any(
        "mcp refusal method=tools/list" in line
        and "transport=stdio" in line
        and "outcome=error:-32600" in line
        for line in lines
    ), stderr
    assert any("mcp request method=tools/list" in line and "outcome=ok" in line for line in lines)


async def test_refusals_counted_over_http() -> None:
    app, _ = make_app()
    metrics = Metrics()
    app.add_middleware(RateLimit(overall=(0.001, 1)))
    with trio.fail_after(20):
        async with serving(app, metrics=metrics) as address:
            # No session id on a handshake-era request: 400 from the transport.
            lost = await request(
                address,
                "POST",
                headers={"mcp-protocol-version": "2025-11-25"},
                body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            assert lost.status == 400
            # An unknown session: 404.
            gone = await request(
                address,
                "POST",
                headers={"mcp-session-id": "nope", "mcp-protocol-version": "2025-11-25"},
                body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            )
            assert gone.status == 404
            # A modern request at an unsupported version: 400 with -32022.
            body = modern(3, "tools/list")
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1999-01-01"
            headers = {**modern_headers("tools/list"), "mcp-protocol-version": "1999-01-01"}
            old = await request(address, "POST", headers=headers, body=body)
            assert old.status == 400 and old.json()["error"]["code"] == -32022
            # The rate limit refuses inside the chain (429): counted as a request, not as a
            # refusal of the transport.
            for i in range(2):
                body = modern(10 + i, "tools/call", {"name": "add", "arguments": {"a": i, "b": 1}})
                await request(
                    address, "POST", headers=modern_headers("tools/call", "add"), body=body
                )
            init = await request(address, "POST", body=init_body())
            assert init.status == 200
            scraped = await request(address, "GET", "/metrics")
    text = scraped.body.decode()
    assert (
        value(text, 'mcp_server_refusals_total{transport="http",code="-32600",status="400"}') == 1
    )
    assert (
        value(text, 'mcp_server_refusals_total{transport="http",code="-32600",status="404"}') == 1
    )
    assert (
        value(text, 'mcp_server_refusals_total{transport="http",code="-32022",status="400"}') == 1
    )
    assert 'status="429"' not in text
    assert value(text, "mcp_server_overload_refusals_total") == 1  # the rate limit's, once
    assert value(text, 'mcp_server_requests_total{method="tools/call",outcome="error"}') == 1


class _Seen(Middleware):
    def __init__(self) -> None:
        self.refusals: list[Refusal] = []

    def on_refusal(self, refusal: Refusal) -> None:
        self.refusals.append(refusal)


async def test_no_observer_without_an_on_refusal_hook() -> None:
    plain = Server("plain")

    async def passthrough(request: Request, call_next: Any) -> Any:
        return await call_next()

    plain.add_middleware(passthrough)
    assert plain.dispatcher.on_refusal is None
    assert Server("bare").dispatcher.on_refusal is None
    seen = Server("seen")
    watcher = _Seen()
    seen.add_middleware(watcher)
    assert seen.dispatcher.on_refusal is not None
