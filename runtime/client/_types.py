"""Typed results for the client's methods.

The wire shapes are the protocol layer's (``runtime.protocol``: content blocks in
``_content``, results in ``_results``), the same classes the server writes its content with;
they are re-exported here under the client's names (``Content`` is ``ContentBlock``). Unknown
fields are ignored, absent ones are ``None``; everything the structs do not model stays
reachable: ``meta`` holds ``_meta``, and :meth:`runtime.client.Client.request` returns the
raw result.

Only :class:`ServerDescription` is the client's own: one view of what the server said about
itself in either era.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..protocol import (
    AudioContent,
    CallToolResult,
    CompleteResult,
    Completion,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    Task,
    TextContent,
    Tool,
)
from ..protocol import ContentBlock as Content

__all__ = [
    "AudioContent",
    "CallToolResult",
    "CompleteResult",
    "Completion",
    "Content",
    "EmbeddedResource",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListToolsResult",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "ServerDescription",
    "Task",
    "TextContent",
    "Tool",
]


class ServerDescription(msgspec.Struct, rename="camel", omit_defaults=True):
    """What the server said about itself: the ``initialize`` result (handshake era) or the
    ``server/discover`` result (2026-07-28), in one shape. ``protocol_version`` is the
    revision this client speaks with it."""

    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation | None = None
    instructions: str | None = None
    supported_versions: list[str] = msgspec.field(default_factory=list)
