"""Metric labels, OpenTelemetry attributes and span names take only names the server knows.

A client that sends 300 made-up methods and 300 made-up tool names (in 2025-03-26 batches
over real HTTP) leaves the Prometheus families and the OpenTelemetry metrics with the
series they had (the made-up ones all labelled ``unknown``), and ``tools/call`` is still
labelled ``tools/call`` afterwards: no first-come cap that client names can fill.
"""

from __future__ import annotations

import re
from typing import Any

import trio
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from runtime import Server
from runtime.middleware import Metrics, Timing
from runtime.otel import OpenTelemetry

from ..transports.app import init_body, make_app, serving
from ..transports.http_client import request

#: The one label of every name the server does not know (runtime.middleware.UNKNOWN).
UNKNOWN = "unknown"
MADE_UP = 300
BATCH_VERSION = "2025-03-26"  # the revision whose sessions take JSON-RPC batches
BATCH = 100  # items per batch (the server's limit is 256)


def made_up_methods() -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": i, "method": f"made/up/{i}"} for i in range(MADE_UP)]


def made_up_tools() -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": 1000 + i,
            "method": "tools/call",
            "params": {"name": f"tool_{i}", "arguments": {}},
        }
        for i in range(MADE_UP)
    ]


def adds(count: int) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": 5000 + i,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": i, "b": 1}},
        }
        for i in range(count)
    ]


async def hostile_client(address: tuple[str, int]) -> None:
    """300 made-up methods, then 300 made-up tools, then 3 real calls, in one session."""
    init = await request(address, "POST", body=init_body(BATCH_VERSION))
    headers = {"mcp-session-id": init.headers["mcp-session-id"]}
    headers["mcp-protocol-version"] = BATCH_VERSION
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await request(address, "POST", headers=headers, body=note)).status == 202
    for messages in (made_up_methods(), made_up_tools(), adds(3)):
        for start in range(0, len(messages), BATCH):
            batch = messages[start : start + BATCH]
            reply = await request(address, "POST", headers=headers, body=batch)
            assert reply.status == 200, reply
            assert len(reply.json()) == len(batch)


def series(text: str, family: str) -> dict[str, float]:
    """``{labels: value}`` of one family's samples in a Prometheus text exposition."""
    found = {}
    for match in re.finditer(rf"^{re.escape(family)}(\{{[^}}]*\}})? (\S+)$", text, re.M):
        found[match.group(1) or ""] = float(match.group(2))
    return found


async def test_prometheus_series_stay_bounded_and_tools_call_keeps_its_label() -> None:
    app, _ = make_app()
    metrics = Metrics()
    with trio.fail_after(60):
        async with serving(app, metrics=metrics) as address:
            await hostile_client(address)
            scraped = await request(address, "GET", "/metrics")
    text = scraped.body.decode()
    requests = series(text, "mcp_server_requests_total")
    assert requests == {
        '{method="initialize",outcome="ok"}': 1,
        '{method="unknown",outcome="error"}': MADE_UP,
        '{method="tools/call",outcome="error"}': MADE_UP,  # unknown tools: -32602
        '{method="tools/call",outcome="ok"}': 3,
    }
    counts = series(text, "mcp_server_operation_duration_seconds_count")
    assert counts == {
        '{method="initialize"}': 1,
        '{method="tools/call"}': MADE_UP + 3,
        '{method="unknown"}': MADE_UP,
    }
    assert len(series(text, "mcp_server_operation_duration_seconds_bucket")) == 3 * 12
    assert "made/up" not in text and "tool_" not in text


async def test_opentelemetry_series_and_span_names_stay_bounded() -> None:
    app, _ = make_app()
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    app.add_middleware(
        OpenTelemetry(tracer_provider=tracing, meter_provider=MeterProvider([reader]))
    )
    with trio.fail_after(60):
        async with serving(app) as address:
            await hostile_client(address)
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points[metric.name] = list(metric.data.data_points)
    requests = {
        (
            p.attributes["mcp.method.name"],
            p.attributes.get("gen_ai.tool.name"),
            p.attributes.get("error.type"),
        ): p.value
        for p in points["mcp.server.requests"]
    }
    assert requests == {
        ("initialize", None, None): 1,
        (UNKNOWN, None, "-32601"): MADE_UP,
        ("tools/call", UNKNOWN, "-32602"): MADE_UP,
        ("tools/call", "add", None): 3,
    }
    assert len(points["mcp.server.operation.duration"]) == 4
    in_flight = {p.attributes["mcp.method.name"] for p in points["mcp.server.requests.in_flight"]}
    assert in_flight == {"initialize", UNKNOWN, "tools/call"}
    names = {span.name for span in exporter.get_finished_spans()}
    assert names == {
        "initialize",
        "notifications/initialized",
        UNKNOWN,
        f"tools/call {UNKNOWN}",
        "tools/call add",
    }


async def test_resources_and_prompts_are_labelled_as_the_server_knows_them() -> None:
    app = Server("named")

    @app.resource("notes://welcome")
    def welcome() -> str:
        return "hi"

    @app.resource("notes://{name}")
    def note(name: str) -> str:
        return name

    @app.prompt
    def review(code: str) -> str:
        return code

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    app.add_middleware(OpenTelemetry(tracer_provider=tracing, meter_provider=MeterProvider()))
    calls = [
        ("resources/read", {"uri": "notes://welcome"}),
        ("resources/read", {"uri": "notes://secret-123"}),
        ("resources/read", {"uri": "other://x"}),
        ("prompts/get", {"name": "review", "arguments": {"code": "x"}}),
        ("prompts/get", {"name": "made-up", "arguments": {}}),
    ]
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        for i, (method, params) in enumerate(calls)
    ]
    with trio.fail_after(30):
        async with serving(app) as address:
            init = await request(address, "POST", body=init_body(BATCH_VERSION))
            headers = {
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": BATCH_VERSION,
            }
            note_body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await request(address, "POST", headers=headers, body=note_body)
            reply = await request(address, "POST", headers=headers, body=batch)
            assert len(reply.json()) == len(calls)
    spans = {
        span.attributes["jsonrpc.request.id"]: span
        for span in exporter.get_finished_spans()
        if "jsonrpc.request.id" in span.attributes
    }
    uris = [spans[str(i)].attributes["mcp.resource.uri"] for i in range(3)]
    assert uris == ["notes://welcome", "notes://{name}", UNKNOWN]
    assert spans["3"].name == "prompts/get review"
    assert spans["3"].attributes["gen_ai.prompt.name"] == "review"
    assert spans["4"].name == f"prompts/get {UNKNOWN}"


async def test_timing_stats_stay_bounded() -> None:
    app, _ = make_app()
    timing = Timing()
    seen: set[str] = set()
    timing.on_timing = lambda method, seconds, outcome: seen.add(method)
    app.add_middleware(timing)
    with trio.fail_after(60):
        async with serving(app) as address:
            await hostile_client(address)
    assert set(timing.stats) == {"initialize", "tools/call", UNKNOWN} == seen
    assert timing.stats[UNKNOWN].count == MADE_UP
