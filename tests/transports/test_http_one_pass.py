"""A modern (2026-07-28) ``tools/call`` POST read in one typed pass (issue 22): the transport's
header rules and the handler share the tool's own reading of the params (``Hooks.read_call``,
wired by the composition root), with the same answers on the wire as the general reading."""

from __future__ import annotations

import sys
from typing import Any

import msgspec
import pytest
import trio

from runtime import Server
from runtime._compose import load_handlers
from runtime.protocol import ONE_PASS_OVER
from runtime.transports.http import _streamable

from .app import META, call, init_body, modern, modern_headers, serving
from .http_client import request

TypedCalls: Any = load_handlers().TypedCalls  # the module the server runs
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
    """Bodies as bytes, some in shapes the whole-body reading (``Hooks.read_frame``) declines
    or whose params its typed pass refuses: the general reading answers them, as before."""
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
    reads: list[tuple[str, bytes]] = []
    real = TypedCalls.read

    def counted(self: Any, raw: Any) -> Any:
        reads.append((sys._getframe(1).f_code.co_name, bytes(raw)))
        return real(self, raw)

    def general(*args: Any) -> Any:
        raise AssertionError("the general reading of the params was taken")

    monkeypatch.setattr(TypedCalls, "read", counted)
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
    # One reading of each whole body, by the transport's hook (``Hooks.read_frame``); the
    # header rules and the handler took it from there (ctx.prepared).
    assert [(caller, BIG.encode() in raw) for caller, raw in reads] == [("pre_read", True)] * 2


def test_the_bodies_are_over_the_one_pass_limit() -> None:
    assert len(BIG) > ONE_PASS_OVER  # (the one limit of every reader: runtime.protocol)


async def test_a_session_call_keeps_the_general_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handshake-era call POSTed to a session is not read whole by the transport (the
    session's connection reads its params, as before ``Hooks.read_frame``); the answers equal
    the general reading's, byte for byte. (Its params are read twice in the typed pass today:
    by the modern check of the POST and by era selection; a known cost, not this path's.)"""
    reads: list[str] = []
    real = TypedCalls.read

    def counted(self: Any, raw: Any) -> Any:
        reads.append(sys._getframe(1).f_code.co_name)
        return real(self, raw)

    async def answer() -> tuple[int, bytes]:
        async with serving(_app()) as address:
            init = await request(address, "POST", body=init_body())
            session = {"mcp-session-id": init.headers["mcp-session-id"]}
            await request(
                address,
                "POST",
                headers=session,
                body={"jsonrpc": "2.0", "method": "notifications/initialized"},
            )
            got = await request(address, "POST", headers=session, body=call(2, "size", data=BIG))
        return got.status, got.body

    monkeypatch.setattr(TypedCalls, "read", counted)
    with trio.fail_after(20):
        typed = await answer()
        assert reads and "pre_read" not in reads
        monkeypatch.setattr(TypedCalls, "read", lambda self, raw: None)
        general = await answer()
    assert typed == general and typed[0] == 200
    assert msgspec.json.decode(typed[1])["result"]["structuredContent"] == {"result": len(BIG)}
