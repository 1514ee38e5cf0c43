"""issue 16 item 6 at the HTTP edge: a Host with a non-numeric port, an absolute-form target
naming a foreign authority, and an Accept that refuses with q=0."""

from __future__ import annotations

import pytest
import trio

from runtime.transports import EdgePolicy

from .app import init_body, make_app, serving
from .http_client import request


@pytest.mark.parametrize(
    "host",
    ["localhost:evil.com", "127.0.0.1:evil.com", "localhost:80x", "[::1]:evil", "localhost: 80"],
)
def test_a_host_with_a_non_numeric_port_is_refused(host: str) -> None:
    policy = EdgePolicy.for_bind("127.0.0.1")
    assert policy.check(host, None) == "Host not allowed"


@pytest.mark.parametrize("host", ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:443"])
def test_loopback_hosts_still_pass(host: str) -> None:
    assert EdgePolicy.for_bind("127.0.0.1").check(host, None) is None


async def _raw(address: tuple[str, int], data: bytes) -> bytes:
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(data)
        answer = b""
        while chunk := await stream.receive_some(65536):
            answer += chunk
            if b"\r\n\r\n" in answer:
                break
        return answer


async def test_host_localhost_colon_evil_gets_403_on_the_wire() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(
                address, "POST", headers={"host": "localhost:evil.com"}, body=init_body()
            )
    assert response.status == 403, response


@pytest.mark.parametrize(
    "target", ["http://evil.example/mcp", "http://localhost:evil.com/mcp", "http://evil.example"]
)
async def test_an_absolute_form_target_is_checked_against_the_allowed_hosts(target: str) -> None:
    """RFC 9112 section 3.2.2: with an absolute-form target the server uses its authority and
    ignores Host, so that authority is what the allow-list must see."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            answer = await _raw(
                address,
                b"POST %b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
                % target.encode(),
            )
    assert answer.startswith(b"HTTP/1.1 403 "), answer


async def test_an_absolute_form_target_on_an_allowed_host_is_served() -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as (host, port):
            body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
            answer = await _raw(
                (host, port),
                b"POST http://localhost:%d/mcp HTTP/1.1\r\nHost: evil.example\r\n"
                b"Content-Type: application/json\r\nAccept: application/json, text/event-stream"
                b"\r\nContent-Length: %d\r\n\r\n%b" % (port, len(body), body),
            )
    assert not answer.startswith(b"HTTP/1.1 403 "), answer


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;q=0, text/event-stream;q=0",
        "application/json; q=0.000, text/event-stream;Q=0",
        "*/*;q=0",
    ],
)
async def test_accept_with_q_zero_is_not_acceptance(accept: str) -> None:
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            response = await request(address, "POST", headers={"accept": accept}, body=init_body())
    assert response.status == 406, response


@pytest.mark.parametrize("target", [b"http://x[", b"http://[::1/mcp", b"//[/mcp?a=1"])
async def test_a_target_urlsplit_cannot_read_gets_400_and_the_server_serves_on(
    target: bytes,
) -> None:
    """Found by the http11 fuzz target: an unclosed "[" in a target's authority made the
    parser raise ValueError instead of its ProtocolError."""
    app, _ = make_app()
    with trio.fail_after(10):
        async with serving(app) as address:
            answer = await _raw(address, b"GET %b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % target)
            response = await request(address, "POST", body=init_body())
    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert b"invalid request target" in answer
    assert response.status == 200, response
