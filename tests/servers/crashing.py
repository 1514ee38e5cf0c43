"""A server whose ``crash`` tool breaks its own connection (a task beside the requests fails):
the stand-in for any bug that kills a stdio server, which must then exit non-zero."""

from __future__ import annotations

from runtime import Context, Server

app = Server("crashing", "0.0.1")


async def _fail() -> None:
    raise RuntimeError("a bug inside the connection")


@app.tool
async def crash(*, ctx: Context) -> str:
    """Start a failing task in the connection's nursery."""
    ctx._request.peer.start_soon(_fail)  # type: ignore[attr-defined]
    return "started"
