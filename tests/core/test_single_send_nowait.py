"""``dispatch_single``'s peer: ``send_nowait`` hands an encoded notification to the caller's
``send_now`` in the handler's step (a 2026-07-28 listen served without a Connection, issue
22 item 4), and declines (False) when the caller gave none, so the handler ``notify``-s."""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from runtime.core import Dispatcher, RequestContext, dispatch_single
from runtime.features import Broadcast
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
        results.append(getattr(ctx.peer, "send_nowait")(NOTE))  # noqa: B009  (related: None)
        return {}

    async def send(data: bytes) -> None:
        sent.append(data)

    def send_now(data: bytes, related: Any = None) -> bool:
        taken.append((data, related))
        return True

    with trio.fail_after(5):
        reply = await dispatch_single(
            Dispatcher({"hold": hold}), None, _request(7), send, "c1", None, None, None, send_now
        )
    assert reply is not None and msgspec.json.decode(reply)["result"] == {}
    assert taken == [(NOTE, 7), (NOTE, None)] and sent == [] and results == [True, True, True]


async def test_send_nowait_declines_without_send_now() -> None:
    results: list[bool] = []

    async def hold(ctx: RequestContext) -> dict[str, Any]:
        results.append(getattr(ctx.peer, "send_nowait")(NOTE, ctx.id))  # noqa: B009
        results.append(getattr(ctx.peer, "send_nowait")(NOTE))  # noqa: B009
        return {}

    async def send(data: bytes) -> None:
        raise AssertionError("not sent")

    with trio.fail_after(5):
        reply = await dispatch_single(Dispatcher({"hold": hold}), None, _request(8), send, "c2")
    assert reply is not None and results == [False, False]


async def test_the_callers_idle_is_the_peers_and_waits_in_the_callers_task() -> None:
    """``idle`` (a 2026-07-28 listen served in its HTTP connection's task, issue 22 item 4)
    reaches the handler as ``peer.idle``; a subscriber's wait runs in it, in this task."""
    hub = Broadcast()
    tasks: list[object] = []

    async def idle(wake: trio.CancelScope) -> None:
        tasks.append(trio.lowlevel.current_task())
        hub.list_changed("tools")  # (as a publisher would, while the request idles)
        await trio.sleep_forever()

    async def hold(ctx: RequestContext) -> dict[str, Any]:
        with hub.subscribe(["tools"]) as sub:
            changes = await sub.receive(getattr(ctx.peer, "idle"))  # noqa: B009
        return {"changes": len(changes)}

    async def send(data: bytes) -> None:
        raise AssertionError("not sent")

    with trio.fail_after(5):
        reply = await dispatch_single(
            Dispatcher({"hold": hold}), None, _request(9), send, "c3", None, None, None, None, idle
        )
    assert reply is not None and msgspec.json.decode(reply)["result"] == {"changes": 1}
    assert tasks == [trio.lowlevel.current_task()]
