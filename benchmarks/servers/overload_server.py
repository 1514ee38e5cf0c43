"""The benchmark server plus a ``sleep(ms)`` tool, used only by the overload-shedding row.

mcp-runtime serve benchmarks/servers/overload_server.py --max-in-flight 16
"""

import trio
from mcp_runtime_server import app  # the CLI puts this file's folder on sys.path

__all__ = ["app"]


@app.tool
async def sleep(ms: int) -> str:
    """Sleep ``ms`` milliseconds, holding an in-flight slot."""
    await trio.sleep(ms / 1000)
    return "slept"
