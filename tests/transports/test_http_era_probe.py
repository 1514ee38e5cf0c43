"""A POST to a session gets the modern typed reading of its params only when they can be modern
(issue 22 target 1): small params without the ``io.modelcontextprotocol/protocolVersion`` key
in their bytes are routed without a typed pass; with the key anywhere (in ``_meta`` or inside
the arguments) the reading decides, as before. A POST without ``Mcp-Session-Id`` is read as
before (a modern POST pays no search for the key)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from runtime import Server
from runtime._handlers import TypedCalls
from runtime.transports.http import _modern, _streamable

from .app import META, call, init_body, modern, modern_headers, serving
from .http_client import JSON_AND_SSE, request


def _app() -> Server:
    app = Server("era-probe")

    @app.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    return app


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The params given to a modern typed pass: the transport's own (``modern_params``) or,
    for a small ``tools/call``, the tool's (``TypedCalls.read``, which reads ``_meta`` in
    the same pass)."""
    seen: list[bytes] = []
    real = _modern.modern_params
    typed_calls = TypedCalls
    real_call = typed_calls.read

    def counted(raw: Any) -> Any:
        seen.append(bytes(raw))
        return real(raw)

    def counted_call(self: Any, raw: Any) -> Any:
        seen.append(bytes(raw))
        return real_call(self, raw)

    monkeypatch.setattr(_streamable, "modern_params", counted)
    monkeypatch.setattr(typed_calls, "read", counted_call)
    return seen


async def test_a_session_post_gets_no_modern_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _counting(monkeypatch)
    accept = {"accept": JSON_AND_SSE}
    with trio.fail_after(20):
        async with serving(_app()) as address:
            opened = await request(address, "POST", headers=accept, body=init_body())
            assert opened.status == 200, opened.body
            assert len(seen) == 1  # no session yet: initialize is read as it always was
            headers = {
                **accept,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            plain = await request(address, "POST", headers=headers, body=call(2, "echo", text="hi"))
            assert len(seen) == 1  # the session's call: no typed pass over its params
            # The marker inside the arguments: read, found not modern, served by the session.
            body = call(3, "echo", text=META)
            marked = await request(address, "POST", headers=headers, body=body)
    for got, text in ((plain, "hi"), (marked, META)):
        assert got.status == 200, got.body
        reply = msgspec.json.decode(got.body)
        assert reply["result"]["content"] == [{"type": "text", "text": text}]
    assert len(seen) == 2 and META.encode() in seen[1]


async def test_a_modern_post_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _counting(monkeypatch)
    body = modern(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    headers = {"accept": JSON_AND_SSE, **modern_headers("tools/call", "echo")}
    with trio.fail_after(20):
        async with serving(_app()) as address:
            got = await request(address, "POST", headers=headers, body=body)
            # Without the version header the header rules refuse it: it was read as modern.
            del headers["mcp-protocol-version"]
            refused = await request(address, "POST", headers=headers, body=body)
    assert got.status == 200, got.body
    assert msgspec.json.decode(got.body)["result"]["content"][0]["text"] == "hi"
    assert refused.status == 400 and msgspec.json.decode(refused.body)["error"]["code"] == -32020
    assert len(seen) == 2
