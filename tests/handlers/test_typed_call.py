"""tools/call params read in one typed pass (handlers/_typed_call.py): the same answers as the
general reading for every shape of params, and the one-pass reading really taken for the
plain ones."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from runtime import JSONRPCError, Server
from runtime._handlers import era
from runtime._handlers._typed_call import TypedCalls
from runtime.core import RequestContext, Session, _reader
from runtime.protocol import ONE_PASS_OVER
from runtime.testing import open_client

from ..servers.one_decode import build as _server
from ..typed_reads import record_sizes, record_typed_reads
from ..wire import open_memory_peer

_VERSION = "io.modelcontextprotocol/protocolVersion"
_BIG = "abcd" * 5000  # over ONE_PASS_OVER: era selection reads it in the typed pass
_MODERN = {_VERSION: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
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
    # Era selection reads _meta from the same typed pass (era.McpDispatcher.route):
    {"name": "size", "arguments": {"data": "io.modelcontextprotocol/protocolVersion"}},
    {"name": "size", "arguments": {"data": "x"}, "_meta": {_VERSION: "1999-01-01"}},
    {"name": "size", "arguments": {"data": "x"}, "_meta": {_VERSION: "2026-07-28"}},
    {"name": "size", "arguments": {"data": "x"}, "_meta": {_VERSION: 7}},
    {
        "name": "size",
        "arguments": {"data": "xy"},
        "_meta": _MODERN,
    },
    # The same, big: era selection takes the typed pass.
    {"name": "size", "arguments": {"data": _VERSION + _BIG}},
    {"name": "size", "arguments": {"data": _BIG}, "_meta": {_VERSION: "1999-01-01"}},
    {"name": "size", "arguments": {"data": _BIG}, "_meta": {_VERSION: 7}},
    {"name": "size", "arguments": {"data": _BIG}, "_meta": _MODERN},
    {"name": "size", "arguments": {"data": _BIG}, "_meta": 3},
    {"name": "size", "arguments": {"data": 5, "pad": _BIG}},
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


async def test_a_call_is_read_once_era_selection_included(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Era selection's reading of ``_meta`` is the handler's reading of the arguments, and the
    envelope is read without them: one typed pass over the bytes of a big call (issue 22),
    no probe of the params for the era marker, no envelope decode of the frame."""
    reads = record_typed_reads(monkeypatch)
    decoded = record_sizes(monkeypatch, _reader, "decode_frame")
    monkeypatch.setattr(
        era, "_probe", None
    )  # a probe of the params for _meta would fail the call loudly
    with trio.fail_after(20):
        async with open_client(_server()) as client:
            result = await client.request(
                "tools/call", {"name": "size", "arguments": {"data": _BIG}}
            )
    assert result["structuredContent"] == {"result": len(_BIG)}
    # Read once, with the frame (``pre_read``, through the reader's ``Dispatcher.pre_read``);
    # era selection found no marker in that reading's raw _meta.
    assert [(caller, _BIG.encode() in raw) for caller, raw in reads] == [("pre_read", True)]
    assert len(_BIG) > ONE_PASS_OVER
    assert decoded and max(decoded) < len(_BIG)  # the small frames only (the handshake)


async def test_a_call_the_reader_did_not_read_is_read_once_by_era_selection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A big call whose frame the reader leaves to the general decode (here: whitespace
    before its params) is read in one typed pass by era selection, taken by the handler."""
    reads = record_typed_reads(monkeypatch)
    frame = b'{"jsonrpc":"2.0","id":1,"method":"tools/call", "params":%s}' % msgspec.json.encode(
        {"name": "size", "arguments": {"data": _BIG}}
    )
    with trio.fail_after(20):
        async with open_memory_peer(_server()) as peer:
            await peer.initialize()
            await peer.send(frame)
            reply = await peer.receive()
    assert reply["result"]["structuredContent"] == {"result": len(_BIG)}
    # declined by the split, before any typed pass
    assert [caller for caller, _raw in reads] == ["for_request"]


async def test_a_big_modern_call_is_read_once_era_selection_included(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A big 2026-07-28 call over a stream: era selection takes ``_meta`` (decoded, with the
    protocol version and capabilities) from the one typed pass of the frame, and the handler
    the arguments; no probe of the params for ``_meta``, no second pass over them."""
    reads = record_typed_reads(monkeypatch)
    monkeypatch.setattr(era, "_probe", None)  # a probe of the params would fail the call
    frame = msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "size", "arguments": {"data": _BIG}, "_meta": _MODERN},
        }
    )
    with trio.fail_after(20):
        async with open_memory_peer(_server()) as peer:
            await peer.send(frame)  # (no initialize: a modern request stands alone)
            reply = await peer.receive()
    assert reply["result"]["structuredContent"] == {"result": len(_BIG)}
    assert reply["result"]["resultType"] == "complete"  # served at the modern revision
    assert [(caller, _BIG.encode() in raw) for caller, raw in reads] == [("pre_read", True)]


def _ctx(raw: bytes) -> RequestContext:
    return RequestContext("tools/call", 1, msgspec.Raw(raw), Session("test"), None)  # type: ignore[arg-type]


