"""A modern (2026-07-28) ``tools/call`` POST read in one typed pass (issue 22): the transport's
header rules and the handler share the tool's own reading of the params
(``ServerPort.read_call``, implemented by the composition root), with the same answers on
the wire as the general reading."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from runtime import Server
from runtime._handlers import TypedCalls
from runtime.protocol import ONE_PASS_OVER
from runtime.transports.http import _streamable

from ..typed_reads import record_sizes, record_typed_reads
from .app import META, call, init_body, modern, modern_headers, serving
from .http_client import request

#: Big enough for the one-pass reading (smaller params are read the general way: fewer
#: bytecodes); a test below checks that the limit is below it.
BIG = "abc" * 8000


def _app() -> Server:
    app = Server("one-pass")

    @app.tool
    async def size(data: str, times: int = 1) -> int:
        """Length of data, times."""
        return len(data) * times

    return app


def _bodies() -> list[tuple[Any, dict[str, str]]]:
    """(body, headers) pairs: plain calls, refusals by the header rules, era edge cases."""
    plain = modern(1, "tools/call", {"name": "size", "arguments": {"data": BIG, "times": 2}})
    headers = modern_headers("tools/call", "size")
    old = modern(2, "tools/call", {"name": "size", "arguments": {"data": BIG}})
    old["params"]["_meta"][META] = "1999-01-01"
    no_caps = modern(3, "tools/call", {"name": "size", "arguments": {"data": BIG}})
    del no_caps["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    not_str = modern(4, "tools/call", {"name": "size", "arguments": {"data": BIG}})
    not_str["params"]["_meta"][META] = 7
    handshake = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "size", "arguments": {"data": META + BIG}},
    }
    return [
        (plain, headers),
        (plain, modern_headers("tools/call", "other")),  # Mcp-Name disagrees: -32020
        (plain, {k: v for k, v in headers.items() if k != "mcp-name"}),
        (modern(6, "tools/call", {"name": "size", "arguments": {"data": 5, "pad": BIG}}), headers),
        (modern(7, "tools/call", {"name": "size", "pad": BIG}), headers),
        (modern(8, "tools/call", {"name": "nope", "arguments": {"x": BIG}}), headers),
        (old, {**headers, "mcp-protocol-version": "1999-01-01"}),
        (no_caps, headers),
        (not_str, headers),
        (handshake, headers),
    ]


def _raw_bodies() -> list[tuple[bytes, dict[str, str]]]:
    """Bodies as bytes, some in shapes the whole-body reading (``ServerPort.read_frame``)
    declines or whose params its typed pass refuses: the general reading answers them, as before."""
    headers = modern_headers("tools/call", "size")
    plain = msgspec.json.encode(
        modern(11, "tools/call", {"name": "size", "arguments": {"data": BIG}})
    )
    params = plain[plain.index(b'"params":') + 9 : -1]
    head = b'{"jsonrpc":"2.0","id":12,"method":"tools/call"'
    return [
        (plain, headers),
        (head + b', "params":' + params + b"}", headers),  # whitespace
        (b'{"jsonrpc":"2.0","method":"tools/call","params":' + params + b',"id":13}', headers),
        (head + b',"params":{"name":"size"},"params":' + params + b"}", headers),
        (head + b',"params":' + params[:-2] + b"}", headers),  # broken JSON
        (head.replace(b'"2.0"', b'"1.0"') + b',"params":' + params + b"}", headers),
        (b'{"jsonrpc":"2.0","method":"tools/call","params":' + params + b"}", headers),
        # members after params (the official TypeScript SDK's order)
        (b'{"method":"tools/call","params":' + params + b',"jsonrpc":"2.0","id":14}', headers),
    ]


async def _answers() -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    async with serving(_app()) as address:
        for body, headers in [*_bodies(), *_raw_bodies()]:
            got = await request(address, "POST", headers=headers, body=body)
            out.append((got.status, got.body))  # the bytes, compared exactly
    return out


async def test_the_same_answers_as_the_general_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    with trio.fail_after(20):
        typed = await _answers()
        monkeypatch.setattr(TypedCalls, "read", lambda self, raw: None)
        general = await _answers()
    assert typed == general
    decoded = [msgspec.json.decode(body) if body else None for _status, body in typed]
    assert typed[0][0] == 200
    assert decoded[0]["result"]["structuredContent"] == {"result": 2 * len(BIG)}
    assert typed[1][0] == 400 and decoded[1]["error"]["code"] == -32020
    assert decoded[6]["error"]["code"] == -32022
    assert decoded[10]["result"]["structuredContent"] == {"result": len(BIG)}


async def test_a_modern_call_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = record_typed_reads(monkeypatch)

    def general(*args: Any) -> Any:
        raise AssertionError("the general reading of the params was taken")

    monkeypatch.setattr(_streamable, "_general_params", general)
    monkeypatch.setattr(_streamable, "decode_frame", general)  # nor of the envelope
    body, headers = _bodies()[0]
    typescript, _ = _raw_bodies()[-1]  # members after params
    with trio.fail_after(20):
        async with serving(_app()) as address:
            got = await request(address, "POST", headers=headers, body=body)
            got_ts = await request(address, "POST", headers=headers, body=typescript)
    assert got.status == 200, got.body
    assert msgspec.json.decode(got.body)["result"]["structuredContent"] == {"result": 2 * len(BIG)}
    assert msgspec.json.decode(got_ts.body)["result"]["structuredContent"] == {"result": len(BIG)}
    # One reading of each whole body, by the transport's port (``ServerPort.read_frame``); the
    # header rules and the handler took it from there (ctx.prepared).
    assert [(caller, BIG.encode() in raw) for caller, raw in reads] == [("pre_read", True)] * 2


def test_the_bodies_are_over_the_one_pass_limit() -> None:
    assert len(BIG) > ONE_PASS_OVER  # (the one limit of every reader: runtime.protocol)


def _session_bodies() -> list[bytes]:
    """Bodies POSTed to a handshake-era session: calls of that era in every shape the whole-
    body reading takes or declines, calls its typed pass refuses, a modern call."""
    args = msgspec.json.encode({"data": BIG})
    params = b'{"name":"size","arguments":' + args + b"}"
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call"'
    bodies = [
        msgspec.json.encode(call(20, "size", data=BIG)),
        msgspec.json.encode(call("s", "size", progress=7, data=BIG)),
        head % 21 + b',"params":{"arguments":' + args + b',"name":"size"}}',
        head % 22 + b',"params":{"name":"size","arguments":{"data":5,"pad":' + args + b"}}}",
        head % 23 + b',"params":{"name":"nope","arguments":' + args + b"}}",
        head % 24 + b',"params":{"name":"nope","name":"size","arguments":' + args + b"}}",
        head % 25 + b',"params":{"name":"size"},"params":' + params + b"}",
        head % 26 + b', "params":' + params + b"}",  # whitespace
        head % 27 + b',"params":' + params[:-2] + b"}",  # broken JSON
        (head % 28).replace(b'"2.0"', b'"1.0"') + b',"params":' + params + b"}",
        b'{"jsonrpc":"2.0","id":null,"method":"tools/call","params":' + params + b"}",
        b'{"jsonrpc":"2.0","id":29,"method":"prompts/get","params":' + params + b"}",
        # members after params (the official TypeScript SDK's order)
        b'{"method":"tools/call","params":' + params + b',"jsonrpc":"2.0","id":30}',
        b'{"method":"tools/call","params":' + params + b',"jsonrpc":"2.0","id":31,"id":32}',
        # the marker key inside the arguments: still the handshake era
        msgspec.json.encode(call(33, "size", data=META + BIG)),
        msgspec.json.encode(call(35, "size", data="short")),
        # a modern call POSTed to the session (with and without its headers), one with an
        # unknown version
        msgspec.json.encode(modern(34, "tools/call", {"name": "size", "arguments": {"data": BIG}})),
    ]
    old = modern(36, "tools/call", {"name": "size", "arguments": {"data": BIG}})
    old["params"]["_meta"][META] = "1999-01-01"
    return [*bodies, bodies[-1], msgspec.json.encode(old)]


#: The bodies of ``_session_bodies`` POSTed with the 2026-07-28 headers too.
_MODERN_HEADERS = (-2, -1)


async def _session_answers() -> list[tuple[int, bytes]]:
    """The status and body bytes of each of ``_session_bodies`` POSTed to one session."""
    out: list[tuple[int, bytes]] = []
    async with serving(_app()) as address:
        init = await request(address, "POST", body=init_body())
        session = {"mcp-session-id": init.headers["mcp-session-id"]}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await request(address, "POST", headers=session, body=initialized)
        bodies = _session_bodies()
        for index, body in enumerate(bodies):
            headers = dict(session)
            if index - len(bodies) in _MODERN_HEADERS:
                headers.update(modern_headers("tools/call", "size"))
            if index == len(bodies) - 1:
                headers["mcp-protocol-version"] = "1999-01-01"
            got = await request(address, "POST", headers=headers, body=body)
            out.append((got.status, got.body))
    return out


async def test_session_calls_get_the_general_readings_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every shape POSTed to a handshake-era session: the same status and bytes as the
    general reading (the envelope decode, then the typed pass over the raw params)."""
    taken: list[bool] = []
    real = TypedCalls.pre_read

    def pre_read(self: Any, frame: Any) -> Any:
        found = real(self, frame)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(TypedCalls, "pre_read", pre_read)
    with trio.fail_after(30):
        typed = await _session_answers()
        assert sum(taken) >= 8, taken  # the plain calls were read whole, with the body
        monkeypatch.setattr(TypedCalls, "read", lambda self, raw: None)
        general = await _session_answers()
    assert typed == general
    decoded = [msgspec.json.decode(body) if body else None for _status, body in typed]
    assert typed[0][0] == 200
    assert decoded[0]["result"]["structuredContent"] == {"result": len(BIG)}
    assert decoded[3]["result"]["isError"] is True
    assert decoded[4]["error"]["code"] == -32602
    assert decoded[-3]["error"]["code"] == -32020  # the modern call without its headers
    assert decoded[-2]["result"]["resultType"] == "complete"
    assert decoded[-1]["error"]["code"] == -32022


