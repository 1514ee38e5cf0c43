"""The official SDK client answering elicitation from examples/elicitation.py, in either era.
Usage: python sdk_elicitation_client.py MODE -- COMMAND... | URL  (MODE: legacy | 2026-07-28)
Prints JSON: the tools' final texts and the messages the client was asked.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import mcp_types as types
from mcp import Client, StdioServerParameters

ASKED: list[str] = []


async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
    ASKED.append(params.message)
    if "name" in params.message:
        return types.ElicitResult(action="accept", content={"name": "Grace"})
    if "Window" in params.message:
        return types.ElicitResult(action="accept", content={"seat": "window"})
    return types.ElicitResult(action="accept", content={"ok": True})


async def main(mode: str, command: list[str]) -> None:
    # A URL means Streamable HTTP; anything else is a command to run over stdio.
    target: Any = (
        command[0]
        if command[0].startswith("http")
        else StdioServerParameters(command=command[0], args=command[1:])
    )
    async with Client(target, mode=mode, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
        greet = await client.call_tool("greet", {})
        trip = await client.call_tool("book_trip", {"destination": "Lima"})
        out = {
            "version": client.protocol_version,
            "greet": greet.content[0].text,  # type: ignore[union-attr]
            "trip": trip.content[0].text,  # type: ignore[union-attr]
            "asked": ASKED,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    mode, sep, *rest = sys.argv[1:]
    assert sep == "--"
    asyncio.run(main(mode, rest))
