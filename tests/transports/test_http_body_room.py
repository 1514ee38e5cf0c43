"""The body of a big request is the connection's room itself, no copy (issue 22, target 2):
each request on a connection sees exactly its own bytes, and a body an application keeps
past its request is never overwritten by the next request's body (the room is then given up
and the next body read into a new one)."""

from __future__ import annotations

import trio

from runtime.transports.http._exchange import Exchange, HttpRequest

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
