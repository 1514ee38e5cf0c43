"""The part of a handshake-era conversation that both SDK client scripts of this folder hold
through a load balancer (``sdk_replica_client.py`` over Streamable HTTP, and
``sdk_sse_replica_client.py`` over legacy HTTP+SSE): each call may land on any replica.
The scripts run as ``python SCRIPT URL``, so this sibling module is importable by name."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp import ClientSession


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def elicitation_recorder(out: dict[str, Any]) -> Any:
    """An elicitation callback that accepts and records each question in ``out["asked"]``."""
    out.setdefault("asked", [])

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        out["asked"].append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    return on_elicit


async def common_calls(session: ClientSession, out: dict[str, Any]) -> None:
    """initialize, lists, plain and progress-reporting tool calls, a resource read."""
    out["initialize"] = dump(await session.initialize())["protocolVersion"]
    out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
    out["who"] = [(await session.call_tool("whoami", {})).content[0].text for _ in range(6)]
    out["add"] = [
        (await session.call_tool("add", {"a": i, "b": 1})).content[0].text for i in range(6)
    ]
    progress: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append([value, total, message])

    count = await session.call_tool("count", {"to": 3}, progress_callback=on_progress)
    out["count"] = count.content[0].text
    out["progress"] = progress
    out["resource"] = dump(await session.read_resource("notes://welcome"))["contents"][0]["text"]


async def confirm_calls(session: ClientSession, out: dict[str, Any]) -> None:
    """Three elicitations; each answer is a POST of its own, on whichever replica."""
    out["confirm"] = [
        (await session.call_tool("confirm", {"question": f"ok {i}?"})).content[0].text
        for i in range(3)
    ]
