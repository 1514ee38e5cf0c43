"""Transports: each turns some byte stream into a ``runtime.core.MessageChannel``."""

from ._framed import FramedChannel, FramingName, make_framer
from ._socket import open_unix_listener
from ._stdio import open_stdio_channel

__all__ = [
    "FramedChannel",
    "FramingName",
    "make_framer",
    "open_stdio_channel",
    "open_unix_listener",
]
