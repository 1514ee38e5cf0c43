"""A small modern (2026-07-28) ``tools/call`` POST read in one pass for the transport and the
handler (issue 22): ``TypedCalls.read`` reads ``_meta`` (for the era and header rules),
the tool's name and its typed arguments at once, from a decoder built per tool list, and the
handler takes that reading (``ctx.prepared``). Every answer is the general reading's, byte for
byte, tools added or removed while serving included."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from runtime import Server
from runtime._handlers import TypedCalls
from runtime._handlers import tools as tools_module
from runtime.middleware import Next, Request
from runtime.protocol import ONE_PASS_OVER
from runtime.transports.http import _streamable

from .app import META, modern, modern_headers, serving
from .http_client import request


def _app() -> Server:
    app = Server("small-call")

    @app.tool
    async def size(data: str, times: int = 1) -> int:
        """Length of data, times."""
        return len(data) * times

    @app.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @app.tool
    async def hello(who: str = "world") -> str:
        """Every argument has a default."""
        return f"hello {who}"

    @app.tool(
        input_schema={
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"],
        }
    )
    async def where(region: str) -> str:
        """Mirrors region into Mcp-Param-Region."""
        return region

    return app


def _later(app: Server) -> None:
    @app.tool
    async def later(x: str) -> str:
        """Added while serving."""
        return x * 2


def _call(request_id: int, name: str, **params: Any) -> dict[str, Any]:
    return modern(request_id, "tools/call", {"name": name, **params})


def _bodies() -> list[tuple[Any, dict[str, str]]]:
    """(body, headers): plain calls, what the one pass refuses, header and era refusals."""
    headers = modern_headers("tools/call", "size")
    old = _call(9, "size", arguments={"data": "x"})
    old["params"]["_meta"][META] = "1999-01-01"
    no_caps = _call(10, "size", arguments={"data": "x"})
    del no_caps["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    not_str = _call(11, "size", arguments={"data": "x"})
    not_str["params"]["_meta"][META] = 7
    no_meta = {
        "jsonrpc": "2.0",
        "id": 12,
        "method": "tools/call",
        "params": {"name": "size", "arguments": {"data": "x"}},
    }
    twice = (
        b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"size",'
        b'"_meta":{"' + META.encode() + b'":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}},"_meta":7,"arguments":{"data":"x"}}}'
    )
    return [
        (_call(1, "size", arguments={"data": "abc", "times": 2}), headers),
        (_call(2, "size", arguments={"data": "abc"}, task=None), headers),
        (_call(3, "size"), headers),  # no arguments: invalid (isError)
        (_call(4, "size", arguments={"data": 5}), headers),  # invalid arguments
        (_call(5, "size", arguments={"data": "x"}, task="soon"), headers),  # -32602
        (_call(6, "nope", arguments={}), modern_headers("tools/call", "nope")),
        (_call(7, "size", arguments={"data": "x"}), modern_headers("tools/call", "echo")),
        (_call(8, "where", arguments={"region": "eu"}), modern_headers("tools/call", "where")),
        (
            _call(14, "where", arguments={"region": "eu"}),
            modern_headers("tools/call", "where", **{"mcp-param-region": "eu"}),
        ),
        (old, {**headers, "mcp-protocol-version": "1999-01-01"}),
        (no_caps, headers),
        (not_str, headers),
        (no_meta, headers),
        (twice, headers),
        (_call(15, "echo", arguments={"text": META}), modern_headers("tools/call", "echo")),
        (_call(16, "hello"), modern_headers("tools/call", "hello")),  # no arguments: defaults
    ]


def _later_call(request_id: int) -> tuple[Any, dict[str, str]]:
    return _call(request_id, "later", arguments={"x": "ab"}), modern_headers("tools/call", "later")


async def _answers() -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    app = _app()

    async def post(body: Any, headers: dict[str, str]) -> None:
        got = await request(address, "POST", headers=headers, body=body)
        out.append((got.status, got.body))  # the bytes, compared exactly

    async with serving(app) as address:
        for body, headers in _bodies():
            await post(body, headers)
        # The tool list changed after serving started: the next call reads with the new list.
        await post(*_later_call(20))  # not there yet: unknown tool
        _later(app)
        await post(*_later_call(21))
        app.registry.remove_tool("later")
        await post(*_later_call(22))
        _later(app)
        await post(*_later_call(23))
    return out


def test_the_bodies_are_small() -> None:
    for body, _headers in _bodies():
        encoded = body if isinstance(body, bytes) else msgspec.json.encode(body)
        assert len(encoded) < ONE_PASS_OVER


async def test_the_same_answers_as_the_general_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    with trio.fail_after(20):
        typed = await _answers()
        monkeypatch.setattr(TypedCalls, "read", lambda self, raw: None)
        general = await _answers()
    assert typed == general
    decoded = [msgspec.json.decode(body) if body else None for _status, body in typed]
    assert typed[0][0] == 200
    assert decoded[0]["result"]["structuredContent"] == {"result": 6}
    assert decoded[2]["result"]["isError"] is True
    assert decoded[3]["result"]["isError"] is True
    assert decoded[4]["error"]["code"] == -32602
    assert decoded[5]["error"]["code"] == -32602
    assert typed[6][0] == 400 and decoded[6]["error"]["code"] == -32020
    assert typed[7][0] == 400 and decoded[7]["error"]["code"] == -32020  # no Mcp-Param-Region
    assert decoded[8]["result"]["content"][0]["text"] == "eu"
    assert decoded[9]["error"]["code"] == -32022
    assert typed[13][0] == 400 and decoded[13]["error"]["code"] == -32602  # _meta twice
    assert decoded[14]["result"]["content"][0]["text"] == META
    assert decoded[15]["result"]["content"][0]["text"] == "hello world"
    later = decoded[-4:]
    assert later[0]["error"]["code"] == -32602 and later[2]["error"]["code"] == -32602
    assert (
        later[1]["result"]["content"][0]["text"]
        == "abab"
        == later[3]["result"]["content"][0]["text"]
    )


async def test_a_small_modern_call_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[bytes] = []
    real = TypedCalls.read

    def recorded(self: Any, raw: Any) -> Any:
        reads.append(bytes(raw))
        return real(self, raw)

    def general(*args: Any) -> Any:
        raise AssertionError("the general reading of the params was taken")

    monkeypatch.setattr(TypedCalls, "read", recorded)
    monkeypatch.setattr(_streamable, "_general_params", general)  # not by the transport
    monkeypatch.setattr(tools_module, "decode_params", general)  # nor by the handler
    app = _app()
    body, headers = _bodies()[0]
    with trio.fail_after(20):
        async with serving(app) as address:
            got = await request(address, "POST", headers=headers, body=body)
            _later(app)  # a tool added while serving: read the same way
            added = await request(
                address, "POST", headers=_later_call(2)[1], body=_later_call(2)[0]
            )
    assert got.status == 200, got.body
    assert msgspec.json.decode(got.body)["result"]["structuredContent"] == {"result": 6}
    assert msgspec.json.decode(added.body)["result"]["content"][0]["text"] == "abab"
    assert len(reads) == 2 and b'"data":"abc"' in reads[0] and b'"x":"ab"' in reads[1]


async def test_a_tool_replaced_without_a_list_change_is_not_read_stale() -> None:
    """The handler takes the reading only while its tool is the registered one."""
    app = _app()
    with trio.fail_after(20):
        async with serving(app) as address:
            body, headers = (
                _call(1, "echo", arguments={"text": "hi"}),
                modern_headers("tools/call", "echo"),
            )
            first = await request(address, "POST", headers=headers, body=body)
            # Behind the registry's back (no list change): "echo" is now size's function.
            app.registry.tools["echo"] = app.registry.tools["size"]
            swapped = await request(address, "POST", headers=headers, body=body)
    assert msgspec.json.decode(first.body)["result"]["content"][0]["text"] == "hi"
    # Read by the general way with size's arguments: "data" is missing.
    assert msgspec.json.decode(swapped.body)["result"]["isError"] is True


async def test_a_middleware_rewrite_of_the_arguments_reaches_the_tool() -> None:
    """A middleware that changes the params voids the transport's reading of them."""
    app = _app()

    @app.middleware
    async def louder(request: Request, call_next: Next) -> Any:
        if request.method == "tools/call":
            request.params["arguments"]["text"] = "HI"
        return await call_next()

    body, headers = _call(1, "echo", arguments={"text": "hi"}), modern_headers("tools/call", "echo")
    with trio.fail_after(20):
        async with serving(app) as address:
            got = await request(address, "POST", headers=headers, body=body)
    assert got.status == 200, got.body
    assert msgspec.json.decode(got.body)["result"]["content"][0]["text"] == "HI"
