"""The official SDK client through a load balancer, on a call whose answer streams progress
while the test kills (-9) the replica running it: the SDK resumes the POST's stream with
``Last-Event-ID`` on another replica, and must get the call's error there, not an empty
stream again and again. Usage: python sdk_resume_client.py URL STEPS DELAY. Prints one JSON
line per progress notification as it comes (``{"progress": message}``), then one with the
outcome (``{"error": ...}``, ``{"result": ...}`` or ``{"timeout": seconds}``)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

#: The longest this client waits for the call's outcome (the test bounds it more tightly).
PATIENCE = 40.0


def say(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


async def main(url: str, steps: int, delay: float) -> None:
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        say({"progress": message, "at": time.monotonic()})

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        outcome: dict[str, Any]
        try:
            with anyio.fail_after(PATIENCE):
                result = await session.call_tool(
                    "crawl", {"steps": steps, "delay": delay}, progress_callback=on_progress
                )
            outcome = {"result": result.model_dump(mode="json", exclude_none=True)}
        except MCPError as exc:
            outcome = {"error": {"code": exc.code, "message": exc.message}}
        except TimeoutError:
            outcome = {"timeout": PATIENCE}
        say({**outcome, "at": time.monotonic()})


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
