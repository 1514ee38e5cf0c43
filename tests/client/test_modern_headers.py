"""2026-07-28 over Streamable HTTP, judged on the wire: tools whose ``x-mcp-header`` marks
break SEP-2243 are left out of the listing and never called; the valid ones get their
``Mcp-Param-*`` headers; a -32022 refusal naming a version the client speaks is retried once
with it (header and ``_meta`` agreeing); every request's ``_meta`` carries ``clientInfo``;
and in the handshake era the session's GET stream is open before the first request goes (a
server may send an unrelated request there only). Raw servers on loopback record every
request; our own server serves the same tools in both eras."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.client import ClientError, Implementation, PeerError, open_client
from runtime.protocol import (
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
)

from .hostile import DISCOVERED, INITIALIZED, NO_TOOLS, Exchange, HttpPeer, reply
from .targets import SERVER_FILE, load_app, serve_target

EVERYTHING = Path(__file__).resolve().parents[2] / "examples" / "everything.py"


def _tool(name: str, properties: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties, **schema}}


def _marked(header: Any, kind: Any = "string") -> dict[str, Any]:
    return {"type": kind, "x-mcp-header": header}


#: A listing with one valid tool per kind of mark and one invalid tool per rule of
#: 2026-07-28 streamable-http "Schema Extension".
VALID = [
    _tool("valid_tool", {"region": _marked("Region"), "query": {"type": "string"}}),
    _tool(
        "nested",
        {
            "where": {"type": "object", "properties": {"zone": _marked("Zone")}},
            "limit": _marked("Limit", "integer"),
            "dry": _marked("Dry-Run", "boolean"),
        },
    ),
    _tool("plain", {"x-mcp-header": {"type": "string"}}),  # a parameter named like the mark
]
INVALID = {
    "empty": _tool("empty", {"v": _marked("")}),
    "not_a_string": _tool("not_a_string", {"v": _marked(7)}),
    "object": _tool("object", {"v": _marked("Data", "object")}),
    "array": _tool("array", {"v": _marked("Items", "array")}),
    "null": _tool("null", {"v": _marked("Nil", "null")}),
    "number": _tool("number", {"v": _marked("Ratio", "number")}),
    "untyped": _tool("untyped", {"v": {"x-mcp-header": "Free"}}),
    "same_case": _tool("same_case", {"a": _marked("Region"), "b": _marked("Region")}),
    "other_case": _tool("other_case", {"a": _marked("MyField"), "b": _marked("myfield")}),
    "space": _tool("space", {"v": _marked("My Region")}),
    "colon": _tool("colon", {"v": _marked("Region:Primary")}),
    "non_ascii": _tool("non_ascii", {"v": _marked("Région")}),
    "control": _tool("control", {"v": _marked("Region\t1")}),
    "crlf": _tool("crlf", {"v": _marked("X\r\nInjected: 1")}),
    "in_items": _tool("in_items", {"v": {"type": "array", "items": _marked("Item")}}),
    "in_any_of": _tool("in_any_of", {"v": {"anyOf": [_marked("Choice")]}}),
    "in_defs": _tool("in_defs", {"v": {"$ref": "#/$defs/r"}}, **{"$defs": {"r": _marked("Ref")}}),
}


def _modern_server(
    tools: list[dict[str, Any]], refusals: int = 0, supported: list[str] | None = None
) -> HttpPeer:
    """A 2026-07-28 server listing ``tools``; it refuses the first ``refusals`` requests
    with -32022 naming ``supported``; each call answers with the call's name."""
    left = [refusals]

    async def script(exchange: Exchange) -> bool:
        message = exchange.message
        if exchange.method != "POST" or "id" not in message:
            await exchange.accepted()
        elif left[0] > 0:
            left[0] -= 1
            error = {
                "code": UNSUPPORTED_PROTOCOL_VERSION,
                "message": "Unsupported protocol version",
                "data": {"supported": supported or [], "requested": "?"},
            }
            body = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            await exchange.json(body, status="400 Bad Request")
        elif message["method"] == "server/discover":
            await exchange.json(reply(message, DISCOVERED))
        elif message["method"] == "tools/list":
            await exchange.json(reply(message, {"tools": tools, "resultType": "complete"}))
        elif message["method"] == "initialize":
            await exchange.json(reply(message, INITIALIZED), extra="Mcp-Session-Id: s1\r\n")
        else:
            text = {"type": "text", "text": message["params"].get("name", "")}
            await exchange.json(reply(message, {"content": [text], "resultType": "complete"}))
        return False

    return HttpPeer(script)


def _calls(peer: HttpPeer) -> list[Exchange]:
    return [e for e in peer.requests if e.message and e.message.get("method") == "tools/call"]


