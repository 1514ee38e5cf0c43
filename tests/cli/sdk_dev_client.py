"""The official SDK client across a reload of ``mcp-runtime dev`` (tests/cli/test_dev_sessions.py).

Usage: python sdk_dev_client.py URL. Opens a handshake-era session, calls ``add``, prints
``edit`` and waits for a line on stdin (the test edits the file and waits for the reload),
then calls ``add`` again on the same session; if that fails (the session ended with the old
version: 404), it opens a new session, as the 2025-11-25 transport says a client must.
Prints JSON last."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def text(result: Any) -> str:
    return str(result.content[0].text)


async def main(url: str) -> None:
    out: dict[str, Any] = {}
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        out["before"] = text(await session.call_tool("add", {"a": 2, "b": 3}))
        print("edit", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        try:
            out["same_session"] = text(
                await asyncio.wait_for(session.call_tool("add", {"a": 2, "b": 3}), 15)
            )
        except Exception as exc:
            out["same_session_error"] = f"{type(exc).__name__}: {exc}"
    if "same_session_error" in out:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out["new_session"] = text(await session.call_tool("add", {"a": 2, "b": 3}))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
