"""A big tools/call frame read whole in the tool's one typed pass (Dispatcher.pre_read, set by
the composition root; issue 22 target 2): for every shape of frame, big and small, the reply
bytes are exactly those of the general reading (the envelope decode, then the typed pass over
its raw params), and the one-pass reading really is taken for the plain big calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import trio

from runtime import Server
from runtime.middleware import Middleware, ToolCall
from runtime.protocol import ONE_PASS_OVER

from ..peers import open_stdio_peer
from ..servers import one_decode
from ..wire import RawPeer, open_memory_peer

SERVER = "tests/servers/one_decode.py"
BIG = "0123456789abcdef" * 8192  # 128 KiB
assert len(BIG) > ONE_PASS_OVER
_MODERN = (
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{}}'
)


def _request(request_id: bytes, params: bytes, head: bytes = b'"jsonrpc":"2.0",') -> bytes:
    return b"{" + head + b'"id":' + request_id + b',"method":"tools/call","params":' + params + b"}"


def _data(text: str) -> bytes:
    return msgspec.json.encode(text)


def _frames(text: str) -> list[bytes]:
    """Every shape, with ``text`` as the argument (BIG or a short one)."""
    data = _data(text)
    call = b'{"name":"size","arguments":{"data":' + data + b"}}"
    return [
        _request(b"1", call),
        _request(b'"s"', b'{"name":"size","arguments":{"data":' + data + b',"times":3}}'),
        _request(b"2.5", b'{"arguments":{"data":' + data + b'},"name":"size"}'),
        # invalid arguments: an isError result with its text
        _request(b"3", b'{"name":"size","arguments":{"data":5,"pad":' + data + b"}}"),
        _request(b"4", b'{"name":"needs","arguments":{"a":1.5,"pad":' + data + b"}}"),
        # unknown tool: -32602
        _request(b"5", b'{"name":"missing","arguments":{"data":' + data + b"}}"),
        # keys given twice: in params, in the envelope, params itself
        _request(b"6", b'{"name":"needs","name":"size","arguments":{"data":' + data + b"}}"),
        _request(b'7,"id":8', call),
        _request(b"9", b'{"name":"needs","arguments":{"a":1}},"params":' + call),
        _request(b"10", b'{"name":"size","arguments":{"data":"a"}},"params":' + call),
        # params not an object
        _request(b"11", b"[" + call + b"]"),
        _request(b"12", data),
        # params not last, whitespace, an escaped key
        b'{"jsonrpc":"2.0","method":"tools/call","params":' + call + b',"id":13}',
        _request(b"14", call + b" "),
        b'{"jsonrpc":"2.0","id":15,"method":"tools/call", "params":' + call + b"}",
        b'{"jsonrpc":"2.0","id":16,"method":"tools/call","param\\u0073":' + call + b"}",
        # not a valid request: bad version, null id, broken JSON inside params
        _request(b"17", call, head=b'"jsonrpc":"1.0",'),
        _request(b"null", call),
        _request(b"19", call[:-3] + b"}"),
        _request(b"20", b'{"name":"size","arguments":{"data":"\\ud800' + data[1:] + b"}}"),
        # a notification (no reply), then a request of another method with big params
        b'{"jsonrpc":"2.0","method":"tools/call","params":' + call + b"}",
        b'{"jsonrpc":"2.0","id":22,"method":"prompts/get","params":' + call + b"}",
        # the modern era: its _meta read in the same pass
        _request(b"23", b'{"name":"size","arguments":{"data":' + data + b"}," + _MODERN + b"}"),
        _request(
            b"24",
            b'{"name":"size","arguments":{"data":'
            + data
            + b'},"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}',
        ),
        _request(
            b"25", b'{"name":"size","_meta":{"progressToken":7},"arguments":{"data":' + data + b"}}"
        ),
        # members after params, as the official TypeScript SDK orders them
        b'{"method":"tools/call","params":' + call + b',"jsonrpc":"2.0","id":28}',
        b'{"method":"tools/call","params":' + call + b',"jsonrpc":"2.0","id":"2}9"}',
        b'{"method":"tools/call","params":' + call + b',"jsonrpc":"2.0","id":30,"id":31}',
        b'{"method":"tools/call","params":' + call + b',"jsonrpc":"2.0","params":{},"id":32}',
        # a trailing comma after params: not JSON, -32700 either way
        b'{"jsonrpc":"2.0","id":33,"method":"tools/call","params":' + call + b",}",
        # a batch holding the call (read in one pass too: test_pre_read_batch.py)
        b"[" + _request(b"26", call) + b"," + _request(b"27", b'{"name":"nothing"}') + b"]",
    ]


def _server(*, pre_read: bool, middleware: Middleware | None = None) -> tuple[Server, list[bool]]:
    app = one_decode.build()
    if middleware is not None:
        app.add_middleware(middleware)
    taken: list[bool] = []
    dispatcher = app.dispatcher
    real: Callable[[bytes], Any] | None = dispatcher.pre_read
    assert real is not None  # the composition root sets it
    if not pre_read:
        dispatcher.pre_read = None  # the general reading, as before pre_read existed
    else:

        def counted(frame: bytes) -> Any:
            found = real(frame)
            taken.append(found is not None)
            return found

        dispatcher.pre_read = counted
    return app, taken


async def _replies(app: Server, frames: list[bytes], *, handshake: bool = True) -> list[bytes]:
    async with open_memory_peer(app) as peer:
        return await _exchange(peer, frames, handshake=handshake)


async def _exchange(peer: RawPeer, frames: list[bytes], *, handshake: bool = True) -> list[bytes]:
    """The raw reply frames to each of ``frames`` (a ``ping`` after each one marks its end:
    a notification gets none)."""
    out: list[bytes] = []
    if handshake:
        await peer.initialize()
    for index, frame in enumerate(frames):
        await peer.send(frame)
        await peer.send({"jsonrpc": "2.0", "id": f"end{index}", "method": "ping"})
        while True:
            reply = await peer.receive_frame(timeout=10)
            if b'"id":"end%d"' % index in reply:
                break
            out.append(reply)
    return out


async def test_every_shape_gets_the_bytes_the_general_reading_gives() -> None:
    for text in (BIG, "short"):
        with trio.fail_after(60):
            app, taken = _server(pre_read=True)
            one_pass = await _replies(app, _frames(text))
            general = await _replies(_server(pre_read=False)[0], _frames(text))
        assert one_pass == general
        if text is BIG:
            # Taken for the plain calls (each frame above ONE_PASS_OVER was offered to it)...
            assert sum(taken) >= 10, taken
            # ... and the replies are the calls' own answers.
            first = msgspec.json.decode(one_pass[0])
            assert first["id"] == 1
            assert first["result"]["structuredContent"] == {"result": len(BIG)}
        else:
            assert taken == []  # small frames keep the general reading, untouched


async def test_the_modern_era_without_a_handshake() -> None:
    frames = [f for f in _frames(BIG) if b"2026-07-28" in f or b"1999-01-01" in f]
    assert len(frames) == 2
    with trio.fail_after(30):
        app, taken = _server(pre_read=True)
        one_pass = await _replies(app, frames, handshake=False)
        general = await _replies(_server(pre_read=False)[0], frames, handshake=False)
    assert one_pass == general and taken == [True, True]
    modern = msgspec.json.decode(one_pass[0])
    assert modern["result"]["resultType"] == "complete"
    assert modern["result"]["structuredContent"] == {"result": len(BIG)}
    assert msgspec.json.decode(one_pass[1])["error"]["code"] == -32022


async def test_over_stdio_the_bytes_are_those_of_the_general_reading() -> None:
    """The same through a served process's real pipes (``mcp-runtime serve``)."""
    frames = _frames(BIG)
    seen: dict[str, tuple[list[bytes], str]] = {}
    for general in ("0", "1"):
        env = {"ONE_DECODE_SERVED": "1", "ONE_DECODE_GENERAL": general}
        with trio.fail_after(60):
            async with open_stdio_peer(SERVER, env=env) as (peer, _process, err_path):
                replies = await _exchange(peer, frames)
                seen[general] = (replies, err_path.read_text())
    assert seen["0"][0] == seen["1"][0]
    assert seen["0"][1].count("pre_read taken") >= 8
    assert "pre_read taken" not in seen["1"][1]


