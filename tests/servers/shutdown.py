"""A server with a short shutdown grace and a tool that outlives it."""

from __future__ import annotations

import trio

from runtime import Limits, Server

app = Server("shutdown-test", "0.0.1", limits=Limits(shutdown_grace=0.5, eof_grace=0.3))


@app.tool
async def slow(seconds: float = 60.0) -> str:
    """Sleep longer than any grace period."""
    await trio.sleep(seconds)
    return "slept"
