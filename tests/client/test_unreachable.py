"""A request timeout shorter than the reconnection budget (``--timeout 1 --retry-for 30``)
against a server that cannot be reached: the client reports the connection failure
(:class:`TransportLost`, "cannot connect to ..."), not a silent server (``RequestTimeout``).

Streamable HTTP retries a request's connection inside the request (each is a POST of its
own), so the request's timeout used to fire first and hide why nothing came back."""

from __future__ import annotations

import functools
import time

import pytest
import trio

from runtime.client import Backoff, RequestTimeout, TransportLost, open_client

from .test_sdk_peer import free_port, run_cli


async def test_the_cli_reports_the_connect_failure() -> None:
    port = free_port()  # bound and released: nothing listens on it
    started = time.monotonic()
    code, _out, err = await run_cli(
        "call", f"http://127.0.0.1:{port}/mcp", "add", "a=1", "--timeout", "1", "--retry-for", "30"
    )
    elapsed = time.monotonic() - started
    assert code == 3, err
    assert f"cannot connect to 127.0.0.1:{port}" in err, err
    assert "RequestTimeout" not in err and "no connection within the 1 s timeout" in err
    assert elapsed < 20  # the 1 s timeout still bounds it, not the 30 s retry budget


@pytest.mark.parametrize("era", ["auto", "modern", "handshake"])
async def test_open_client_raises_transport_lost(era: str) -> None:
    port = free_port()
    with (
        trio.fail_after(10),
        pytest.raises(TransportLost, match=f"cannot connect to 127.0.0.1:{port}"),
    ):
        async with open_client(
            f"http://127.0.0.1:{port}/mcp",
            era=era,  # type: ignore[arg-type]
            timeout=0.5,
            backoff=Backoff(max_elapsed=30),
        ):
            pass  # pragma: no cover


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
        listener = listeners[0]
        port = listener.socket.getsockname()[1]
        with trio.fail_after(10), pytest.raises(RequestTimeout, match="server/discover"):
            async with open_client(
                f"http://127.0.0.1:{port}/mcp", timeout=0.5, backoff=Backoff(max_elapsed=30)
            ):
                pass  # pragma: no cover
        assert accepted  # it did connect
        nursery.cancel_scope.cancel()
