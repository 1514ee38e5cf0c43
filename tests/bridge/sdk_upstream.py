"""The official SDK's (PyPI ``mcp`` 2.x) ``MCPServer``: the remote behind our proxy.

python sdk_upstream.py stdio MARKER_DIR
python sdk_upstream.py http PORT MARKER_DIR   # Streamable HTTP at /mcp, stateful, SSE answers

``slow`` reports progress and then waits; when it is cancelled it writes MARKER_DIR/cancelled
(how the tests see that a cancellation crossed the proxy).
"""

import asyncio
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("sdk-upstream", version="2.0.0", log_level="WARNING")
MARKERS = Path(sys.argv[-1])


@mcp.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
async def fail(reason: str) -> str:
    """Always fails (an isError result)."""
    raise ValueError(f"failed on purpose: {reason}")


@mcp.tool()
async def slow(ctx: Context) -> str:
    """Reports progress 1 and 2 of 3, then waits (for a cancellation)."""
    await ctx.report_progress(1, 3, "one")
    await ctx.report_progress(2, 3, "two")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        (MARKERS / "cancelled").write_text("yes")
        raise
    return "never"


@mcp.resource("mem://greeting", mime_type="text/plain")
async def greeting() -> str:
    """A short text."""
    return "hello through the bridge"


@mcp.prompt()
def review(code: str) -> str:
    """Review some code."""
    return f"Please review: {code}"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run("stdio")
    else:
        mcp.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[2]),
            streamable_http_path="/mcp",
        )
