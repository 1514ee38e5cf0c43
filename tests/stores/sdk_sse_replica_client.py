"""The official SDK's legacy HTTP+SSE client (``mcp.client.sse.sse_client``, 2024-11-05)
through a load balancer: its GET /sse stream stays on one replica while each POST lands on
any. Usage: python sdk_sse_replica_client.py URL. Prints JSON of what it saw."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.sse import sse_client
from sdk_conversation import common_calls, confirm_calls, dump, elicitation_recorder


async def main(url: str) -> None:
    out: dict[str, Any] = {}

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            out.setdefault("errors", []).append(repr(message))

    async with (
        sse_client(url) as (read, write),
        ClientSession(
            read,
            write,
            elicitation_callback=elicitation_recorder(out),
            message_handler=on_message,
        ) as session,
    ):
        await common_calls(session, out)
        await confirm_calls(session, out)
        out["ping"] = dump(await session.send_ping())
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
