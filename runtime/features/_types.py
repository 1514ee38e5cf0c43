"""MCP wire types a user's tool, resource and prompt functions return: content blocks and
resource contents.

Field names follow the MCP schema (2025-11-25 and 2026-07-28 ``schema.ts``); msgspec
``rename`` turns snake_case attributes into the wire's camelCase. ``UNSET`` fields are
omitted from the wire.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

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


class _Wire(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    pass


class Annotations(_Wire):
    audience: list[Literal["user", "assistant"]] | UnsetType = UNSET
    priority: float | UnsetType = UNSET
    last_modified: str | UnsetType = UNSET


class TextContent(_Wire, tag="text", tag_field="type"):
    text: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ImageContent(_Wire, tag="image", tag_field="type"):
    #: base64-encoded image bytes
    data: str
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class AudioContent(_Wire, tag="audio", tag_field="type"):
    #: base64-encoded audio bytes
    data: str
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceLink(_Wire, tag="resource_link", tag_field="type"):
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class TextResourceContents(_Wire):
    uri: str
    text: str
    mime_type: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class BlobResourceContents(_Wire):
    uri: str
    #: base64-encoded bytes
    blob: str
    mime_type: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class EmbeddedResource(_Wire, tag="resource", tag_field="type"):
    resource: TextResourceContents | BlobResourceContents
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


class PromptMessage(_Wire):
    role: Literal["user", "assistant"]
    content: ContentBlock
