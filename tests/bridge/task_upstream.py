"""The upstream the task-bridging tests put behind the proxy: tools that run as tasks
(finishing, eliciting, failing with a JSON-RPC error, never ending) and one that is not a task."""

from __future__ import annotations

import trio

from runtime import Context, Server
from runtime.protocol import JSONRPCError


def upstream(cancelled: list[str]) -> Server:
    app = Server("upstream", "3.0.0")

    @app.tool(task="optional")
    async def build(target: str, ctx: Context) -> str:
        """A task."""
        await trio.sleep(0.1)
        return f"built {target}"

    @app.tool(task="optional")
    async def confirm(ctx: Context) -> str:
        """A task that elicits."""
        answer = await ctx.elicit(
            "Go on?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        return f"{answer['action']} {answer.get('content')}"

    @app.tool(task="optional")
    async def broken(ctx: Context) -> str:
        """A task that fails (a JSON-RPC error, not an isError result)."""
        raise JSONRPCError(-32602, "no luck", {"why": "testing"})

    @app.tool(task="optional")
    async def forever(ctx: Context) -> str:
        """A task that only ends by cancellation."""
        try:
            await trio.sleep_forever()
        finally:
            cancelled.append("forever")
        return "never"

    @app.tool
    def plain(word: str) -> str:
        """Not a task."""
        return word.upper()

    return app
