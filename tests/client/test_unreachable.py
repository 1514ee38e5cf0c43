"""A server that cannot be reached, or a URL with no MCP endpoint behind it.

A client that never got through fails at once with one plain sentence: nothing listening
(connection refused), an HTTP 404 (with the hint that MCP endpoints usually end in
``/mcp``), a refused WebSocket handshake. No retry can change those, and the error names no
exception class or repr. A client that was connected takes the same failures for an outage
(a server restarting) and retries per its backoff policy; a request whose timeout is shorter
than that policy then reports the connection failure, not a silent server."""

from __future__ import annotations

import functools
import re
import time

import pytest
import trio

from runtime.client import Backoff, RequestTimeout, TransportLost, open_client

from .hostile import DISCOVERED, NO_TOOLS, Exchange, HttpPeer, reply
from .targets import load_app
from .test_sdk_peer import free_port, run_cli

PATIENT = Backoff(max_elapsed=30)  # what used to make a refused connection take seconds


TARGETS = ["http://127.0.0.1:{}/mcp", "ws://127.0.0.1:{}/mcp", "tcp://127.0.0.1:{}"]
#: Each target in each era it has (legacy HTTP+SSE has no 2026-07-28 era).
CASES = [(target, era) for target in TARGETS for era in ("auto", "modern", "handshake")] + [
    ("http://127.0.0.1:{}/sse", "auto"),
    ("http://127.0.0.1:{}/sse", "handshake"),
]


@pytest.mark.parametrize(("target", "era"), CASES)
async def test_a_refused_connection_fails_at_once_with_a_plain_sentence(
    target: str, era: str
) -> None:
    port = free_port()  # bound and released: nothing listens on it
    started = time.monotonic()
    with trio.fail_after(10), pytest.raises(TransportLost) as caught:
        async with open_client(
            target.format(port),
            era=era,  # type: ignore[arg-type]
            backoff=PATIENT,
        ):
            pass  # pragma: no cover
    assert time.monotonic() - started < 1.0  # was 3.6-4.8 s with the CLI's 5 s budget
    message = str(caught.value)
    assert re.search(rf"cannot connect to \S*127\.0\.0\.1:{port}\S*: connection refused", message)
    assert "Error(" not in message and "OSError" not in message and "attempts" not in message
    assert caught.value.refused


async def test_the_cli_says_connection_refused_at_once() -> None:
    port = free_port()
    started = time.monotonic()
    code, _out, err = await run_cli("list", f"http://127.0.0.1:{port}/mcp")
    elapsed = time.monotonic() - started
    assert code == 3, err
    assert f"cannot connect to 127.0.0.1:{port}: connection refused" in err, err
    assert "Error(" not in err and "attempt" not in err, err
    assert elapsed < 3.5  # the interpreter's start-up included; no 5 s of retries


async def test_a_404_fails_at_once_with_the_hint() -> None:
    """A URL without ``/mcp`` on our own server: one POST, a plain sentence, the hint."""
    app = load_app()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(app.serve_http)
        for era in ("auto", "modern", "handshake"):
            started = time.monotonic()
            with trio.fail_after(10), pytest.raises(TransportLost) as caught:
                async with open_client(
                    f"http://127.0.0.1:{address[1]}/",
                    era=era,  # type: ignore[arg-type]
                    backoff=PATIENT,
                ):
                    pass  # pragma: no cover
            assert time.monotonic() - started < 1.0
            assert str(caught.value) == (
                f"http://127.0.0.1:{address[1]}/: HTTP 404 Not Found: no MCP endpoint at this "
                "URL (MCP endpoints usually end in /mcp)"
            )
        nursery.cancel_scope.cancel()


async def test_a_404_is_asked_once_and_not_retried() -> None:
    """Counted at a raw server that answers every request 404 with an HTML page."""
    peer = HttpPeer(_not_found)
    async with peer.serving() as url:
        with trio.fail_after(10), pytest.raises(TransportLost, match="no MCP endpoint"):
            async with open_client(url.replace("/mcp", "/api"), backoff=PATIENT):
                pass  # pragma: no cover
    assert len(peer.requests) == 1  # server/discover, once; no initialize fallback either


async def _not_found(exchange: Exchange) -> bool:
    body = b"<html>Not Found</html>"
    await exchange.stream.send_all(
        b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    return False


async def test_a_404_websocket_handshake_fails_at_once_with_the_hint() -> None:
    peer = HttpPeer(_not_found)  # answers the upgrade request with 404
    async with peer.serving() as url:
        ws = url.replace("http://", "ws://").replace("/mcp", "/")
        with trio.fail_after(10), pytest.raises(TransportLost) as caught:
            async with open_client(ws, backoff=PATIENT):
                pass  # pragma: no cover
    assert "HTTP 404; MCP endpoints usually end in /mcp" in str(caught.value)
    assert len(peer.requests) == 1


async def test_an_outage_after_connecting_is_still_retried() -> None:
    """Connected once, the server goes away: refusals are an outage now. A request whose
    timeout is shorter than the backoff budget reports the connection failure (the server
    never had it), not a silent server."""
    peer = HttpPeer(_modern)
    server = trio.CancelScope()

    async def serve(*, task_status: trio.TaskStatus[list[trio.SocketListener]]) -> None:
        with server:
            await trio.serve_tcp(peer.handle, 0, host="127.0.0.1", task_status=task_status)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(serve)
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(20):
            async with open_client(
                f"http://127.0.0.1:{port}/mcp", era="modern", backoff=PATIENT, timeout=1
            ) as client:
                assert (await client.list_tools()).tools == []
                server.cancel()  # the server is gone, its port closed
                await trio.sleep(0.1)
                started = time.monotonic()
                with pytest.raises(TransportLost) as caught:
                    await client.list_tools()
                assert 0.9 < time.monotonic() - started < 5  # retried for the whole 1 s
    message = str(caught.value)
    assert f"cannot connect to 127.0.0.1:{port}: connection refused" in message, message
    assert "no connection within the 1 s timeout" in message


async def _modern(exchange: Exchange) -> bool:
    message = exchange.message
    result = DISCOVERED if message.get("method") == "server/discover" else NO_TOOLS
    await exchange.json(reply(message, result))
    return False


async def test_a_server_that_accepts_but_never_answers_is_still_a_timeout() -> None:
    """Once the request was sent the server has it: silence stays a RequestTimeout."""
    accepted: list[trio.SocketStream] = []

    async def hold(stream: trio.SocketStream) -> None:
        accepted.append(stream)
        await trio.sleep_forever()  # reads nothing, answers nothing

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, hold, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(10), pytest.raises(RequestTimeout, match="server/discover"):
            async with open_client(f"http://127.0.0.1:{port}/mcp", timeout=0.5, backoff=PATIENT):
                pass  # pragma: no cover
        assert accepted  # it did connect
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_credentials_in_the_url_are_in_no_error_or_log_line(
    scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A URL may carry a password (``user:pw@``) or a key (``?api_key=``): what the client
    says about it, in an error or a log line, names the server without them."""
    port = free_port()
    url = f"{scheme}://ann:hunter2@127.0.0.1:{port}/mcp?api_key=k3y#frag"
    with trio.fail_after(10), pytest.raises(TransportLost) as caught:
        async with open_client(url, backoff=PATIENT):
            pass  # pragma: no cover
    said = str(caught.value) + "\n" + caplog.text
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "hunter2" not in said and "k3y" not in said and "ann:" not in said, said
