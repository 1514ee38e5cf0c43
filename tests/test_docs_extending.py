"""The code of the middleware, composition and observability pages runs as the pages say,
over a real framed connection."""

from __future__ import annotations

import trio

from runtime import Server
from runtime.middleware import Authorize, Metrics
from runtime.otel import OpenTelemetry

from .test_docs import blocks, load
from .wire import open_memory_peer


async def test_middleware_page() -> None:
    first, no_shouting, count_refusals, rules = blocks("middleware.md")
    app = load(first, "mw_page")["app"]
    cls = load(no_shouting, "mw_page_2")["NoShouting"]

    @app.tool
    def echo(text: str) -> str:
        """Echo."""
        return f"[{text}]"

    counter = load(count_refusals, "mw_page_4")["CountRefusals"]()
    app.add_middleware(cls, counter)
    assert isinstance(load(rules, "mw_page_3")["rules"], Authorize)
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            added = await peer.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            assert added["result"]["content"][0]["text"] == "3"
            assert added["result"]["_meta"] == {"example.com/era": "handshake"}
            loud = await peer.call("tools/call", {"name": "echo", "arguments": {"text": "HI"}})
            assert loud["error"]["code"] == -32602
            assert loud["error"]["message"] == "Invalid params: no shouting"
            quiet = await peer.call("tools/call", {"name": "echo", "arguments": {"text": " hi "}})
            assert quiet["result"]["content"][0]["text"] == "[hi]"
            await peer.send_bytes(b"[1,\n")
            assert (await peer.receive())["error"]["code"] == -32700
    assert counter.by_code == {-32700: 1}


async def test_composition_page() -> None:
    app: Server = load(blocks("composition.md")[0], "compose_page")["app"]
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            tools = await peer.call("tools/list", {})
            assert [t["name"] for t in tools["result"]["tools"]] == ["weather_forecast"]
            read = await peer.call("resources/read", {"uri": "stations://weather/paris"})
            assert read["result"]["contents"][0]["text"] == "paris-1"


async def test_composition_page_list_filter() -> None:
    app: Server = load(blocks("composition.md")[2], "compose_page_3")["app"]
    with trio.fail_after(10):
        async with open_memory_peer(app) as peer:
            await peer.initialize()
            tools = await peer.call("tools/list", {})
            assert [t["name"] for t in tools["result"]["tools"]] == ["t_lookup"]
            hidden = await peer.call("tools/call", {"name": "t_internal_reset", "arguments": {}})
            assert hidden["result"]["content"][0]["text"] == "reset"


def test_observability_page() -> None:
    otel_block, metrics_block = blocks("observability.md")
    traced: Server = load(otel_block, "otel_page")["app"]
    assert isinstance(traced.middleware_chain[0], OpenTelemetry)
    assert isinstance(load(metrics_block, "metrics_page")["metrics"], Metrics)