async def test_the_official_sdks_frame_is_read_in_one_pass() -> None:
    """A tools/call as the official SDK's stdio client writes it (pydantic's JSON of its
    JSONRPCRequest) has its params last: the reader reads it in one pass."""
    from mcp import types

    request = types.JSONRPCRequest(
        jsonrpc="2.0",
        id=3,
        method="tools/call",
        params={"name": "size", "arguments": {"data": BIG}},
    )
    frame = request.model_dump_json(by_alias=True, exclude_unset=True).encode()
    with trio.fail_after(30):
        app, taken = _server(pre_read=True)
        replies = await _replies(app, [frame])
    assert taken == [True]
    assert msgspec.json.decode(replies[0])["result"]["structuredContent"] == {"result": len(BIG)}


class _Replace(Middleware):
    """Replaces a call's arguments: the handler must run with them, not the pre-read ones."""

    async def on_call_tool(self, call: ToolCall, call_next: Any) -> Any:
        if call.name == "size":
            call.arguments = {"data": "replaced", "times": 2}
        return await call_next()


class _Look(Middleware):
    """Reads the raw params (as logging middleware does) and changes nothing."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def on_request(self, request: Any, call_next: Any) -> Any:
        ctx = request.context
        if ctx.method == "tools/call":
            self.seen.append(len(bytes(ctx.params)))
        return await call_next()


async def test_middleware_that_replaces_params_is_obeyed() -> None:
    frames = [_request(b"1", b'{"name":"size","arguments":{"data":' + _data(BIG) + b"}}")]
    with trio.fail_after(30):
        app, taken = _server(pre_read=True, middleware=_Replace())
        one_pass = await _replies(app, frames)
        general = await _replies(_server(pre_read=False, middleware=_Replace())[0], frames)
    assert one_pass == general and taken == [True]
    assert msgspec.json.decode(one_pass[0])["result"]["structuredContent"] == {"result": 16}


async def test_middleware_sees_the_params_bytes_as_sent() -> None:
    params = b'{"name":"size","arguments":{"data":' + _data(BIG) + b"}}"
    look = _Look()
    with trio.fail_after(30):
        app, taken = _server(pre_read=True, middleware=look)
        one_pass = await _replies(app, [_request(b"1", params)])
    assert taken == [True]
    assert look.seen == [len(params)]  # ctx.params: the frame's own params bytes
    assert msgspec.json.decode(one_pass[0])["result"]["structuredContent"] == {"result": len(BIG)}
