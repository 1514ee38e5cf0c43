"""Transports: each turns some byte stream into a ``runtime.core.MessageChannel``.

The network transports (HTTP, WebSocket) load lazily (PEP 562): a stdio or TCP server never
imports the HTTP server or wsproto (the server side of WebSocket is our own wsproto
loop, `_wsproto.py`; only the client uses trio-websocket), which keeps the CLI's start-up fast.
What they need of the server is one typed port, ``ServerPort`` (``_port``), which the
composition root implements: transports never import the core or the handlers.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from ._framed import FramedChannel, FramingName, make_framer
from ._low_water import LIFT_OVER, LowWater, lifted
from ._stdio import open_stdio_channel

if TYPE_CHECKING:
    from ._pipe import open_fifo_pair, pipe_client_lock, pipe_paths, serve_pipe
    from ._port import (
        HeaderRule,
        MessageChannel,
        ProtocolSession,
        ReadFrame,
        SendNow,
        ServerPort,
        SessionConnection,
    )
    from ._socket import open_unix_listener
    from ._websocket import serve_websocket
    from .http import (
        EdgePolicy,
        EventStore,
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
    "HeaderRule",
    "HttpError",
    "HttpLimits",
    "LowWater",
    "MemoryEventStore",
    "MessageChannel",
    "ProtocolSession",
    "ReadFrame",
    "SendNow",
    "ServerPort",
    "SessionConnection",
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
            "HttpError",
            "HttpLimits",
            "MemoryEventStore",
            "serve_http",
        )
    },
    "serve_websocket": "._websocket",
    **dict.fromkeys(
        (
            "HeaderRule",
            "MessageChannel",
            "ProtocolSession",
            "ReadFrame",
            "SendNow",
            "ServerPort",
            "SessionConnection",
        ),
        "._port",
    ),
    # The FIFO pair and the Unix socket too: a stdio server needs neither (start-up time).
    **dict.fromkeys(("open_fifo_pair", "pipe_client_lock", "pipe_paths", "serve_pipe"), "._pipe"),
    "open_unix_listener": "._socket",
}


def __getattr__(name: str) -> Any:
    if name == "Hooks":
        # The bag of callables the port replaced: the name still resolves, to the port, for
        # annotations written against it (nothing but the composition root ever built one).
        warnings.warn(
            "runtime.transports.Hooks is deprecated: use runtime.transports.ServerPort",
            DeprecationWarning,
            stacklevel=2,
        )
        name = "ServerPort"
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
