"""A remote that speaks JSON-RPC but not MCP's schema: what the proxy passes on to its own
client is still valid (the bytes on our client's connection, read raw over TCP).

The remote (``silent_upstream.py ... odd``, over stdio) declares capabilities whose levels
are not objects (``"tasks": {"requests": [1]}``, ``"resources": "subscribe"``) and answers a
tool call with the error code ``true``. Found by the ``bridge_translation`` fuzz target
(tests/fuzzing/targets.py): building our ``initialize`` and ``server/discover`` results from
such capabilities raised, and the code was passed on as it was.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import trio

from runtime.bridge import proxy_server

SILENT = Path(__file__).parent / "silent_upstream.py"


async def exchange(stream: trio.SocketStream, buffer: bytearray, message: dict[str, Any]) -> Any:
    """Send one request (ndjson) and read lines until its response."""
    await stream.send_all(json.dumps(message).encode() + b"\n")
    while True:
        cut = buffer.find(b"\n")
        if cut >= 0:
            line = bytes(buffer[:cut])
            del buffer[: cut + 1]
            reply = json.loads(line)
            if reply.get("id") == message["id"]:
                return reply
            continue
        data = await stream.receive_some(65536)
        assert data, "the proxy closed the connection"
        buffer += data


async def test_a_remote_outside_the_schema_gets_valid_answers_through(tmp_path: Path) -> None:
    proxy = proxy_server([sys.executable, str(SILENT), str(tmp_path), "odd"], era="handshake")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(proxy.serve_tcp, 0))[1]
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            buffer = bytearray()
            # 2026-07-28: our server/discover declares the remote's features it can read.
            modern_meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            discover = await exchange(
                stream,
                buffer,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "server/discover",
                    "params": {"_meta": modern_meta},
                },
            )
            assert "result" in discover, discover
            caps = discover["result"]["capabilities"]
            assert caps["tools"] == {}
            assert "resources" not in caps  # "subscribe" is no capability object
            # The handshake era: initialize, then a call the remote fails with code true.
            init = await exchange(
                stream,
                buffer,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "1"},
                    },
                },
            )
            assert "result" in init, init
            assert init["result"]["capabilities"]["tools"] == {}
            # An object is passed on as the remote declares it; a string is no capability.
            assert init["result"]["capabilities"]["tasks"] == {"requests": [1]}
            assert "resources" not in init["result"]["capabilities"]
            await stream.send_all(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            failed = await exchange(
                stream,
                buffer,
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "fail", "arguments": {}},
                },
            )
            assert failed["error"]["code"] == -32603
            assert type(failed["error"]["code"]) is int
            assert failed["error"]["message"] == "tools/call failed"
            # The connection serves on.
            echoed = await exchange(
                stream,
                buffer,
                {
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "on"}},
                },
            )
            assert echoed["result"]["content"] == [{"type": "text", "text": "on"}]
            await stream.aclose()
            nursery.cancel_scope.cancel()
