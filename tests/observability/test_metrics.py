"""The Prometheus /metrics endpoint of the HTTP transports (off by default), fed by
runtime.middleware.Metrics, over real sockets: modern POSTs and a handshake-era session."""

from __future__ import annotations

import re

import trio

from runtime.middleware import Metrics, RateLimit

from ..transports.app import init_body, make_app, modern, modern_headers, serving
from ..transports.http_client import request


def value(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert match is not None, f"{name} missing in:\n{text}"
    return float(match.group(1))


async def test_metrics_endpoint_off_by_default() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            assert (await request(address, "GET", "/metrics")).status == 404


async def test_metrics_endpoint_prometheus_text() -> None:
    app, _ = make_app()
    metrics = Metrics()
    app.add_middleware(RateLimit(overall=(0.001, 2)))
    with trio.fail_after(20):
        async with serving(app, metrics=metrics) as address:
            for i in range(2):
                body = modern(i, "tools/call", {"name": "add", "arguments": {"a": i, "b": 1}})
                ok = await request(
                    address, "POST", headers=modern_headers("tools/call", "add"), body=body
                )
                assert ok.status == 200
            init = await request(address, "POST", body=init_body())
            session = init.headers["mcp-session-id"]
            await request(
                address,
                "POST",
                headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
                body={"jsonrpc": "2.0", "method": "notifications/initialized"},
            )
            refused = await request(
                address,
                "POST",
                headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
                body={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            )
            assert refused.json()["error"]["code"] == -32010
            scraped = await request(address, "GET", "/metrics")
            assert (await request(address, "POST", "/metrics", body=b"{}")).status == 405
    assert scraped.status == 200
    assert scraped.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = scraped.body.decode()
    assert value(text, 'mcp_server_requests_total{method="tools/call",outcome="ok"}') == 2
    assert value(text, 'mcp_server_requests_total{method="tools/list",outcome="error"}') == 1
    assert value(text, 'mcp_server_requests_total{method="initialize",outcome="ok"}') == 1
    assert value(text, 'mcp_server_operation_duration_seconds_count{method="tools/call"}') == 2
    assert (
        value(text, 'mcp_server_operation_duration_seconds_bucket{method="tools/call",le="+Inf"}')
        == 2
    )
    assert value(text, "mcp_server_overload_refusals_total") == 1
    assert value(text, "mcp_server_requests_in_flight") == 0
    assert value(text, "mcp_server_sessions_open") == 1  # the handshake session
    assert "# TYPE mcp_server_operation_duration_seconds histogram" in text