def test_a_prepared_reading_is_taken_only_for_its_own_params() -> None:
    app = _server()
    calls = _typed(app)
    big = "x" * (ONE_PASS_OVER + 1)
    ctx = _ctx(b'{"name":"size","arguments":{"data":"abc"}}')
    assert ctx.params is not None
    prepared = ctx.prepared = calls.read(ctx.params)  # (as the HTTP transport reads it)
    assert prepared is not None and calls.for_request(ctx) is prepared
    # Params replaced after era selection (a middleware, say): read afresh when big...
    ctx.params = msgspec.Raw(b'{"name":"size","arguments":{"data":"%s"}}' % big.encode())
    read = calls.for_request(ctx)
    assert read is not None and read.arguments.data == big  # type: ignore[union-attr]
    # A small call era selection did not read is left to the general reading (fewer
    # bytecodes for a small call).
    assert calls.for_request(_ctx(b'{"name":"size","arguments":{"data":"other"}}')) is None
    # Another server's reader, or the tool replaced meanwhile: read afresh.
    ctx = _ctx(b'{"name":"size","arguments":{"data":"%s"}}' % big.encode())
    prepared = calls.for_request(ctx)
    assert prepared is not None and ctx.prepared is prepared
    assert _typed(app).for_request(ctx) is not prepared
    ctx.prepared = prepared
    assert calls.for_request(ctx) is prepared
    app.registry.tools["size"] = app.registry.tools["needs"]
    assert calls.for_request(ctx) is None  # now read by the other tool's struct: refused


def _typed(app: Server) -> Any:
    return TypedCalls(app.registry)


def test_plain_calls_are_read_in_one_pass() -> None:
    app = _server()
    calls = _typed(app)
    read = calls.read(msgspec.Raw(b'{"name":"size","arguments":{"data":"abc","times":2}}'))
    assert read is not None
    assert read.tool.name == "size" and read.task is None
    assert (read.arguments.data, read.arguments.times) == ("abc", 2)
    assert calls.read(msgspec.Raw(b'{"name":"nothing"}')) is not None


#: Params the typed reading declines: the general way answers them.
REFUSED = [
    b'{"name":"missing","arguments":{}}',
    b'{"name":"size","arguments":{"data":1}}',
    b'{"name":"size","name":"needs","arguments":{"a":1}}',  # a name given twice
    b'{"arguments":{"data":"x"}}',
    b"[1]",
    b"{",
    b'{"name":"size","arguments":{"data":"x"},"_meta":3}',  # the general reading: -32602
    b'{"name":"size","arguments":{"data":"x"},"task":"soon"}',
]


@pytest.mark.parametrize("raw", REFUSED)
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
    assert read is not None and read.arguments.x == "a"
    assert read.tool is app.registry.tools["later"]
    app.registry.remove_tool("later")
    assert calls.read(b'{"name":"later","arguments":{"x":"a"}}') is None
    # Replaced behind the registry's back (no list change): never read with the old struct.
    tool = app.registry.tools["needs"]
    app.registry.tools["needs"] = app.registry.tools["size"]
    assert calls.read(b'{"name":"needs","arguments":{"a":1}}') is None
    app.registry.tools["needs"] = tool
    assert calls.read(b'{"name":"needs","arguments":{"a":1}}') is not None


def test_pre_read_reads_a_whole_call_frame_in_one_pass() -> None:
    app = _server()
    calls = _typed(app)
    params = b'{"name":"size","arguments":{"data":"%s","times":2}}' % _BIG.encode()
    frame = b'{"jsonrpc":"2.0","id":"q","method":"tools/call","params":%s}' % params
    found = calls.pre_read(frame)
    assert found is not None
    envelope, prepared = found
    assert (envelope.jsonrpc, envelope.id, envelope.method) == ("2.0", "q", "tools/call")
    assert isinstance(envelope.params, msgspec.Raw) and bytes(envelope.params) == params
    assert prepared.raw is envelope.params and prepared.name == "size"
    assert (prepared.arguments.data, prepared.arguments.times) == (_BIG, 2)
    # Era selection and the handler take this reading for these params, no second pass.
    ctx = _ctx(b"{}")
    ctx.params, ctx.prepared = envelope.params, prepared
    assert calls.for_request(ctx) is prepared and calls.for_request(ctx) is prepared
    # Another method, another shape, or params the typed pass refuses: the general way.
    assert calls.pre_read(frame.replace(b"tools/call", b"prompts/get")) is None
    assert calls.pre_read(frame.replace(b',"params"', b', "params"')) is None
    assert calls.pre_read(frame.replace(b'"name":"size"', b'"name":"missing"')) is None
    assert calls.pre_read(frame.replace(b'"times":2', b'"times":"2"')) is None


def test_read_reads_meta_name_and_arguments_in_one_pass() -> None:
    calls = _typed(_server())
    raw = msgspec.Raw(
        msgspec.json.encode(
            {"name": "size", "arguments": {"data": "abc", "times": 2}, "_meta": _MODERN}
        )
    )
    call = calls.read(raw)
    assert call is not None and call.raw is raw
    assert call.name == "size" and call.tool is _server_tool(calls, "size")
    assert call.meta == _MODERN and call.task is None
    assert (call.arguments.data, call.arguments.times) == ("abc", 2)
    assert calls.read(msgspec.Raw(b'{"name":"nothing"}')).arguments is msgspec.UNSET


def _server_tool(calls: Any, name: str) -> Any:
    return calls._registry.tools[name]
