"""A server whose tools misbehave, for the fault-injection suite (tests/test_faults.py)."""

from __future__ import annotations

import time

import trio

from runtime import Limits, Server

app = Server(
    "faults",
    "0.0.1",
    limits=Limits(
        shutdown_grace=0.5, eof_grace=0.3, request_timeout=2.0, write_timeout=1.0, read_timeout=1.0
    ),
)


class Unusual(BaseException):
    """Not an Exception: a handler bug all the same."""


@app.tool
async def block_loop(seconds: float = 0.5) -> str:
    """Block the event loop (a blocking call in an async tool)."""
    time.sleep(seconds)  # noqa: ASYNC251 - the fault under test
    return "unblocked"


@app.tool
async def raise_base() -> str:
    """Raise a BaseException subclass that is not KeyboardInterrupt/SystemExit."""
    raise Unusual("not an Exception")


@app.tool
async def never_returns() -> str:
    """Wait for ever (request_timeout ends it)."""
    await trio.sleep_forever()
    return "unreachable"


@app.tool
async def big(size: int = 4_000_000) -> str:
    """A large reply (for a peer that hangs up or stops reading while it is written)."""
    return "x" * size


@app.tool
async def slow(seconds: float = 60.0) -> str:
    """Sleep."""
    await trio.sleep(seconds)
    return "slept"


@app.tool
def echo(text: str) -> str:
    """A plain def tool (worker thread)."""
    return text
