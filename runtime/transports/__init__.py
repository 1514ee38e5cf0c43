"""Transports: each turns some byte stream into a ``runtime.core.MessageChannel``."""

from ._edge import EdgePolicy, HttpLimits
from ._framed import FramedChannel, FramingName, make_framer
from ._http import serve_http
from ._http_server import HttpError
from ._http_session import Hooks
from ._http_streams import EventStore, MemoryEventStore
from ._socket import open_unix_listener
from ._stdio import open_stdio_channel
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
