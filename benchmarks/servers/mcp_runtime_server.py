"""This runtime's benchmark server.

mcp-runtime serve benchmarks/servers/mcp_runtime_server.py                     # stdio
mcp-runtime serve benchmarks/servers/mcp_runtime_server.py --transport http --port 8000  # /mcp
"""

from runtime import Server

BLOB = ("0123456789abcdef" * 64)[:1024]  # 1,024 bytes of ASCII text, the same in every server

app = Server("bench-mcp-runtime", "1.0.0")


@app.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@app.resource("mem://blob", mime_type="text/plain")
async def blob() -> str:
    """1,024 bytes of text."""
    return BLOB
