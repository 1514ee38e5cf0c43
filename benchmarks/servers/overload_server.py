"""The benchmark server plus a ``sleep(ms)`` tool, used only by the overload-shedding row.

mcp-runtime serve benchmarks/servers/overload_server.py --max-in-flight 16
"""

import trio
from mcp_runtime_server import (  # type: ignore[import-not-found]  # the CLI puts this
    app as _app,  # file's folder on sys.path; mypy, run from the repository, does not
)

from runtime import Server

app: Server = _app

__all__ = ["app"]


@app.tool
async def sleep(ms: int) -> str:
    """Sleep ``ms`` milliseconds, holding an in-flight slot."""
    await trio.sleep(ms / 1000)
    return "slept"
