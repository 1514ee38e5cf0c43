"""PyPI ``fastmcp``'s ``FastMCP`` with the benchmark features.

python fastmcp_server.py stdio
python fastmcp_server.py http-json PORT   # Streamable HTTP, stateless, JSON responses
python fastmcp_server.py http-sse PORT    # Streamable HTTP, its default: stateful, SSE responses
"""

import sys

from fastmcp import FastMCP

BLOB = ("0123456789abcdef" * 64)[:1024]

mcp = FastMCP("bench-fastmcp", version="1.0.0")


@mcp.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.resource("mem://blob", mime_type="text/plain")
async def blob() -> str:
    """1,024 bytes of text."""
    return BLOB


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        mcp.run("stdio", show_banner=False)
    else:
        mcp.run(
            "http",
            show_banner=False,
            host="127.0.0.1",
            port=int(sys.argv[2]),
            path="/mcp",
            log_level="warning",
            json_response=mode == "http-json",
            stateless_http=mode == "http-json",
        )
