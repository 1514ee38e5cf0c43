"""A server to deploy behind a load balancer (docs/deploy.md).

    mcp-runtime serve examples/deploy/server.py --transport http --host 0.0.0.0 --port 8000 \\
        --store redis://redis:6379/0 --workers 2 --allowed-hosts mcp.example.com
"""

from __future__ import annotations

from runtime import Context, Server

app = Server("deployed", "1.0.0")


@app.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@app.tool
async def count(to: int, *, ctx: Context) -> str:
    """Count up, reporting progress on the way."""
    for n in range(1, to + 1):
        await ctx.report_progress(n, to)
    return f"counted to {to}"
