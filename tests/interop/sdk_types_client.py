"""The official SDK client against tests/servers/pydantic_server.py over stdio; prints JSON.

The SDK validates ``structuredContent`` against the tool's ``outputSchema`` itself, so a
schema and a value that disagree fail here.
Usage: python sdk_types_client.py -- COMMAND [ARGS...]
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
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["tools"] = dump(await session.list_tools())
        customer = {
            "name": "Ada",
            "age": 36,
            "emailAddress": "ada@example.org",
            "address": {"street": "1 Main", "city": "London"},
        }
        out["ok"] = dump(await session.call_tool("add_customer", {"customer": customer}))
        bad = {**customer, "age": -1}
        out["bad"] = dump(await session.call_tool("add_customer", {"customer": bad}))
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[sys.argv.index("--") + 1 :]))
