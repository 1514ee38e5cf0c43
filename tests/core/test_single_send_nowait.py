"""``dispatch_single``'s peer: ``send_nowait`` hands an encoded notification to the caller's
``send_now`` in the handler's step (a 2026-07-28 listen served without a Connection, issue
22 item 4), and declines (False) when the caller gave none, so the handler ``notify``-s."""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from runtime.core import Dispatcher, RequestContext, dispatch_single
from runtime.protocol import Envelope, decode_frame

NOTE = b'{"jsonrpc":"2.0","method":"notifications/x","params":{}}'


def _request(request_id: int) -> Envelope:
    message = decode_frame(b'{"jsonrpc":"2.0","id":%d,"method":"hold","params":{}}' % request_id)
    assert isinstance(message, Envelope)
    return message


async def test_send_nowait_goes_to_send_now_in_the_handlers_step() -> None:
    taken: list[tuple[bytes, Any]] = []
    sent: list[bytes] = []
    results: list[bool] = []

    async def hold(ctx: RequestContext) -> dict[str, Any]:
        results.append(getattr(ctx.peer, "send_nowait")(NOTE, ctx.id))  # noqa: B009
        results.append(len(taken) == 1)  # in this step: no checkpoint between
        return {}

    async def send(data: bytes) -> None:
        sent.append(data)

    def send_now(data: bytes, related: Any) -> bool:
        taken.append((data, related))
        return True

    with trio.fail_after(5):
        reply = await dispatch_single(
            Dispatcher({"hold": hold}), None, _request(7), send, "c1", None, None, None, send_now
        )
    assert reply is not None and msgspec.json.decode(reply)["result"] == {}
    assert taken == [(NOTE, 7)] and sent == [] and results == [True, True]


async def test_send_nowait_declines_without_send_now() -> None:
    results: list[bool] = []

    async def hold(ctx: RequestContext) -> dict[str, Any]:
        results.append(getattr(ctx.peer, "send_nowait")(NOTE, ctx.id))  # noqa: B009
        return {}

    async def send(data: bytes) -> None:
        raise AssertionError("not sent")

    with trio.fail_after(5):
        reply = await dispatch_single(Dispatcher({"hold": hold}), None, _request(8), send, "c2")
    assert reply is not None and results == [False]
