"""The server's own requests to the client (``Peer.request``), each outcome as it crosses the
wire: an answer, an error answer, a malformed error object, a response to nothing of ours, no
answer in time, the asking request cancelled, and input ending while one waits."""

from __future__ import annotations

from typing import Any

import trio

from runtime.core import Dispatcher, RequestContext
from runtime.protocol import JSONRPCError

from .test_connection_eager import call, cancel, serve


def _asking(seen: list[Any], timeout: float = 5.0) -> Dispatcher:
    async def ask(ctx: RequestContext) -> Any:
        try:
            return {"answer": await ctx.peer.request("roots/list", timeout=timeout)}
        except JSONRPCError as exc:
            seen.append(exc)
            return {"code": exc.code, "message": exc.message, "data": exc.data}
        except trio.Cancelled:
            seen.append("cancelled")
            raise

    return Dispatcher({"ask": ask})


async def test_an_answer_and_an_error_answer_reach_the_asking_handler() -> None:
    seen: list[Any] = []
    with trio.fail_after(5):
        async with serve(_asking(seen)) as h:
            await h.peer.send(call(1, "ask"))
            asked = await h.peer.receive()
            assert asked["method"] == "roots/list" and asked["jsonrpc"] == "2.0"
            await h.peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}})
            assert (await h.peer.receive())["result"] == {"answer": {"roots": []}}
            await h.peer.send(call(2, "ask"))
            asked = await h.peer.receive()
            error = {"code": -32601, "message": "no roots here", "data": {"why": 1}}
            await h.peer.send({"jsonrpc": "2.0", "id": asked["id"], "error": error})
            assert (await h.peer.receive())["result"] == error


async def test_a_malformed_error_object_is_an_invalid_request() -> None:
    seen: list[Any] = []
    with trio.fail_after(5):
        async with serve(_asking(seen)) as h:
            await h.peer.send(call(1, "ask"))
            asked = await h.peer.receive()
            await h.peer.send({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": "x"}})
            reply = await h.peer.receive()
            assert reply["result"] == {
                "code": -32600,
                "message": "Malformed error object from client",
                "data": None,
            }


async def test_a_response_to_nothing_of_ours_is_dropped_and_the_connection_lives_on() -> None:
    seen: list[Any] = []
    with trio.fail_after(5):
        async with serve(_asking(seen)) as h:
            await h.peer.send({"jsonrpc": "2.0", "id": 999, "result": {}})
            await h.peer.send({"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": ""}})
            await h.peer.send(call(1, "ask"))
            asked = await h.peer.receive()  # the next thing on the wire: nothing answered them
            assert asked["method"] == "roots/list"
            await h.peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"ok": True}})
            # Answered twice: the second answer correlates with nothing any more.
            await h.peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"ok": False}})
            assert (await h.peer.receive())["result"] == {"answer": {"ok": True}}
            await h.peer.send(call(2, "ask"))
            assert (await h.peer.receive())["method"] == "roots/list"


async def test_no_answer_in_time_tells_the_client_to_stop_and_raises_a_timeout() -> None:
    seen: list[Any] = []
    with trio.fail_after(5):
        async with serve(_asking(seen, timeout=0.1)) as h:
            await h.peer.send(call(1, "ask"))
            asked = await h.peer.receive()
            stop = await h.peer.receive()
            assert stop == {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": asked["id"], "reason": "timeout"},
            }
            reply = await h.peer.receive()
            assert reply["id"] == 1 and reply["result"]["code"] == -32001
            assert reply["result"]["message"] == "Request 'roots/list' timed out"


async def test_the_asking_request_cancelled_tells_the_client_to_stop_too() -> None:
    seen: list[Any] = []
    with trio.fail_after(5):
        async with serve(_asking(seen)) as h:
            await h.peer.send(call(1, "ask"))
            asked = await h.peer.receive()
            await h.peer.send(cancel(1))
            stop = await h.peer.receive()
            assert stop == {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": asked["id"], "reason": "cancelled"},
            }
            assert seen == ["cancelled"]
            # No reply to the cancelled request: the next thing on the wire is the next reply.
            await h.peer.send(call(2, "ask"))
            assert (await h.peer.receive())["method"] == "roots/list"


async def test_a_request_waiting_when_input_ends_is_cut_short_after_the_grace() -> None:
    """EOF: the asking request gets the EOF grace, then is cancelled (the client is told to
    stop working on ours) and answered -32000, as every accepted request is."""
    seen: list[Any] = []
    with trio.fail_after(5):
        async with serve(_asking(seen)) as h:
            await h.peer.send(call(1, "ask"))
            asked = await h.peer.receive()
            await h.close_input()
            stop = await h.peer.receive()
            assert stop["params"] == {"requestId": asked["id"], "reason": "cancelled"}
            reply = await h.peer.receive()
            assert reply["id"] == 1 and reply["error"]["code"] == -32000
            await h.done.wait()
    assert seen == ["cancelled"]
