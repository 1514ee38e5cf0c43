"""Long-running tools as tasks, in both protocol eras.

- 2026-07-28 clients that declare the ``io.modelcontextprotocol/tasks`` extension get a task
  handle at once (``resultType: "task"``) and poll ``tasks/get``; input goes through
  ``tasks/update``; ``tasks/cancel`` stops the work.
- 2025-11-25 clients ask for a task with ``params.task`` and use ``tasks/get``,
  ``tasks/result`` (blocks until done), ``tasks/list`` and ``tasks/cancel``.
Clients without task support simply get the result when the tool finishes.

Run it:  mcp-runtime serve examples/tasks.py
"""

from __future__ import annotations

import trio

from runtime import Context, Server

app = Server("tasks-demo", "1.0.0")


@app.tool(task="optional")
async def build(target: str, seconds: float = 0.2, *, ctx: Context) -> str:
    """Pretend to build a target (a slow job), reporting progress."""
    steps = 4
    for step in range(steps):
        await trio.sleep(seconds / steps)
        await ctx.report_progress(step + 1, steps)
    return f"built {target}"


@app.tool(task="optional")
async def deploy(environment: str, ctx: Context) -> str:
    """Deploy after asking the user to confirm (input while running as a task)."""
    answer = await ctx.elicit(
        f"Deploy to {environment}?",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    )
    if answer.get("action") == "accept" and answer["content"].get("ok"):
        return f"deployed to {environment}"
    return "deployment cancelled"


@app.tool(task="required")
async def forever() -> str:
    """Runs until cancelled: only sensible as a task."""
    await trio.sleep_forever()


if __name__ == "__main__":
    app.run()
