"""Issue 2 acceptance: exact JSON-RPC 2.0 answers to bad input, on every stream transport,
and the connection lives on (the final call still succeeds)."""

from __future__ import annotations

import pytest
import trio

from .peers import TRANSPORTS, open_peer
from .servers.wire import app


def _echo(request_id: object, text: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}},
    }


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_bad_input_gets_exact_errors_and_the_connection_lives_on(kind: str) -> None:
    with trio.fail_after(30):
        async with open_peer(kind, app) as peer:
            init = await peer.initialize()
            assert init["result"]["protocolVersion"] == "2025-11-25"

            # Malformed JSON: -32700 with id null.
            await peer.send(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"')
            reply = await peer.receive()
            assert reply["id"] is None
            assert reply["error"]["code"] == -32700

            # A non-object: -32600 with id null.
            await peer.send(b'"hello"')
            reply = await peer.receive()
            assert reply["id"] is None and reply["error"]["code"] == -32600

            # An unknown method: -32601, id echoed.
            await peer.send({"jsonrpc": "2.0", "id": "u-1", "method": "no/such/method"})
            reply = await peer.receive()
            assert reply == {
                "jsonrpc": "2.0",
                "id": "u-1",
                "error": {
                    "code": -32601,
                    "message": "Method not found: no/such/method",
                    "data": {"method": "no/such/method"},
                },
            }

            # The batch: [valid call, unknown method, notification, 42, failing handler].
            await peer.send(
                [
                    _echo(10, "in a batch"),
                    {"jsonrpc": "2.0", "id": 11, "method": "nope"},
                    {"jsonrpc": "2.0", "method": "notifications/whatever"},
                    42,
                    {
                        "jsonrpc": "2.0",
                        "id": 12,
                        "method": "resources/read",
                        "params": {"uri": "fail://always"},
                    },
                ]
            )
            replies = await peer.receive()
            assert isinstance(replies, list)
            assert (
                len(replies) == 4
            )  # one per request item and invalid item; none for the notification
            by_id = {r["id"]: r for r in replies if r["id"] is not None}
            assert by_id[10]["result"]["content"] == [{"type": "text", "text": "in a batch"}]
            assert by_id[10]["result"]["isError"] is False
            assert by_id[11]["error"]["code"] == -32601
            assert by_id[12]["error"] == {"code": -32603, "message": "Internal error"}
            invalid = [r for r in replies if r["id"] is None]
            assert len(invalid) == 1 and invalid[0]["error"]["code"] == -32600
            assert b"secret" not in repr(replies).encode()

            # The connection lives on.
            await peer.send(_echo(99, "still here"))
            reply = await peer.receive()
            assert reply["id"] == 99
            assert reply["result"]["content"][0]["text"] == "still here"


@pytest.mark.parametrize("kind", ["memory-ndjson", "tcp-content-length"])
async def test_empty_and_oversized_batches(kind: str) -> None:
    with trio.fail_after(20):
        async with open_peer(kind, app) as peer:
            await peer.send(b"[]")
            reply = await peer.receive()
            assert reply["id"] is None and reply["error"]["code"] == -32600
            assert "empty batch" in reply["error"]["message"]

            await peer.send([{"jsonrpc": "2.0", "method": "notifications/x"}] * 257)
            reply = await peer.receive()
            assert reply["error"]["code"] == -32600
            assert "257 items exceeds the limit of 256" in reply["error"]["message"]

            # An all-notification batch gets no reply at all: the next reply is the ping's.
            await peer.send([{"jsonrpc": "2.0", "method": "notifications/x"}] * 3)
            await peer.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
            assert await peer.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}