def _decoded(value: str) -> str:
    if value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[len("=?base64?") : -2]).decode()
    return value


async def test_tools_with_invalid_marks_are_left_out_and_never_called(
    caplog: pytest.LogCaptureFixture,
) -> None:
    peer = _modern_server([*VALID, *INVALID.values()])
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="modern", timeout=5) as client:
                tools = await client.all_tools()
                assert [tool.name for tool in tools] == ["valid_tool", "nested", "plain"]
                for name in INVALID:
                    with pytest.raises(ClientError, match=f"tool '{name}' was left out"):
                        await client.call_tool(name, {"v": "x"})
                await client.call_tool("valid_tool", {"region": " Zürich ", "query": "q"})
                arguments = {"where": {"zone": "b"}, "limit": 3, "dry": False}
                await client.call_tool("nested", arguments)
                await client.call_tool("plain", {"x-mcp-header": "v"})
    # Nothing of an excluded tool went out; each rejection was logged with its tool's name.
    calls = _calls(peer)
    assert [call.message["params"]["name"] for call in calls] == ["valid_tool", "nested", "plain"]
    warned = "\n".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    for name in INVALID:
        assert f"left out tool {name}:" in warned
    assert "X\r\n" not in warned  # a peer's CR LF never reaches a log line raw
    # The valid marks became headers, encoded as the spec says, and nothing else did.
    region, nested, plain = (
        {k: v for k, v in call.headers.items() if k.startswith("mcp-param-")} for call in calls
    )
    assert region == {
        "mcp-param-region": "=?base64?" + base64.b64encode(" Zürich ".encode()).decode() + "?="
    }
    assert _decoded(region["mcp-param-region"]) == " Zürich "
    assert nested == {"mcp-param-zone": "b", "mcp-param-limit": "3", "mcp-param-dry-run": "false"}
    assert plain == {}


async def test_a_later_listing_that_fixes_a_tool_brings_it_back() -> None:
    listings = [[INVALID["space"]], [_tool("space", {"v": _marked("Region")})]]

    async def script(exchange: Exchange) -> bool:
        message = exchange.message
        if message["method"] == "server/discover":
            await exchange.json(reply(message, DISCOVERED))
        elif message["method"] == "tools/list":
            result = {"tools": listings.pop(0), "resultType": "complete"}
            await exchange.json(reply(message, result))
        else:
            text = {"type": "text", "text": "ok"}
            await exchange.json(reply(message, {"content": [text], "resultType": "complete"}))
        return False

    peer = HttpPeer(script)
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="modern", timeout=5) as client:
                assert await client.all_tools() == []
                with pytest.raises(ClientError, match="not an HTTP field-name token"):
                    await client.call_tool("space", {"v": "a"})
                assert [tool.name for tool in await client.all_tools()] == ["space"]
                assert (await client.call_tool("space", {"v": "a"})).text == "ok"
    (call,) = _calls(peer)
    assert call.headers["mcp-param-region"] == "a"


async def test_a_marked_integer_outside_the_safe_range_is_refused_before_sending() -> None:
    """2026-07-28 "Schema Extension": integer values of marked parameters MUST be within
    +-(2**53 - 1); the edge is mirrored exactly, one past it is never sent."""
    peer = _modern_server(VALID)
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="modern", timeout=5) as client:
                await client.all_tools()
                await client.call_tool("nested", {"limit": 2**53 - 1})
                await client.call_tool("nested", {"limit": -(2**53 - 1)})
                for outside in (2**53, -(2**53), 10**30):
                    with pytest.raises(ClientError, match=r"'limit' \(Mcp-Param-Limit\)"):
                        await client.call_tool("nested", {"limit": outside})
    limits = [call.headers["mcp-param-limit"] for call in _calls(peer)]
    assert limits == ["9007199254740991", "-9007199254740991"]


async def test_every_modern_request_carries_client_info_and_matching_versions() -> None:
    peer = _modern_server(VALID)
    info = Implementation("wire-check", "9.9")
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="modern", client_info=info, timeout=5) as client:
                await client.all_tools()
                await client.call_tool("valid_tool", {"region": "r", "query": "q"})
                await client.ping()
    requests = [e for e in peer.requests if e.method == "POST" and "id" in e.message]
    assert [e.message["method"] for e in requests] == [
        "server/discover",
        "tools/list",
        "tools/call",
        "server/discover",
    ]
    for exchange in requests:
        meta = exchange.message["params"]["_meta"]
        assert meta[META_CLIENT_INFO] == {"name": "wire-check", "version": "9.9"}
        assert meta[META_PROTOCOL_VERSION] == exchange.headers["mcp-protocol-version"]


