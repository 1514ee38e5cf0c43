"""Transports: each turns some byte stream into a ``runtime.core.MessageChannel``.

The network transports (HTTP, WebSocket) load lazily (PEP 562): a stdio or TCP server never
imports the HTTP server, wsproto or trio-websocket, which keeps the CLI's start-up fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._framed import FramedChannel, FramingName, make_framer
from ._socket import open_unix_listener
from ._stdio import open_stdio_channel

if TYPE_CHECKING:
    from ._edge import EdgePolicy, HttpLimits
    from ._http import serve_http
    from ._http_exchange import HttpError
    from ._http_session import Hooks
    from ._http_streams import EventStore, MemoryEventStore
    from ._websocket import serve_websocket

__all__ = [
    "EdgePolicy",
    "EventStore",
    "FramedChannel",
    "FramingName",
    "Hooks",
    "HttpError",
    "HttpLimits",
    "MemoryEventStore",
    "make_framer",
    "open_stdio_channel",
    "open_unix_listener",
    "serve_http",
    "serve_websocket",
]

_LAZY = {
    "EdgePolicy": "._edge",
    "HttpLimits": "._edge",
    "serve_http": "._http",
    "HttpError": "._http_server",
    "Hooks": "._http_session",
    "EventStore": "._http_streams",
    "MemoryEventStore": "._http_streams",
    "serve_websocket": "._websocket",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
