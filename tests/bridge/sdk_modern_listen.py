"""Two official SDK clients in the 2026-07-28 era (``mcp.Client``, server/discover) each
holding a ``subscriptions/listen`` through one proxy; print what each listen saw.

python sdk_modern_listen.py URL
Run as a subprocess by tests/bridge/test_bridge_sessions.py (the SDK runs on asyncio).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from mcp import Client


async def collect(sub: Any, out: list[str], wanted: set[str]) -> None:
    """Take events until each of ``wanted`` was seen (or forever, for an empty set)."""
    async for event in sub:
        out.append(type(event).__name__ + ":" + str(getattr(event, "uri", "") or ""))
        if wanted and wanted <= set(out):
            return


async def main(url: str) -> None:
    out: dict[str, Any] = {}
    async with Client(url) as a, Client(url) as b:
        out["version"] = a.session.protocol_version
        async with (
            a.listen(tools_list_changed=True, resource_subscriptions=["mem://a"]) as sa,
            b.listen(tools_list_changed=True) as sb,
        ):
            out["honored_a"] = sa.honored.model_dump(mode="json", by_alias=True)
            out["honored_b"] = sb.honored.model_dump(mode="json", by_alias=True)
            await a.call_tool("announce", {"uri": "mem://a"})
            await a.call_tool("announce", {"uri": "mem://b"})
            seen_a: list[str] = []
            seen_b: list[str] = []
            # a: a list change and the update of mem://a; b: a list change. List changes
            # are level-triggered, so the server may coalesce the two into one.
            want_a = {"ToolsListChanged:", "ResourceUpdated:mem://a"}
            with contextlib.suppress(TimeoutError):  # a timeout shows in what was seen
                await asyncio.wait_for(
                    asyncio.gather(
                        collect(sa, seen_a, want_a),
                        collect(sb, seen_b, {"ToolsListChanged:"}),
                    ),
                    20,
                )
            # Anything else (an update of mem://b, which a did not ask for) within 1 s.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(collect(sa, seen_a, set()), collect(sb, seen_b, set())),
                    1.0,
                )
            out["seen_a"] = seen_a
            out["seen_b"] = seen_b
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
