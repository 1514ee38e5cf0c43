"""A server for wire-level tests: echo, a slow tool, a failing handler, a printing tool."""

from __future__ import annotations

import os
import sys

import trio

from runtime import Server

app = Server("wire-test", "0.0.1")
STARTED: list[str] = []
FINISHED: list[str] = []


@app.tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool
async def slow(seconds: float = 10.0, tag: str = "") -> str:
    """Sleep, recording start and finish (the finish runs even when cancelled)."""
    STARTED.append(tag)
    try:
        await trio.sleep(seconds)
        return f"slept {seconds}"
    finally:
        FINISHED.append(tag)
        if os.environ.get("WIRE_TEST_REPORT_FINALLY"):
            print(f"finally ran for {tag}", file=sys.stderr, flush=True)


@app.tool
def shout(text: str) -> str:
    """Print to stdout (which must not corrupt the protocol) and answer."""
    print(f"debug output that must not reach the client: {text}")
    sys.stdout.flush()
    os.write(1, b"raw fd-1 write that must not reach the client\n")
    return text.upper()


@app.resource("fail://always")
def always_fails() -> str:
    """A handler that raises: the client must see -32603, never the detail."""
    raise RuntimeError("secret internal detail")
