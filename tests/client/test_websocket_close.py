"""Closing a WebSocket client: the close handshake (RFC 6455 7.1.2) ends as soon as the
server answers the client's Close frame, as a plain trio-websocket client does (ours used
to take 2.0 s each time: trio-websocket's reader, the one task that can read the server's
Close, was cancelled with the client, so the wait ran to its timeout). A server that never
answers the Close costs the bounded wait, never more."""

from __future__ import annotations

import time

import trio

from runtime.client import open_client

from .hostile import DISCOVERED, reply
from .targets import serve_target
from .test_websocket_stall import frame, raw_peer


async def test_closing_is_prompt_against_our_server() -> None:
    async with serve_target("ws") as (target, _framing):
        for era in ("modern", "handshake"):
            with trio.fail_after(10):
                async with open_client(target, era=era) as client:  # type: ignore[arg-type]
                    assert (await client.call_tool("echo", {"text": "x"})).text == "x"
                    started = time.monotonic()
                took = time.monotonic() - started
            assert took < 0.5, took


async def test_closing_is_prompt_when_the_caller_is_cancelled() -> None:
    """A client in a scope that is cancelled (how a trio program usually stops one)."""
    async with serve_target("ws") as (target, _framing):
        with trio.fail_after(10):
            with trio.CancelScope() as scope:
                async with open_client(target, era="modern") as client:
                    await client.ping()
                    started = time.monotonic()
                    scope.cancel()
                    await trio.sleep_forever()
            assert time.monotonic() - started < 0.5


async def test_a_server_that_never_answers_the_close_costs_the_bounded_wait() -> None:
    frames: list[int] = []  # opcodes the peer got after the handshake

    async def deaf(stream: trio.SocketStream) -> None:
        await stream.send_all(frame(reply({"id": 1}, DISCOVERED)))
        while data := await stream.receive_some(1 << 16):  # reads on, never answers a Close
            frames.append(data[0] & 0x0F)

    async with raw_peer(deaf) as url:
        with trio.fail_after(10):
            async with open_client(url, era="modern"):
                started = time.monotonic()
            took = time.monotonic() - started
    assert 0x8 in frames  # the client did send its Close frame
    assert 1.5 < took < 3.0, took  # the 2 s bound on the close handshake
