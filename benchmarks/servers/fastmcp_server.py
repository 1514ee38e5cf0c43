"""PyPI ``fastmcp``'s ``FastMCP`` with the benchmark features.

python fastmcp_server.py stdio
python fastmcp_server.py http-json PORT   # Streamable HTTP, stateless, JSON responses
python fastmcp_server.py http-sse PORT    # Streamable HTTP, its default: stateful, SSE responses
"""

import sys
from functools import cache

from fastmcp import FastMCP

BLOB = ("0123456789abcdef" * 64)[:1024]
MIB = 1 << 20


@cache
def big_text(mib: int) -> str:
    return "0123456789abcdef" * (mib * MIB // 16)


mcp = FastMCP("bench-fastmcp", version="1.0.0")


@mcp.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.resource("mem://blob", mime_type="text/plain")
async def blob() -> str:
    """1,024 bytes of text."""
    return BLOB


@mcp.resource("mem://text/1", mime_type="text/plain")
async def text_1mib() -> str:
    """1 MiB of text."""
    return big_text(1)


@mcp.resource("mem://text/16", mime_type="text/plain")
async def text_16mib() -> str:
    """16 MiB of text."""
    return big_text(16)


@mcp.resource("mem://bytes/4", mime_type="application/octet-stream")
async def bytes_4mib() -> bytes:
    """4 MiB of bytes (a base64 blob on the wire)."""
    return big_text(4).encode()


@mcp.tool
async def size(data: str) -> int:
    """The length of ``data``."""
    return len(data)


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
