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

from .app import META, modern, modern_headers, serving
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


async def _answers() -> list[tuple[int, Any]]:
    out = []
    async with serving(_app()) as address:
        for body, headers in _bodies():
            got = await request(address, "POST", headers=headers, body=body)
            out.append((got.status, msgspec.json.decode(got.body) if got.body else None))
    return out


async def test_the_same_answers_as_the_general_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    with trio.fail_after(20):
        typed = await _answers()
        monkeypatch.setattr(TypedCalls, "read", lambda self, raw: None)
        general = await _answers()
    assert typed == general
    assert typed[0][0] == 200 and typed[0][1]["result"]["structuredContent"] == {
        "result": 2 * len(BIG)
    }
    assert typed[1][0] == 400 and typed[1][1]["error"]["code"] == -32020
    assert typed[6][1]["error"]["code"] == -32022


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
    body, headers = _bodies()[0]
    with trio.fail_after(20):
        async with serving(_app()) as address:
            got = await request(address, "POST", headers=headers, body=body)
    assert got.status == 200, got.body
    assert msgspec.json.decode(got.body)["result"]["structuredContent"] == {"result": 2 * len(BIG)}
    # One reading, by the transport's hook; the handler took it from ctx.prepared.
    assert [(caller, BIG.encode() in raw) for caller, raw in reads] == [("prepare_raw", True)]


def test_the_bodies_are_over_the_one_pass_limit() -> None:
    assert len(BIG) > ONE_PASS_OVER  # (the one limit of every reader: runtime.protocol)