async def test_a_session_call_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handshake-era call POSTed to a session: its body read whole by the transport's hook
    (``ServerPort.read_frame``), in the tool's one typed pass; the POST's modern check, era
    selection and the handler take that reading (``SessionConnection.run_request``'s
    ``prepared``), no envelope decode of the body."""
    reads = record_typed_reads(monkeypatch)
    decoded = record_sizes(monkeypatch, _streamable, "decode_frame")
    bodies = [call(2, "size", data=BIG), _session_bodies()[12]]  # (the TypeScript order)
    with trio.fail_after(20):
        async with serving(_app()) as address:
            init = await request(address, "POST", body=init_body())
            session = {"mcp-session-id": init.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await request(address, "POST", headers=session, body=initialized)
            got = [await request(address, "POST", headers=session, body=b) for b in bodies]
    for answer in got:
        assert answer.status == 200, answer.body
        result = msgspec.json.decode(answer.body)["result"]
        assert result["structuredContent"] == {"result": len(BIG)}
    assert [(caller, BIG.encode() in raw) for caller, raw in reads] == [("pre_read", True)] * 2
    assert decoded and max(decoded) < len(BIG)  # the small bodies only


async def test_session_batches_get_the_general_readings_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batches holding a big call POSTed to a 2025-03-26 session (the revision that allows
    them): the session's reader reads the call in one typed pass (``Dispatcher.pre_read``);
    the same status and bytes as the general reading, each item answered on its own."""
    small = msgspec.json.encode(call("a", "size", data="x"))
    ping = b'{"jsonrpc":"2.0","id":"p","method":"ping"}'
    bodies = [b"[" + body + b"]" for body in _session_bodies()[:15]]
    bodies += [b"[" + small + b"," + body + b"," + ping + b"]" for body in _session_bodies()[:15]]
    taken: list[bool] = []
    real = TypedCalls.pre_read

    def pre_read(self: Any, frame: Any) -> Any:
        found = real(self, frame)
        taken.append(found is not None and isinstance(found[0], list))
        return found

    async def answers() -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        async with serving(_app()) as address:
            init = await request(address, "POST", body=init_body("2025-03-26"))
            session = {"mcp-session-id": init.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await request(address, "POST", headers=session, body=initialized)
            for body in bodies:
                got = await request(address, "POST", headers=session, body=body)
                out.append((got.status, got.body))
        return out

    monkeypatch.setattr(TypedCalls, "pre_read", pre_read)
    with trio.fail_after(60):
        typed = await answers()
        # (The plain calls' batches, seven of each kind; the POST answers the broken ones.)
        assert sum(taken) >= 14, taken
        monkeypatch.setattr(TypedCalls, "read", lambda self, raw: None)
        general = await answers()
    assert typed == general
    first = msgspec.json.decode(typed[15][1])
    assert [item["id"] for item in first] == ["a", 20, "p"]
    assert first[1]["result"]["structuredContent"] == {"result": len(BIG)}
