"""A handshake-era remote whose tool logs, asks its caller a question and reports when it ran
(tests/bridge/test_bridge_parallel.py): served in-process over TCP/Unix/WebSocket/legacy SSE,
or by ``mcp-runtime serve`` over stdio (one process per upstream session)."""

from __future__ import annotations

import json
import time

import trio

from runtime import Context, Server


def make_app() -> Server:
    app = Server("timed-upstream", "1.0.0")

    @app.tool
    async def introduce(tag: str, ctx: Context) -> str:
        """Logs, asks a name for ``tag``, logs again; answers its name and when it ran."""
        start = time.time()  # wall clock: comparable across processes on one machine
        await ctx.info(f"before {tag}")
        await trio.sleep(0.4)  # a call forwarded meanwhile overlaps this one (if let through)
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        answer = await ctx.elicit(f"name for {tag}?", schema)
        await ctx.info(f"after {tag}")
        name = (answer.get("content") or {}).get("name")
        return json.dumps({"tag": tag, "name": name, "start": start, "end": time.time()})

    return app


app = make_app()
