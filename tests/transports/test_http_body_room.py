"""The body of a big request is the connection's room itself, no copy (issue 22, target 2):
each request on a connection sees exactly its own bytes, and a body an application keeps
past its request is never overwritten by the next request's body (the room is then given up
and the next body read into a new one)."""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from runtime import Server
from runtime.transports.http._exchange import Exchange, HttpRequest

from .app import modern, modern_headers, serving
from .http_client import connect
from .test_http_big_bodies import MIB, check, echo, payload, read_responses, send_in_pieces
from .test_http_server import driver, post


async def test_bodies_of_different_sizes_on_one_connection_each_arrive_exact() -> None:
    # Big, smaller (a slice of the same room), big again: no bytes of one in another.
    bodies = [payload(2 * MIB, 21), payload(300_000, 22), payload(2 * MIB - 5, 23)]
    with trio.fail_after(60):
        async with driver(echo, max_body_size=4 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            for seed, body in enumerate(bodies):
                await send_in_pieces(stream, post("/x", body), 30 + seed)
                [(head, got)] = await read_responses(stream, 1)
                check(head, got, body)
            await stream.aclose()


async def test_a_body_kept_past_its_request_is_not_overwritten_by_the_next() -> None:
    kept: list[memoryview | bytes] = []

    async def keeper(request: HttpRequest, exchange: Exchange) -> None:
        kept.append(request.body)  # held past the request: the room must be given up
        await echo(request, exchange)

    first, second = payload(MIB, 41), payload(MIB, 42)
    with trio.fail_after(60):
        async with driver(keeper, max_body_size=4 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            for seed, body in enumerate((first, second)):
                await send_in_pieces(stream, post("/x", body), 50 + seed)
                [(head, got)] = await read_responses(stream, 1)
                check(head, got, body)
            await stream.aclose()
    assert isinstance(kept[0], memoryview)  # the room itself was handed over
    assert bytes(kept[0]) == first and bytes(kept[1]) == second


async def test_a_handed_over_body_is_read_only() -> None:
    refused: list[bool] = []

    async def writer(request: HttpRequest, exchange: Exchange) -> None:
        body = request.body
        assert isinstance(body, memoryview)
        refused.append(body.readonly)
        await echo(request, exchange)

    body = payload(MIB, 61)
    with trio.fail_after(60):
        async with driver(writer, max_body_size=2 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            await send_in_pieces(stream, post("/x", body), 62)
            [(head, got)] = await read_responses(stream, 1)
            check(head, got, body)
            await stream.aclose()
    assert refused == [True]


def _mcp_app() -> Server:
    app = Server("room")

    @app.tool
    async def echo_text(text: str, tree: dict[str, Any] | None = None) -> dict[str, Any]:
        """The arguments back."""
        return {"text": text, "tree": tree}

    return app


def _big_text(seed: int) -> str:
    """A 1 MiB argument with escapes, non-ASCII and astral characters throughout."""
    piece = f'{seed} "quoted" back\\slash\ttab\nline é ü 漢字 \U0001f600 \x01 '
    return (piece * (MIB // len(piece.encode()) + 1))[: MIB // 2]


async def test_big_tool_calls_on_one_connection_answer_byte_exact() -> None:
    # Several 1 MiB+ calls on one keep-alive connection (the room read into again each
    # time), then invalid arguments: the same error as the same call made small.
    headers = modern_headers("tools/call", "echo_text")
    calls = [
        {"text": _big_text(1)},
        {"text": _big_text(2), "tree": {"a": [1, {"b": _big_text(3)}], "c": None}},
        {"text": "small"},
        {"text": _big_text(4)},
    ]
    with trio.fail_after(60):
        async with serving(_mcp_app()) as address:
            conn = await connect(address)
            try:
                for rid, arguments in enumerate(calls, 1):
                    body = modern(rid, "tools/call", {"name": "echo_text", "arguments": arguments})
                    await conn.send("POST", "/mcp", headers=headers, body=body)
                    got = await conn.response()
                    conn.conn.start_next_cycle()  # (h11: the same connection, kept alive)
                    assert got.status == 200, got.body[:300]
                    result = msgspec.json.decode(got.body)["result"]["structuredContent"]
                    assert result == {"text": arguments["text"], "tree": arguments.get("tree")}
                errors = []
                for rid, text in ((10, 7), (11, 7)):
                    pad = {"pad": _big_text(5)} if rid == 10 else {}
                    arguments = {"text": text, "tree": pad or None}
                    body = modern(rid, "tools/call", {"name": "echo_text", "arguments": arguments})
                    await conn.send("POST", "/mcp", headers=headers, body=body)
                    got = await conn.response()
                    conn.conn.start_next_cycle()
                    answer = msgspec.json.decode(got.body)
                    del answer["id"]
                    errors.append(answer)
            finally:
                await conn.aclose()
    # Invalid arguments are a tool error (isError, 2025-11-25 server/tools), word for word
    # the same whether the call was big (the one typed pass) or small (the general reading).
    assert errors[0] == errors[1], errors
    assert errors[0]["result"]["isError"] is True
    [text] = errors[0]["result"]["content"]
    assert text["text"] == (
        "Invalid arguments for tool 'echo_text': Expected `str`, got `int` - at `$.text`"
    )


async def test_a_room_nobody_holds_any_more_is_used_again_by_the_next_body(
    monkeypatch: Any,
) -> None:
    # No page-faulting a fresh room in per big body (issue 22): once the app let go of the
    # body, the next big body on the connection is read into the same room. (At most one
    # more may be made: the deadline sweep frees an idle connection's room, and may find
    # this one idle between two requests.)
    from runtime.transports.http import _server

    made: list[int] = []

    def counting_bytearray(*args: Any) -> bytearray:
        made.append(args[0] if args and isinstance(args[0], int) else 0)
        return bytearray(*args)

    monkeypatch.setattr(_server, "bytearray", counting_bytearray, raising=False)
    bodies = [payload(MIB - seed, 60 + seed) for seed in range(4)]  # each fits the first room
    with trio.fail_after(60):
        async with driver(echo, max_body_size=4 * MIB) as address:
            stream = await trio.open_tcp_stream(*address)
            for seed, body in enumerate(bodies):
                await send_in_pieces(stream, post("/x", body), 70 + seed)
                [(head, got)] = await read_responses(stream, 1)
                check(head, got, body)
            await stream.aclose()
    rooms = [size for size in made if size >= MIB // 2]
    assert 1 <= len(rooms) <= 2, rooms
