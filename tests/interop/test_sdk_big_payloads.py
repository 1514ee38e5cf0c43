"""Issue 22: big payloads arrive byte-exact at the official MCP SDK client, over stdio and
Streamable HTTP (handshake era and modern): blobs encoded in the reply's one encode and in
pieces, a long text with escapes and non-ASCII in pieces, and a 1 MiB tools/call argument
(read in the tool's one typed pass). The client decodes and digests what it received; the
digests are compared with the payloads' own."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import trio

from runtime.cli import load_target

from ..peers import cli, run_sdk_client
from ..servers import big
from ..transports.app import serving

CLIENT = "interop/sdk_big_client.py"
SERVER = "tests/servers/big.py"
ARGUMENT_CHARS = 1 << 20


def _digest(data: bytes) -> str:
    return f"{len(data)}:{hashlib.sha256(data).hexdigest()}"


def _expected() -> dict[str, Any]:
    argument = big.text(ARGUMENT_CHARS)
    octets = "application/octet-stream"
    return {
        "big://blob/one-go": ["blob", octets, _digest(big.blob(big.BLOB_ONE_GO))],
        "big://blob/pieces": ["blob", octets, _digest(big.blob(big.BLOB_PIECES))],
        "big://text/pieces": ["text", "text/plain", _digest(big.text(big.TEXT_PIECES).encode())],
        "digest": [False, f"{len(argument)}:{hashlib.sha256(argument.encode()).hexdigest()}"],
    }


async def test_big_payloads_over_stdio_are_byte_exact() -> None:
    seen = await run_sdk_client(
        CLIENT, "stdio", str(ARGUMENT_CHARS), "--", *cli("serve", SERVER), timeout=120
    )
    assert seen == _expected()


@pytest.mark.parametrize("mode", ["streamable", "modern"])
async def test_big_payloads_over_http_are_byte_exact(mode: str) -> None:
    app = load_target(SERVER)
    async with serving(app, "http") as (host, port):
        with trio.fail_after(120):
            seen = await run_sdk_client(
                CLIENT, mode, f"http://{host}:{port}/mcp", str(ARGUMENT_CHARS), timeout=120
            )
    assert seen == _expected()
