"""tools/call params read in one typed pass (handlers/_typed_call.py): the same answers as the
general reading for every shape of params, and the one-pass reading really taken for the
plain ones."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from handlers._typed_call import TypedCalls
from runtime import JSONRPCError, Server
from runtime.testing import open_client


def _server() -> Server:
    app = Server("typed-call")

    @app.tool
    async def size(data: str, times: int = 1) -> int:
        """Length of data, times."""
        return len(data) * times

    @app.tool
    async def needs(a: int) -> int:
        """Echo a."""
        return a

    @app.tool
    async def nothing() -> str:
        """No arguments."""
        return "ok"

    return app


PARAMS: list[Any] = [
    {"name": "size", "arguments": {"data": "abc"}},
    {"name": "size", "arguments": {"data": "abc", "times": 3, "extra": [1, 2]}},
    {"arguments": {"data": "é\u2028\\n"}, "name": "size"},  # name after the arguments
    {"name": "size", "arguments": {"data": 5}},  # wrong type: an isError result
    {"name": "size", "arguments": {}},  # missing required
    {"name": "size"},  # no arguments at all
    {"name": "size", "arguments": None},
    {"name": "size", "arguments": [1]},
    {"name": "needs", "arguments": {"a": 2.5}},  # strict: a float is not an int
    {"name": "nothing"},
    {"name": "nothing", "arguments": {"x": 1}},
    {"name": "missing", "arguments": {}},  # unknown tool: -32602
    {"name": 7},
    {"arguments": {"data": "x"}},  # no name
    {"name": "size", "arguments": {"data": "x"}, "task": "not an object"},
    {"name": "size", "arguments": {"data": "x"}, "_meta": {"progressToken": 1}},
    {"name": "size", "arguments": {"data": "x"}, "_meta": 3},
    [],
]


async def _answers(app: Server) -> list[Any]:
    """The answer to every PARAMS, through the testing kit's client."""
    out: list[Any] = []
    async with open_client(app) as client:
        for params in PARAMS:
            try:
                out.append(await client.request("tools/call", params))
            except JSONRPCError as exc:
                out.append(("error", exc.code, exc.message))
    return out


async def test_every_shape_answers_as_the_general_reading_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with trio.fail_after(20):
        typed = await _answers(_server())
        monkeypatch.setattr(TypedCalls, "read", lambda self, raw: None)
        general = await _answers(_server())
    assert typed == general
    assert typed[0]["structuredContent"] == {"result": 3}
    assert typed[3]["isError"] is True
    assert typed[11][0] == "error" and typed[11][1] == -32602


def _typed(app: Server) -> TypedCalls:
    return TypedCalls(app.registry)


def test_plain_calls_are_read_in_one_pass() -> None:
    app = _server()
    calls = _typed(app)
    read = calls.read(msgspec.Raw(b'{"name":"size","arguments":{"data":"abc","times":2}}'))
    assert read is not None
    tool, params, args = read
    assert tool.name == "size" and params.task is None
    assert (args.data, args.times) == ("abc", 2)
    assert calls.read(msgspec.Raw(b'{"name":"nothing"}')) is not None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"name":"missing","arguments":{}}',
        b'{"name":"size","arguments":{"data":1}}',
        b'{"name":"size","name":"needs","arguments":{"a":1}}',  # a name given twice
        b'{"arguments":{"data":"x"}}',
        b"[1]",
        b"{",
    ],
)
def test_what_the_one_pass_refuses_goes_the_general_way(raw: bytes) -> None:
    assert _typed(_server()).read(msgspec.Raw(raw)) is None


def test_tool_list_changes_are_followed() -> None:
    app = _server()
    calls = _typed(app)
    assert calls.read(b'{"name":"later","arguments":{"x":"a"}}') is None

    @app.tool
    async def later(x: str) -> str:
        """Added after the first call."""
        return x

    read = calls.read(b'{"name":"later","arguments":{"x":"a"}}')
    assert read is not None and read[2].x == "a"
    app.registry.remove_tool("later")
    assert calls.read(b'{"name":"later","arguments":{"x":"a"}}') is None
    # Replaced behind the registry's back (no list change): never read with the old struct.
    tool = app.registry.tools["needs"]
    app.registry.tools["needs"] = app.registry.tools["size"]
    assert calls.read(b'{"name":"needs","arguments":{"a":1}}') is None
    app.registry.tools["needs"] = tool
    assert calls.read(b'{"name":"needs","arguments":{"a":1}}') is not None
