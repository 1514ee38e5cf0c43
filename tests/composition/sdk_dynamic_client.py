"""The official SDK client over Streamable HTTP against tests/composition/mounted_dynamic.py;
prints JSON. Usage: python sdk_dynamic_client.py URL"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def text(result: Any) -> str:
    return str(result.content[0].text)


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> Any:
    """The text of the result, or the JSON-RPC error as ``{"code", "message"}``."""
    try:
        result = await session.call_tool(name, args or {})
    except MCPError as exc:
        return {"code": exc.error.code, "message": exc.error.message}
    return {"isError": True, "text": text(result)} if result.is_error else text(result)


async def main(url: str) -> None:
    out: dict[str, Any] = {}
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        # A child whose chain ran already (built), then one more middleware.
        out["echo_before"] = await call(session, "kid_echo", {"text": "a"})
        out["tag_kid"] = await call(session, "tag", {"server": "kid", "name": "second"})
        out["echo_after"] = await call(session, "kid_echo", {"text": "b"})
        # A child mounted without middleware (the parent routes no mounts), then some.
        out["hello_before"] = await call(session, "bare_hello")
        out["tag_bare"] = await call(session, "tag", {"server": "bare", "name": "late"})
        out["hello_after"] = await call(session, "bare_hello")
        # A slow call of the kid in flight across the kid's unmount.
        slow, unmounted = await asyncio.wait_for(
            asyncio.gather(call(session, "kid_slow"), call(session, "unmount_kid")), 20
        )
        out["slow"], out["unmount"] = slow, unmounted
        out["slow_again"] = await call(session, "kid_slow")
        out["events"] = json.loads(await call(session, "get_events"))
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
