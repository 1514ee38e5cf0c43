"""MCP wire types a user's tool, resource and prompt functions return: content blocks and
resource contents.

They are the protocol layer's (``runtime.protocol``), one definition that this server writes
and the client reads: see ``runtime/protocol/_content.py`` for the rules (``None`` is absent
and left off the wire).
"""

from __future__ import annotations

from ..protocol import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "PromptMessage",
    "ResourceLink",
    "TextContent",
    "TextResourceContents",
]
