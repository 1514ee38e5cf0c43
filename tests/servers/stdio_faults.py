"""A stdio server with faults of our own injected (tests/test_faults.py): bugs in the runtime,
not in tools, which the stdio transport must log and serve past. ``STDIO_FAULT`` picks one:

- ``frame``: reading a frame whose method is ``test/fault`` raises (the reader's
  classification: a bug met while handling one frame);
- ``serve-once``: the stdio connection's ``serve`` raises the first time (a bug in the
  connection itself);
- ``serve-always``: it raises every time (a fault that serving on cannot get past);
- unset: none; the ``crash`` tool starts a task beside the requests that fails (a bug in a
  task of the connection).
"""

from __future__ import annotations

import os
from typing import Any

import trio

from runtime import Context, Server
from runtime.core import _connection, _reader

app = Server("stdio-faults", "0.0.1")
FAULT = os.environ.get("STDIO_FAULT", "")


class InjectedFault(RuntimeError):
    """A bug of ours, injected."""


if FAULT == "frame":
    _classify = _reader.classify

    def classify(message: Any) -> Any:
        if message.method == "test/fault":
            raise InjectedFault("injected fault in the reader")
        return _classify(message)

    _reader.classify = classify  # type: ignore[assignment]

elif FAULT in ("serve-once", "serve-always"):
    _serve = _connection.Connection.serve
    _failed: list[bool] = []

    async def serve(self: Any, *args: Any, **kwargs: Any) -> None:
        if FAULT == "serve-always" or not _failed:
            _failed.append(True)
            raise InjectedFault("injected fault in the connection")
        await _serve(self, *args, **kwargs)

    _connection.Connection.serve = serve  # type: ignore[method-assign]


async def _fail() -> None:
    raise InjectedFault("injected fault in a task of the connection")


@app.tool
async def crash(*, ctx: Context) -> str:
    """Start a failing task in the connection's nursery."""
    ctx._request.peer.start_soon(_fail)  # type: ignore[attr-defined]
    return "started"


@app.tool
async def slow(seconds: float = 30.0) -> str:
    """Sleep."""
    await trio.sleep(seconds)
    return "slept"


@app.tool
def echo(text: str) -> str:
    """Echo."""
    return text
