"""Requests before ``initialize`` over stdio (2025-11-25 basic/lifecycle: the client
"SHOULD NOT send requests other than pings before the server has responded to the
initialize request"). As the official SDK does, the server refuses them (the connection
lives on), answers ping, and serves everything once initialized; a 2026-07-28 request
carries its own ``_meta`` and needs no handshake."""

from __future__ import annotations

import subprocess
from typing import Any

import msgspec

from ..peers import ROOT, WIRE_SERVER, cli

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _exchange(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send ``lines`` to a stdio server, close stdin, read every answer."""
    data = b"".join(msgspec.json.encode(line) + b"\n" for line in lines)
    out = subprocess.run(
        cli("serve", str(WIRE_SERVER)),
        input=data,
        capture_output=True,
        cwd=ROOT,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return [msgspec.json.decode(line) for line in out.stdout.splitlines()]


def test_requests_before_initialize_are_refused_and_the_session_goes_on() -> None:
    answers = _exchange(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
            {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": MODERN_META}},
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
        ]
    )
    by_id = {answer["id"]: answer for answer in answers}
    assert by_id[1]["error"]["code"] == -32600
    assert "initialize" in by_id[1]["error"]["message"]
    assert by_id[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert by_id[3]["error"]["code"] == -32601  # unknown stays unknown
    assert "tools" in by_id[4]["result"]  # a modern request needs no handshake
    assert by_id[5]["result"]["protocolVersion"] == "2025-11-25"
    assert "tools" in by_id[6]["result"]
