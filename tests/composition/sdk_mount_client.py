"""The official SDK client over stdio against tests/composition/mounted.py; prints JSON."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "runtime", "serve", "tests/composition/mounted.py"],
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["tools"] = [t.name for t in (await session.list_tools()).tools]
        out["prompts"] = [p.name for p in (await session.list_prompts()).prompts]
        out["resources"] = [str(r.uri) for r in (await session.list_resources()).resources]
        templates = (await session.list_resource_templates()).resource_templates
        out["templates"] = [t.uri_template for t in templates]
        out["search"] = dump(await session.call_tool("kid_search", {"query": "x"}))
        out["state"] = dump(await session.call_tool("kid_whose_state", {}))
        out["own"] = dump(await session.call_tool("own", {}))
        out["welcome"] = dump(await session.read_resource("notes://kid/welcome"))
        out["note"] = dump(await session.read_resource("notes://kid/abc"))
        out["greet"] = dump(await session.get_prompt("kid_greet", {"who": "ann"}))
        try:
            await session.call_tool("search", {"query": "x"})
        except Exception as exc:  # the SDK raises the protocol error it got
            out["unprefixed"] = str(exc)
    print(json.dumps(out))


asyncio.run(main())
