"""runtime.otel with the OpenTelemetry SDK's in-memory exporter and metric reader, over
real HTTP sockets (modern POSTs) and a real framed connection (a handshake session whose
server-to-client request must carry the span's context)."""

from __future__ import annotations

from typing import Any

import trio
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from runtime.middleware import RateLimit
from runtime.otel import OpenTelemetry

from ..transports.app import make_app, modern, modern_headers, serving
from ..transports.http_client import request
from ..wire import open_memory_peer

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def instrumented(**limits: Any) -> tuple[Any, InMemorySpanExporter, InMemoryMetricReader]:
    app, _ = make_app(**limits)
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    app.add_middleware(
        OpenTelemetry(tracer_provider=tracing, meter_provider=MeterProvider([reader])),
        RateLimit(overall=(0.001, 2)),
    )
    return app, exporter, reader


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out[metric.name] = list(metric.data.data_points)
    return out


async def test_spans_attributes_propagation_and_metrics_over_http() -> None:
    app, exporter, reader = instrumented()
    with trio.fail_after(20):
        async with serving(app) as address:
            body = modern(7, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            body["params"]["_meta"].update({"traceparent": PARENT, "baggage": "team=blue"})
            ok = await request(
                address, "POST", headers=modern_headers("tools/call", "add"), body=body
            )
            assert ok.json()["result"]["content"][0]["text"] == "3"
            bad = modern(8, "tools/call", {"name": "add", "arguments": {"a": "x"}})
            await request(address, "POST", headers=modern_headers("tools/call", "add"), body=bad)
            limited = await request(
                address,
                "POST",
                headers=modern_headers("tools/list"),
                body=modern(9, "tools/list"),
            )
            assert limited.status == 429
    spans = {span.attributes["jsonrpc.request.id"]: span for span in exporter.get_finished_spans()}
    call = spans["7"]
    assert call.name == "tools/call add"
    assert call.kind == SpanKind.SERVER
    assert format(call.context.trace_id, "032x") == TRACE_ID  # the parent from _meta
    assert call.parent is not None and format(call.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.tool.name"] == "add"
    assert call.attributes["gen_ai.operation.name"] == "execute_tool"
    assert call.attributes["mcp.protocol.version"] == "2026-07-28"
    assert call.attributes["network.transport"] == "tcp"
    assert "mcp.session.id" not in call.attributes  # modern requests are stateless
    assert "error.type" not in call.attributes
    assert spans["8"].attributes["error.type"] == "tool_error"  # bad arguments: isError
    assert spans["8"].status.status_code == StatusCode.ERROR
    assert spans["8"].parent is None  # no traceparent: a root span
    refused = spans["9"]
    assert refused.attributes["error.type"] == "-32010"
    assert refused.attributes["rpc.response.status_code"] == "-32010"
    points = metric_points(reader)
    assert sum(p.count for p in points["mcp.server.operation.duration"]) == 3
    assert sum(p.value for p in points["mcp.server.requests"]) == 3
    assert sum(p.value for p in points["mcp.server.overload.refusals"]) == 1
    assert sum(p.value for p in points["mcp.server.requests.in_flight"]) == 0


async def test_server_to_client_request_carries_the_span_context() -> None:
    app, exporter, reader = instrumented()
    with trio.fail_after(20):
        async with open_memory_peer(app) as peer:
            await peer.call(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"roots": {}},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "tools/call",
                    "params": {
                        "name": "ask_roots",
                        "arguments": {},
                        "_meta": {"traceparent": PARENT},
                    },
                }
            )
            roots = await peer.receive()
            assert roots["method"] == "roots/list"
            sent = roots["params"]["_meta"]["traceparent"]
            await peer.send(
                {"jsonrpc": "2.0", "id": roots["id"], "result": {"roots": [{"uri": "file:///a"}]}}
            )
            reply = await peer.receive()
            assert reply["result"]["content"][0]["text"] == "file:///a"
            points = metric_points(reader)
            assert sum(p.value for p in points["mcp.server.sessions.open"]) == 1
    # the connection ended: its session is no longer counted
    assert sum(p.value for p in metric_points(reader)["mcp.server.sessions.open"]) == 0
    names = [s.name for s in exporter.get_finished_spans()]
    assert "notifications/initialized" in names  # notifications get spans too
    span = next(s for s in exporter.get_finished_spans() if s.name == "tools/call ask_roots")
    assert str(span.attributes["mcp.session.id"]).startswith("c")
    _, trace_id, span_id, _ = sent.split("-")
    assert trace_id == TRACE_ID  # the same trace, continued by the client
    assert span_id == format(span.context.span_id, "016x")  # child of the server span
    assert span.attributes["mcp.protocol.version"] == "2025-11-25"


async def test_refusals_before_the_chain_are_counted() -> None:
    """``on_refusal``: the in-flight cap over a framed connection and an HTTP transport
    refusal each count in mcp.server.refusals (-32010 in the overload counter too), with
    no span (nothing was served)."""
    app, exporter, reader = instrumented(max_in_flight=1)
    with trio.fail_after(20):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            slow = {"name": "slow", "arguments": {"tag": "a", "seconds": 0.5}}
            await peer.send({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": slow})
            await trio.sleep(0.1)
            refused = await peer.call("tools/call", slow)
            assert refused["error"]["code"] == -32010
            assert (await peer.receive())["id"] == "s"
        async with serving(app) as address:
            lost = await request(
                address,
                "POST",
                headers={"mcp-protocol-version": "2025-11-25"},
                body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            assert lost.status == 400
    points = metric_points(reader)
    by_type = {
        (p.attributes["network.transport"], p.attributes["error.type"]): p.value
        for p in points["mcp.server.refusals"]
    }
    assert by_type == {("pipe", "-32010"): 1, ("tcp", "-32600"): 1}
    assert sum(p.value for p in points["mcp.server.overload.refusals"]) == 1
    assert all(
        span.attributes.get("jsonrpc.request.id") != "rp2" for span in exporter.get_finished_spans()
    )


async def test_edge_refusals_are_counted() -> None:
    """The HTTP parser's and the WebSocket's own refusals reach mcp.server.refusals too: a
    request line that is not HTTP (400) and a binary WebSocket message (close 1003)."""
    from wsproto.events import BytesMessage, CloseConnection

    from ..transports.raw_ws import open_raw_websocket

    app, _exporter, reader = instrumented()
    with trio.fail_after(20):
        async with serving(app) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                await stream.send_all(b"NOT HTTP\r\n\r\n")
                assert (await stream.receive_some(100)).startswith(b"HTTP/1.1 400 ")
        async with serving(app, "ws") as address:
            raw = await open_raw_websocket(address)
            await raw.send(BytesMessage(data=b"{}"))
            while not isinstance(event := await raw.next_event(), CloseConnection):
                assert event is not None
            assert event.code == 1003
            await raw.stream.aclose()
    by_type = {
        (p.attributes["network.transport"], p.attributes["error.type"]): p.value
        for p in metric_points(reader)["mcp.server.refusals"]
    }
    assert by_type == {("tcp", "-32600"): 1, ("tcp", "websocket.close.1003"): 1}
