"""A big tools/call inside a JSON-RPC batch read in the tool's one typed pass
(``Dispatcher.pre_read``, ``runtime.protocol.split_batch_params``; issue 22 target 2): for
every shape of call, at every place in a batch among small items, the batch's reply bytes are
exactly those of the general reading (the batch decode, each item's envelope decode, then the
typed pass over its raw params), each item answered on its own."""

from __future__ import annotations

import msgspec
import pytest
import trio

from runtime import Server
from runtime.core import _reader

from ..peers import open_stdio_peer
from ..typed_reads import record_sizes, record_typed_reads
from ..wire import RawPeer, open_memory_peer
from .test_pre_read import BIG, SERVER, _data, _frames, _request, _server

#: The one revision whose spec allows JSON-RPC batches.
BATCHES = "2025-03-26"
_SMALL = [
    _request(b'"a"', b'{"name":"nothing"}'),
    b'{"jsonrpc":"2.0","id":"b","method":"ping"}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}',
    b'{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"missing"}}',
    b"[1]",
    b'{"jsonrpc":"2.0","id":"d","method":"nope"}',
]


def _batches(text: str) -> list[bytes]:
    """Each single-frame shape (``test_pre_read._frames``) inside batches: alone, first,
    last, between small items (requests, a notification, invalid items), with whitespace."""
    out = []
    for index, frame in enumerate(_frames(text)):
        if frame.startswith(b"["):
            continue
        small = [_SMALL[index % len(_SMALL)], _SMALL[(index + 1) % len(_SMALL)]]
        out += [
            b"[" + frame + b"]",
            b"[" + small[0] + b"," + frame + b"]",
            b"[" + frame + b"," + small[1] + b"]",
            b"[" + small[0] + b"," + frame + b"," + small[1] + b"]",
            b"[" + small[1] + b" ,\t" + frame + b" , " + small[0] + b"]",
        ]
    call = b'{"name":"size","arguments":{"data":' + _data(text) + b"}}"
    out += [
        # two big calls, a big call after a long small item, broken JSON after it
        b"[" + _request(b"40", call) + b"," + _request(b"41", call) + b"]",
        b'[{"jsonrpc":"2.0","method":"n","params":{"p":"'
        + b"p" * 5000
        + b'"}},'
        + _request(b"42", call)
        + b"]",
        b"[" + _request(b"43", call) + b",{]",
        b"[" + _request(b"44", call) + b"]" + b" ",
    ]
    return out


async def _replies(app: Server, frames: list[bytes]) -> list[bytes]:
    async with open_memory_peer(app) as peer:
        return await _exchange(peer, frames)


async def _exchange(peer: RawPeer, frames: list[bytes]) -> list[bytes]:
    """The raw reply frames to each of ``frames`` (a ``ping`` after each marks its end)."""
    client = {"name": "t", "version": "0"}
    await peer.call(
        "initialize", {"protocolVersion": BATCHES, "capabilities": {}, "clientInfo": client}
    )
    await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    out: list[bytes] = []
    for index, frame in enumerate(frames):
        await peer.send_bytes(peer.frame(frame))
        await peer.send({"jsonrpc": "2.0", "id": f"end{index}", "method": "ping"})
        while True:
            reply = await peer.receive_frame(timeout=10)
            if b'"id":"end%d"' % index in reply:
                break
            out.append(reply)
    return out


async def test_every_shape_in_a_batch_gets_the_bytes_the_general_reading_gives() -> None:
    for text in (BIG, "short"):
        frames = _batches(text)
        with trio.fail_after(120):
            app, taken = _server(pre_read=True)
            one_pass = await _replies(app, frames)
            general = await _replies(_server(pre_read=False)[0], frames)
        assert one_pass == general
        if text is BIG:
            assert sum(taken) >= 60, taken  # the plain calls, at every place in a batch
            first = msgspec.json.decode(one_pass[0])
            assert isinstance(first, list) and first[0]["id"] == 1
            assert first[0]["result"]["structuredContent"] == {"result": len(BIG)}
        else:
            assert taken == []