@pytest.mark.parametrize("era", ["modern", "auto"])
async def test_a_version_refusal_is_retried_once_with_a_version_the_server_names(
    era: str,
) -> None:
    peer = _modern_server(VALID, refusals=1, supported=["2099-01-01", "2026-07-28"])
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era=era, timeout=5) as client:  # type: ignore[arg-type]
                assert client.era == "modern"
                assert [tool.name for tool in await client.all_tools()][:1] == ["valid_tool"]
    first, retry, listing = (e for e in peer.requests if e.method == "POST")
    assert first.message["method"] == retry.message["method"] == "server/discover"
    assert retry.message["id"] != first.message["id"]
    for exchange in (retry, listing):
        assert exchange.headers["mcp-protocol-version"] == "2026-07-28"
        assert exchange.message["params"]["_meta"][META_PROTOCOL_VERSION] == "2026-07-28"


async def test_a_second_refusal_is_the_answer_not_a_loop() -> None:
    peer = _modern_server(VALID, refusals=5, supported=["2026-07-28"])
    async with peer.serving() as url:
        with trio.fail_after(20), pytest.raises(PeerError) as refused:
            async with open_client(url, era="modern", timeout=5):
                pass  # pragma: no cover
    assert refused.value.code == UNSUPPORTED_PROTOCOL_VERSION
    assert [e.message["method"] for e in peer.requests] == ["server/discover"] * 2


async def test_a_refusal_naming_only_handshake_versions_falls_back_without_a_retry() -> None:
    peer = _modern_server(VALID, refusals=1, supported=["2025-11-25"])
    async with peer.serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="auto", timeout=5) as client:
                assert client.era == "handshake"
    methods = [e.message["method"] for e in peer.requests if e.method == "POST"]
    assert methods[:2] == ["server/discover", "initialize"]


@pytest.mark.parametrize("server_file", [SERVER_FILE, EVERYTHING])
async def test_our_servers_tools_are_all_kept_in_the_modern_era(server_file: Path) -> None:
    """Our own servers' marks pass the client's rules: the 2026-07-28 listing is the
    handshake-era one, and a marked tool's call gets through the server's header check."""
    app = load_app(server_file)
    async with serve_target("http", app) as (url, _):
        with trio.fail_after(30):
            async with open_client(url, era="handshake") as client:
                handshake = [tool.name for tool in await client.all_tools()]
            async with open_client(url, era="modern") as client:
                modern = await client.all_tools()
                marked = [t for t in modern if "x-mcp-header" in json.dumps(t.input_schema)]
                assert marked
                for tool in marked:
                    arguments = {"region": "eu west ü", "query": "q"}
                    result = await client.call_tool(tool.name, arguments)
                    assert not result.is_error, result
    assert [tool.name for tool in modern] == handshake


async def test_the_session_stream_is_open_before_the_first_request() -> None:
    """Handshake era: a server that sends a tool's elicitation on the session's GET stream,
    and drops it when that stream is not open yet (as the official SDK's servers do), while
    answering the GET slowly. The client's first request waits for the stream."""
    stream: list[Exchange] = []
    answered = trio.Event()
    done = trio.Event()

    async def script(exchange: Exchange) -> bool:
        message = exchange.message
        if exchange.method == "DELETE":
            await exchange.accepted()
        elif exchange.method == "GET":
            await trio.sleep(0.3)
            await exchange.start_events()
            stream.append(exchange)
            await done.wait()
            return True
        elif message.get("method") == "initialize":
            await exchange.json(reply(message, INITIALIZED), extra="Mcp-Session-Id: s1\r\n")
        elif message.get("method") == "tools/call":
            text = "dropped"
            if stream:
                ask = {
                    "jsonrpc": "2.0",
                    "id": "e1",
                    "method": "elicitation/create",
                    "params": {"message": "ok?", "requestedSchema": {"type": "object"}},
                }
                await stream[0].event(json.dumps(ask).encode())
                await answered.wait()
                text = "asked"
            content = {"content": [{"type": "text", "text": text}]}
            await exchange.json(reply(message, content))
        elif message.get("id") == "e1":  # the client's answer
            answered.set()
            await exchange.accepted()
        elif message.get("method") == "tools/list":
            await exchange.json(reply(message, NO_TOOLS))
        else:
            await exchange.accepted()
        return False

    async def accept(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {}}

    async with HttpPeer(script).serving() as url:
        with trio.fail_after(20):
            async with open_client(url, era="handshake", elicitation=accept, timeout=5) as client:
                assert (await client.call_tool("ask", {})).text == "asked"
            done.set()
