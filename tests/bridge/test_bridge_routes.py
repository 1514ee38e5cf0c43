"""The routes of the eras (``runtime/bridge/_eras.py``): a handshake-era session's own
requests (``logging/setLevel``, ``resources/subscribe``, ``resources/unsubscribe``) sent by a
2026-07-28 client, where they do not exist (2026-07-28 changelog: removed), are answered by
the proxy exactly as by the remote's own kind of server, our server here: -32601 naming the
method; the connection serves on. Read raw over TCP, with a remote of either era."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime.bridge import proxy_server

from .test_bridge_hostile_remote import exchange
from .test_bridge_state import upstream

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
REMOVED = {
    "logging/setLevel": {"level": "debug"},
    "resources/subscribe": {"uri": "mem://watched"},
    "resources/unsubscribe": {"uri": "mem://watched"},
}


async def answers(port: int) -> list[Any]:
    """What the server on ``port`` answers a 2026-07-28 client's removed methods, then a
    ``tools/list`` on the same connection."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    buffer = bytearray()
    replies = []
    for number, (method, params) in enumerate(REMOVED.items(), 1):
        request = {"jsonrpc": "2.0", "id": number, "method": method}
        request["params"] = {**params, "_meta": MODERN_META}
        replies.append(await exchange(stream, buffer, request))
    tools = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": MODERN_META}}
    listed = await exchange(stream, buffer, tools)
    replies.append(sorted(tool["name"] for tool in listed["result"]["tools"]))
    await stream.aclose()
    return replies


@pytest.mark.parametrize("upstream_era", ["handshake", "modern"])
async def test_a_modern_clients_session_methods_are_refused_as_by_our_server(
    upstream_era: Any,
) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = (await nursery.start(upstream().serve_tcp))[1]
            proxy = proxy_server(f"tcp://127.0.0.1:{port}", era=upstream_era)
            proxy_port = (await nursery.start(proxy.serve_tcp))[1]
            through = await answers(proxy_port)
            direct = await answers(port)
            nursery.cancel_scope.cancel()
    assert through == direct
    for number, method in enumerate(REMOVED, 1):
        assert through[number - 1] == {
            "jsonrpc": "2.0",
            "id": number,
            "error": {
                "code": -32601,
                "message": f"Method not found: {method}",
                "data": {"method": method},
            },
        }
    assert through[-1] == ["add", "build", "forever", "grow"]
