"""Drive a server with the official MCP SDK client over stdio; print what it saw as JSON.

Run as a subprocess by tests/interop/test_sdk_stdio.py (the SDK runs on asyncio, our tests on
trio: keeping them in separate processes keeps both honest).
Usage: python sdk_stdio_client.py -- COMMAND [ARGS...]
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    out: dict[str, Any] = {}
    progress: list[Any] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        out["initialize"] = dump(init)
        out["tools"] = dump(await session.list_tools())
        out["add"] = dump(await session.call_tool("add", {"a": 2, "b": 40}))
        out["add_invalid"] = dump(await session.call_tool("add", {"a": "two", "b": 40}))
        out["divide_by_zero"] = dump(
            await session.call_tool("divide", {"numerator": 1, "denominator": 0})
        )

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append([value, total, message])

        out["countdown"] = dump(
            await session.call_tool("countdown", {"start": 3}, progress_callback=on_progress)
        )
        out["progress"] = progress
        out["resources"] = dump(await session.list_resources())
        out["templates"] = dump(await session.list_resource_templates())
        out["config"] = dump(await session.read_resource("config://app"))
        out["note"] = dump(await session.read_resource("notes://welcome"))
        try:
            await session.read_resource("notes://missing")
        except Exception as exc:  # the SDK raises MCPError for a JSON-RPC error
            out["missing_note"] = {
                "type": type(exc).__name__,
                "code": getattr(getattr(exc, "error", None), "code", None),
                "message": str(exc),
            }
        out["prompts"] = dump(await session.list_prompts())
        out["review"] = dump(await session.get_prompt("review", {"code": "x = 1"}))
        out["ping"] = dump(await session.send_ping())
    print(json.dumps(out))


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    asyncio.run(main(argv))
