"""This runtime's benchmark server.

mcp-runtime serve benchmarks/servers/mcp_runtime_server.py                     # stdio
mcp-runtime serve benchmarks/servers/mcp_runtime_server.py --transport http --port 8000  # /mcp
"""

from functools import cache

from runtime import Server

BLOB = ("0123456789abcdef" * 64)[:1024]  # 1,024 bytes of ASCII text, the same in every server
MIB = 1 << 20


@cache
def big_text(mib: int) -> str:
    """``mib`` MiB of ASCII text, built on first use (not at start-up: the spawn row)."""
    return "0123456789abcdef" * (mib * MIB // 16)


app = Server("bench-mcp-runtime", "1.0.0")


@app.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@app.resource("mem://blob", mime_type="text/plain")
async def blob() -> str:
    """1,024 bytes of text."""
    return BLOB


# The big-payload rows (benchmarks/run.py measure_big): the same resources in every server.
@app.resource("mem://text/1", mime_type="text/plain")
async def text_1mib() -> str:
    """1 MiB of text."""
    return big_text(1)


@app.resource("mem://text/16", mime_type="text/plain")
async def text_16mib() -> str:
    """16 MiB of text."""
    return big_text(16)


@app.resource("mem://bytes/4", mime_type="application/octet-stream")
async def bytes_4mib() -> bytes:
    """4 MiB of bytes (a base64 blob on the wire)."""
    return big_text(4).encode()


@app.tool
async def size(data: str) -> int:
    """The length of ``data`` (the big tools/call argument row)."""
    return len(data)
