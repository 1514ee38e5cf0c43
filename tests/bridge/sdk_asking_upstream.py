"""The official SDK's (PyPI ``mcp`` 2.x) ``MCPServer`` as a handshake-era remote that logs
and elicits during a tool call, behind our proxy.

python sdk_asking_upstream.py PORT   # Streamable HTTP at /mcp, stateful, SSE answers
python sdk_asking_upstream.py stdio  # stdio (no per-request streams)
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


@mcp.tool()
async def introduce(tag: str, ctx: Context) -> str:
    """Logs, elicits a name for ``tag`` (the question names it), logs again."""
    await ctx.info(f"before {tag}")
    answer = await ctx.elicit(f"name for {tag}?", Name)
    await ctx.info(f"after {tag}")
    return f"{tag}: {answer.data.name if answer.action == 'accept' else answer.action}"


if __name__ == "__main__" and sys.argv[1] == "stdio":
    mcp.run("stdio")
elif __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), streamable_http_path="/mcp")
