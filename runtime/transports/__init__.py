"""Transports: each turns some byte stream into a ``runtime.core.MessageChannel``.

The network transports (HTTP, WebSocket) load lazily (PEP 562): a stdio or TCP server never
imports the HTTP server or wsproto (the server side of WebSocket is our own wsproto
loop, `_wsproto.py`; only the client uses trio-websocket), which keeps the CLI's start-up fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._framed import FramedChannel, FramingName, make_framer
from ._low_water import LIFT_OVER, LowWater, lifted
from ._stdio import open_stdio_channel

if TYPE_CHECKING:
    from ._pipe import open_fifo_pair, pipe_client_lock, pipe_paths, serve_pipe
    from ._socket import open_unix_listener
    from ._websocket import serve_websocket
    from .http import (
        EdgePolicy,
        EventStore,
        Hooks,
        HttpError,
        HttpLimits,
        MemoryEventStore,
        serve_http,
    )

__all__ = [
    "LIFT_OVER",
    "EdgePolicy",
    "EventStore",
    "FramedChannel",
    "FramingName",
    "Hooks",
    "HttpError",
    "HttpLimits",
    "LowWater",
    "MemoryEventStore",
    "lifted",
    "make_framer",
    "open_fifo_pair",
    "open_stdio_channel",
    "open_unix_listener",
    "pipe_client_lock",
    "pipe_paths",
    "serve_http",
    "serve_pipe",
    "serve_websocket",
]

_LAZY = {
    **{
        name: ".http"
        for name in (
            "EdgePolicy",
            "EventStore",
            "Hooks",
            "HttpError",
            "HttpLimits",
            "MemoryEventStore",
            "serve_http",
        )
    },
    "serve_websocket": "._websocket",
    # The FIFO pair and the Unix socket too: a stdio server needs neither (start-up time).
    **dict.fromkeys(("open_fifo_pair", "pipe_client_lock", "pipe_paths", "serve_pipe"), "._pipe"),
    "open_unix_listener": "._socket",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
