"""The health paths answer any ``Host``: probes cannot name the public host of the allow-list
(Docker's ``HEALTHCHECK`` curls ``localhost``, Kubernetes probes the pod's IP, HAProxy's
``option httpchk`` sends no Host over HTTP/1.0), and what those paths say reveals nothing.
Every other path keeps the allow-list, on the same connection too."""

from __future__ import annotations

import json

import pytest
import trio

from ..wire import read_head
from .app import init_body, make_app, serving

ALLOWED = ["mcp.example.com"]


async def _exchange(stream: trio.SocketStream, request: bytes) -> tuple[bytes, bytes]:
    """Send ``request``; (head, body) of its Content-Length response."""
    await stream.send_all(request)
    data = await read_head(stream)
    assert data is not None, "closed before a response"
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = await stream.receive_some(4096)
        assert chunk, "closed mid-body"
        body += chunk
    return head, body


@pytest.mark.parametrize(
    "probe",
    [
        # Docker HEALTHCHECK in the docs: urllib to http://127.0.0.1:8000/healthz.
        pytest.param(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n", id="docker"),
        # Kubernetes httpGet probe: the pod's IP and port.
        pytest.param(b"GET /readyz HTTP/1.1\r\nHost: 10.1.2.3:8000\r\n\r\n", id="kubernetes"),
        # HAProxy "option httpchk GET /readyz": HTTP/1.0 without a Host.
        pytest.param(b"GET /readyz HTTP/1.0\r\n\r\n", id="haproxy"),
    ],
)
async def test_health_paths_answer_any_host(probe: bytes) -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, allowed_hosts=ALLOWED) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                head, body = await _exchange(stream, probe)
            assert head.startswith(b"HTTP/1.1 200 "), head
            # Nothing but the verdict: no version, name, address or store detail.
            assert body in (b'{"live":true}', b'{"ready":true}'), body


async def test_a_health_path_passing_does_not_open_the_mcp_path_on_its_connection() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app, allowed_hosts=ALLOWED) as address:
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                head, body = await _exchange(
                    stream, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                )
                assert head.startswith(b"HTTP/1.1 200 ") and body == b'{"live":true}'
                payload = json.dumps(init_body()).encode()
                head, body = await _exchange(
                    stream,
                    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%b"
                    % (len(payload), payload),
                )
            assert head.startswith(b"HTTP/1.1 403 "), head
            assert b"Host not allowed" in body
            # The allowed name still reaches the MCP path.
            stream = await trio.open_tcp_stream(*address)
            async with stream:
                head, _ = await _exchange(
                    stream,
                    b"POST /mcp HTTP/1.1\r\nHost: mcp.example.com\r\n"
                    b"Content-Type: application/json\r\n"
                    b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%b"
                    % (len(payload), payload),
                )
            assert head.startswith(b"HTTP/1.1 200 "), head
