"""Drive a server with the official MCP SDK client over HTTP; print what it saw as JSON.

Run as a subprocess by tests/transports/test_sdk_http.py (the SDK runs on asyncio, our tests
on trio). Usage: python sdk_http_client.py streamable|sse|modern URL
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def exercise(session: Any, out: dict[str, Any], *, ping: bool = True) -> None:
    progress: list[Any] = []
    out["tools"] = dump(await session.list_tools())
    out["add"] = dump(await session.call_tool("add", {"a": 2, "b": 40}))
    out["divide_by_zero"] = dump(
        await session.call_tool("divide", {"numerator": 1, "denominator": 0})
    )

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append([value, total, message])

    out["countdown"] = dump(
        await session.call_tool("countdown", {"start": 3}, progress_callback=on_progress)
    )
    out["progress"] = progress
    out["note"] = dump(await session.read_resource("notes://welcome"))
    out["review"] = dump(await session.get_prompt("review", {"code": "x = 1"}))
    if ping:
        out["ping"] = dump(await session.send_ping())


async def main(mode: str, url: str) -> None:
    out: dict[str, Any] = {}
    if mode == "streamable":
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            out["initialize"] = dump(await session.initialize())
            await exercise(session, out)
    elif mode == "sse":
        async with sse_client(url) as (read, write), ClientSession(read, write) as session:
            out["initialize"] = dump(await session.initialize())
            await exercise(session, out)
    elif mode == "modern":
        async with Client(url, mode="2026-07-28") as client:
            out["protocolVersion"] = client.protocol_version
            await exercise(client, out, ping=False)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
