"""The official SDK's (PyPI ``mcp`` 2.x) ``MCPServer`` as a handshake-era remote that logs
and elicits during a tool call, behind our proxy.

python sdk_asking_upstream.py PORT   # Streamable HTTP at /mcp, stateful, SSE answers
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

mcp = MCPServer("sdk-asking-upstream", version="2.0.0", log_level="WARNING")


class Name(BaseModel):
    name: str


@mcp.tool()
async def chatty(tag: str, ctx: Context) -> str:
    """Logs at debug, info and warning while it runs."""
    await ctx.debug(f"debug {tag}")
    await ctx.info(f"info {tag}")
    await ctx.warning(f"warning {tag}")
    return tag


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Elicits a name."""
    answer = await ctx.elicit("Your name?", Name)
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"hello {answer.data.name}"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), streamable_http_path="/mcp")
