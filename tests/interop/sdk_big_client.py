"""Read tests/servers/big.py's payloads with the official MCP SDK client; print digests as JSON.

Run as a subprocess by tests/interop/test_sdk_big_payloads.py (the SDK on asyncio, our tests on
trio). Usage: python sdk_big_client.py stdio -- COMMAND [ARGS...]
             python sdk_big_client.py streamable|modern URL ARGUMENT_CHARS
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

URIS = ["big://blob/one-go", "big://blob/pieces", "big://text/pieces"]
_UNIT = 'ab"c\\\u00e9\n\x00\u2028\U0001f600'  # (as tests/servers/big.py's text)


def _digest(data: bytes) -> str:
    return f"{len(data)}:{hashlib.sha256(data).hexdigest()}"


async def exercise(session: Any, chars: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for uri in URIS:
        contents = (await session.read_resource(uri)).contents
        assert len(contents) == 1, contents
        item = contents[0]
        if hasattr(item, "blob"):
            out[uri] = ["blob", item.mime_type, _digest(base64.b64decode(item.blob, validate=True))]
        else:
            out[uri] = ["text", item.mime_type, _digest(item.text.encode())]
    argument = (_UNIT * (chars // len(_UNIT) + 1))[:chars]
    result = await session.call_tool("digest", {"data": argument})
    out["digest"] = [result.is_error, result.content[0].text]
    return out


async def main(mode: str, rest: list[str]) -> None:
    if mode == "stdio":
        chars, command = int(rest[0]), rest[2:]  # CHARS -- COMMAND...
        params = StdioServerParameters(command=command[0], args=command[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out = await exercise(session, chars)
    elif mode == "streamable":
        url, chars = rest[0], int(rest[1])
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out = await exercise(session, chars)
    elif mode == "modern":
        url, chars = rest[0], int(rest[1])
        async with Client(url, mode="2026-07-28") as client:
            out = await exercise(client, chars)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
