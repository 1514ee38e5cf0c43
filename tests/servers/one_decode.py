"""A server for the big tools/call read in one pass (tests/core/test_pre_read.py): three tools
of plain msgspec arguments. Served as a file, the environment picks the reading:
``ONE_DECODE_GENERAL=1`` turns the reader's ``pre_read`` off (the general decode, as before
it existed); otherwise every frame it takes is reported on stderr as ``pre_read taken``."""

from __future__ import annotations

import os
import sys
from typing import Any

from runtime import Server


def build() -> Server:
    app = Server("one-decode")

    @app.tool
    async def size(data: str, times: int = 1) -> int:
        """Length of data, times."""
        return len(data) * times

    @app.tool
    async def needs(a: int) -> int:
        """Echo a."""
        return a

    @app.tool
    async def nothing() -> str:
        """No arguments."""
        return "ok"

    return app


app = build()
if os.environ.get("ONE_DECODE_SERVED") == "1":
    _dispatcher = app.dispatcher
    _real = _dispatcher.pre_read
    assert _real is not None  # the composition root sets it
    if os.environ.get("ONE_DECODE_GENERAL") == "1":
        _dispatcher.pre_read = None
    else:

        def _reported(frame: bytes) -> Any:
            found = _real(frame)
            if found is not None:
                print("pre_read taken", file=sys.stderr, flush=True)
            return found

        _dispatcher.pre_read = _reported