async def test_each_item_is_answered_on_its_own() -> None:
    """A big call's own failures (invalid arguments, an unknown tool) stay in its item; the
    small items around it are answered as ever."""
    data = _data(BIG)
    frames = [
        b"["
        + _SMALL[0]
        + b","
        + _request(b"1", b'{"name":"size","arguments":{"data":' + data + b"}}")
        + b","
        + _request(b"2", b'{"name":"size","arguments":{"data":5,"pad":' + data + b"}}")
        + b","
        + _request(b"3", b'{"name":"missing","arguments":{"data":' + data + b"}}")
        + b","
        + _SMALL[1]
        + b"]"
    ]
    with trio.fail_after(60):
        app, taken = _server(pre_read=True)
        (reply,) = await _replies(app, frames)
    assert taken == [False]  # three big items: read the general way, item by item
    answers = {item["id"]: item for item in msgspec.json.decode(reply)}
    assert answers["a"]["result"]["content"][0]["text"] == "ok"
    assert answers[1]["result"]["structuredContent"] == {"result": len(BIG)}
    assert answers[2]["result"]["isError"] is True
    assert answers[3]["error"]["code"] == -32602
    assert answers["b"]["result"] == {}
    for shape in (b'{"data":5,"pad":' + data + b"}", b'{"data":' + data + b"}"):
        name = b'"size"' if b'"pad"' in shape else b'"missing"'
        frame = (
            b"["
            + _SMALL[0]
            + b","
            + _request(b"9", b'{"name":' + name + b',"arguments":' + shape + b"}")
            + b","
            + _SMALL[1]
            + b"]"
        )
        with trio.fail_after(60):
            app, taken = _server(pre_read=True)
            (one_pass,) = await _replies(app, [frame])
            (general,) = await _replies(_server(pre_read=False)[0], [frame])
        assert one_pass == general and taken == [False]  # declined by the typed pass
        answers = {item["id"]: item for item in msgspec.json.decode(one_pass)}
        assert answers["a"]["result"]["content"][0]["text"] == "ok"
        assert answers["b"]["result"] == {}
        assert ("error" in answers[9]) == (name == b'"missing"')


async def test_over_stdio_a_batch_is_read_in_one_pass() -> None:
    """The same through a served process's real pipes (``mcp-runtime serve``)."""
    frames = _batches(BIG)
    seen: dict[str, tuple[list[bytes], str]] = {}
    for general in ("0", "1"):
        env = {"ONE_DECODE_SERVED": "1", "ONE_DECODE_GENERAL": general}
        with trio.fail_after(120):
            async with open_stdio_peer(SERVER, env=env) as (peer, _process, err_path):
                replies = await _exchange(peer, frames)
                seen[general] = (replies, err_path.read_text())
    assert seen["0"][0] == seen["1"][0]
    assert seen["0"][1].count("pre_read taken") >= 60
    assert "pre_read taken" not in seen["1"][1]


async def test_a_call_in_a_batch_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """One typed pass over the big call's bytes (``pre_read``); era selection and the handler
    take that reading; neither the batch nor the item is decoded whole."""
    reads = record_typed_reads(monkeypatch)
    decoded = record_sizes(monkeypatch, _reader, "decode_frame")
    items = record_sizes(monkeypatch, _reader, "decode_item")
    call = _request(b"1", b'{"name":"size","arguments":{"data":' + _data(BIG) + b"}}")
    frame = b"[" + _SMALL[0] + b"," + call + b"," + _SMALL[1] + b"]"
    with trio.fail_after(30):
        (reply,) = await _replies(_server(pre_read=True)[0], [frame])
    answers = {item["id"]: item for item in msgspec.json.decode(reply)}
    assert answers[1]["result"]["structuredContent"] == {"result": len(BIG)}
    assert answers["a"]["result"]["content"][0]["text"] == "ok"
    assert [(caller, BIG.encode() in raw) for caller, raw in reads] == [("pre_read", True)]
    assert decoded and max(decoded + items) < len(BIG)  # the small frames and items only
