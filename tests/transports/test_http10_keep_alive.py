"""HTTP/1.0 persistent connections (RFC 9112 appendix C.2.2, the ``keep-alive`` of RFC 2068
section 19.7.1, which load tools such as ``ab -k`` use): an HTTP/1.0 request with
``Connection: keep-alive`` gets ``Connection: keep-alive`` and a Content-Length, and the
connection stays open; a streamed (SSE) answer ends with the connection (HTTP/1.0 has no
chunked coding); without the option HTTP/1.0 closes after each response. Raw bytes on a real
loopback socket."""

from __future__ import annotations

import json
from typing import Any

import trio

from ..wire import read_head
from .app import make_app, modern, serving


def _post(body: dict[str, Any], *, version: bytes = b"1.0", extra: bytes = b"") -> bytes:
    payload = json.dumps(body).encode()
    method, name = body["method"], body["params"].get("name")
    return (
        b"POST /mcp HTTP/%b\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n"
        b"Mcp-Method: %b\r\n%b%bContent-Length: %d\r\n\r\n%b"
        % (
            version,
            method.encode(),
            b"Mcp-Name: %b\r\n" % name.encode() if name else b"",
            extra,
            len(payload),
            payload,
        )
    )


def _fields(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


async def _response(stream: trio.SocketStream) -> tuple[bytes, dict[str, str], bytes]:
    """One Content-Length response off ``stream``: (status line, fields, body)."""
    data = await read_head(stream)
    assert data is not None, "the server closed before answering"
    head, _, body = data.partition(b"\r\n\r\n")
    fields = _fields(head)
    length = int(fields["content-length"])
    while len(body) < length:
        chunk = await stream.receive_some(65536)
        assert chunk, "closed mid-body"
        body += chunk
    assert len(body) == length, "bytes after the body: nothing was asked for them"
    return head.split(b"\r\n", 1)[0], fields, body


async def _closed(stream: trio.SocketStream) -> bool:
    """Whether the server closes ``stream`` (EOF) within a second."""
    with trio.move_on_after(1.0):
        return await stream.receive_some(1) == b""
    return False


def _add(request_id: int, a: int, b: int) -> dict[str, Any]:
    return modern(request_id, "tools/call", {"name": "add", "arguments": {"a": a, "b": b}})


async def test_http10_keep_alive_keeps_the_connection_for_request_after_request() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                for n in range(3):
                    await stream.send_all(_post(_add(n, n, 1), extra=b"Connection: keep-alive\r\n"))
                    status, fields, body = await _response(stream)
                    assert status.startswith(b"HTTP/1.1 200 "), status
                    assert fields["connection"] == "keep-alive", fields
                    assert "transfer-encoding" not in fields
                    assert json.loads(body)["result"]["content"][0]["text"] == str(n + 1)
                # A GET on the same connection too (ab's default request).
                await stream.send_all(
                    b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: Keep-Alive\r\n\r\n"
                )
                status, fields, body = await _response(stream)
                assert status.startswith(b"HTTP/1.1 200 ") and body == b'{"live":true}'
                assert fields["connection"] == "keep-alive", fields
                # An error answer keeps it as well (HttpError, answered by the driver).
                await stream.send_all(
                    b"GET /nowhere HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n"
                )
                status, fields, _ = await _response(stream)
                assert status.startswith(b"HTTP/1.1 404 ") and fields["connection"] == "keep-alive"
                assert not await _closed(stream)


async def test_http10_without_keep_alive_closes_after_the_response() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                await stream.send_all(_post(_add(1, 2, 3)))
                status, fields, body = await _response(stream)
                assert status.startswith(b"HTTP/1.1 200 ") and fields["connection"] == "close"
                assert json.loads(body)["result"]["content"][0]["text"] == "5"
                assert await _closed(stream)
            # "close" wins over "keep-alive" when both are sent.
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                await stream.send_all(
                    _post(_add(1, 2, 3), extra=b"Connection: keep-alive, close\r\n")
                )
                _, fields, _ = await _response(stream)
                assert fields["connection"] == "close"
                assert await _closed(stream)


async def test_an_http10_stream_ends_with_its_connection_even_with_keep_alive() -> None:
    """A streamed answer has no length known up front and HTTP/1.0 has no chunked coding: the
    end of the connection is the end of the body (RFC 9112 section 6.3), keep-alive or not."""
    app, _ = make_app()
    countdown = modern(
        7,
        "tools/call",
        {"name": "countdown", "arguments": {"start": 2}, "_meta": {"progressToken": "t"}},
    )
    with trio.fail_after(10):
        async with serving(app) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                await stream.send_all(_post(countdown, extra=b"Connection: keep-alive\r\n"))
                data = await read_head(stream)
                assert data is not None
                head, _, body = data.partition(b"\r\n\r\n")
                fields = _fields(head)
                assert head.startswith(b"HTTP/1.1 200 "), head
                assert fields["content-type"] == "text/event-stream"
                assert fields["connection"] == "close", fields
                assert "transfer-encoding" not in fields and "content-length" not in fields
                while chunk := await stream.receive_some(65536):
                    body += chunk
            events = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]
            assert json.loads(events[-1])["result"]["content"][0]["text"] == "liftoff"
            assert b"\r\n0\r\n" not in body  # no chunk framing in an HTTP/1.0 body


async def test_http11_is_unchanged_by_the_http10_rule() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                for n in range(2):
                    await stream.send_all(_post(_add(n, n, n), version=b"1.1"))
                    status, fields, _ = await _response(stream)
                    assert status.startswith(b"HTTP/1.1 200 ") and "connection" not in fields
                assert not await _closed(stream)
