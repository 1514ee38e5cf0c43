"""Drive a server with the official SDK's ``mcp.Client`` on the modern wire (2026-07-28),
over stdio; print what it saw as JSON. Usage: python sdk_modern_client.py MODE -- COMMAND...
(MODE: "2026-07-28" pins the version; "auto" probes server/discover first.)
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import Client, StdioServerParameters


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(mode: str, command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    out: dict[str, Any] = {}
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        out["protocol_version"] = client.protocol_version
        out["tools"] = dump(await client.list_tools())
        out["add"] = dump(await client.call_tool("add", {"a": 20, "b": 22}))
        out["config"] = dump(await client.read_resource("config://app"))
        out["note"] = dump(await client.read_resource("notes://todo"))
        out["review"] = dump(await client.get_prompt("review", {"code": "pass"}))
        try:
            await client.read_resource("notes://missing")
        except Exception as exc:
            out["missing_note"] = {
                "type": type(exc).__name__,
                "code": getattr(getattr(exc, "error", None), "code", None),
            }
    print(json.dumps(out))


if __name__ == "__main__":
    mode, sep, *rest = sys.argv[1:]
    assert sep == "--"
    asyncio.run(main(mode, rest))
