"""mcp-runtime: a trio-native, structured-concurrency runtime for MCP servers.

The user's one import::

    from runtime import Server, Context

Names are loaded lazily (PEP 562) so that ``import runtime`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from ._context import Context
    from ._header import Header
    from ._lifetime import ServerCrashed
    from ._server import Lifespan, Server
    from .core import Limits, Session
    from .features import (
        Annotations,
        AudioContent,
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        InputRequired,
        PromptMessage,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )
    from .protocol import MISSING_CLIENT_CAPABILITY, JSONRPCError, ResourceNotFoundError, ToolError

__all__ = [
    "MISSING_CLIENT_CAPABILITY",
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "Context",
    "EmbeddedResource",
    "Header",
    "ImageContent",
    "InputRequired",
    "JSONRPCError",
    "Lifespan",
    "Limits",
    "PromptMessage",
    "ResourceLink",
    "ResourceNotFoundError",
    "Server",
    "ServerCrashed",
    "Session",
    "TextContent",
    "TextResourceContents",
    "ToolError",
    "__version__",
]

_LAZY = {
    "Context": "._context",
    "Header": "._header",
    "Server": "._server",
    "Lifespan": "._server",
    "ServerCrashed": "._lifetime",
    "InputRequired": ".features",
    "JSONRPCError": ".protocol",
    "Limits": ".core",
    "MISSING_CLIENT_CAPABILITY": ".protocol",
    "ResourceNotFoundError": ".protocol",
    "Session": ".core",
    "ToolError": ".protocol",
    **{
        name: ".features"
        for name in (
            "Annotations",
            "AudioContent",
            "BlobResourceContents",
            "EmbeddedResource",
            "ImageContent",
            "PromptMessage",
            "ResourceLink",
            "TextContent",
            "TextResourceContents",
        )
    },
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
