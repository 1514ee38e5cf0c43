"""The RESP client facing something that is not Redis: every malformed reply is
StoreUnavailable (the store's one failure), never a ValueError or RecursionError, and the
client serves again once a real answer comes."""

from __future__ import annotations

import contextlib
import functools

import pytest
import trio

from runtime.stores import StoreUnavailable
from runtime.stores._resp import RedisClient

MALFORMED = [
    b":abc\r\n",  # an integer that is not one
    b":" + b"9" * 5000 + b"\r\n",  # past int()'s 4,300 digits
    b"$x\r\n",  # a bulk length that is not a number
    b"$" + b"9" * 30 + b"\r\n",  # a bulk length past any 64-bit value
    b"$1073741824\r\n",  # a bulk string of 1 GiB, past Redis's own ceiling
    b"*1\r\n" * 100_000 + b":1\r\n",  # arrays nested until recursion fails
    b"*-x\r\n",
    b"?what\r\n",  # an unknown type byte
]


@pytest.mark.parametrize("reply", MALFORMED, ids=range(len(MALFORMED)))
async def test_a_malformed_reply_is_store_unavailable(reply: bytes) -> None:
    answers = [reply, b"+PONG\r\n"]

    async def fake_redis(stream: trio.SocketStream) -> None:
        # (The client hangs up on a reply it refused, perhaps before all of it is sent.)
        with contextlib.suppress(trio.BrokenResourceError):
            async with stream:
                while answers and await stream.receive_some(65536):
                    await stream.send_all(answers.pop(0))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                functools.partial(trio.serve_tcp, fake_redis, 0, host="127.0.0.1")
            )
            port = listeners[0].socket.getsockname()[1]
            client = RedisClient("127.0.0.1", port, timeout=5, backoff_min=0, backoff_max=0)
            with pytest.raises(StoreUnavailable, match="protocol error"):
                await client.call("PING")
            # The connection that carried it is closed; a new one gets the next answer.
            assert await client.call("PING") == b"PONG"
            await client.aclose()
            nursery.cancel_scope.cancel()
