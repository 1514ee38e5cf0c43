"""MCP content blocks and resource contents, one definition for both sides (msgspec structs).

A server's tool, resource and prompt functions return these (``runtime.TextContent``, ...);
the client decodes them out of results (``runtime.client``); a bridge does both, with the
same classes. Field names follow ``schema.ts`` (2025-11-25 and 2026-07-28); ``rename`` gives
the wire's camelCase.

Why one set serves the writer and the reader:

- Absent is ``None``, and ``omit_defaults`` leaves a field at its default off the wire: a
  server writes only what it set, a client reads ``None`` for what a peer left out.
- Unknown fields are ignored when reading (msgspec's default): a newer peer adding fields
  breaks no older reader.
- Content blocks are a tagged union on ``type`` (``schema.ts`` ``ContentBlock``).
- Resource contents: ``schema.ts`` has ``TextResourceContents | BlobResourceContents``, told
  apart by which of ``text`` and ``blob`` is there. msgspec tells the members of a union of
  structs apart by a tag only, so what is read is one :class:`ResourceContents` with
  ``text`` or ``blob`` set; :class:`TextResourceContents` and :class:`BlobResourceContents`
  are the same shape with that member required, for writing (and ``isinstance``). The
  members keep the order a server has always written them in (``uri``, then ``text`` or
  ``blob``, then ``mimeType``): a long text's reply, encoded in pieces, must come out as the
  same bytes (``runtime.features.reply_contents``).

msgspec does not validate on construction, so the field types bind what is *read*: a peer's
block whose fields have other types than the schema's is refused by the decode that reads it
(the client's ``BadMessage``), never half read.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "PromptMessage",
    "ResourceContents",
    "ResourceLink",
    "Role",
    "TextContent",
    "TextResourceContents",
]

Role = Literal["user", "assistant"]


class Wire(msgspec.Struct, omit_defaults=True, rename="camel"):
    """Base of the MCP wire shapes (here and ``_results``): camelCase names, defaults off
    the wire."""


class Annotations(Wire, kw_only=True):
    """Hints on a block (``schema.ts`` ``Annotations``): who it is for, how much it
    matters (0 to 1), when it last changed (ISO 8601)."""

    audience: list[Role] | None = None
    priority: float | None = None
    last_modified: str | None = None


class TextContent(Wire, tag="text", tag_field="type"):
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ImageContent(Wire, tag="image", tag_field="type"):
    #: base64-encoded image bytes
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class AudioContent(Wire, tag="audio", tag_field="type"):
    #: base64-encoded audio bytes
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ResourceLink(Wire, tag="resource_link", tag_field="type"):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ResourceContents(Wire):
    """One item of a ``resources/read`` result or an embedded resource, as read: ``text``
    or ``blob`` (base64) is set."""

    uri: str
    text: str | None = None
    #: base64-encoded bytes
    blob: str | None = None
    mime_type: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class TextResourceContents(ResourceContents, kw_only=True):
    """Resource contents that are text: what a server writes (read as ResourceContents).
    Built without ``text``: TypeError."""

    def __post_init__(self) -> None:
        if self.text is None:
            raise TypeError("TextResourceContents needs text")


class BlobResourceContents(ResourceContents, kw_only=True):
    """Resource contents that are bytes, base64-encoded in ``blob``: what a server writes.
    Built without ``blob``: TypeError."""

    def __post_init__(self) -> None:
        if self.blob is None:
            raise TypeError("BlobResourceContents needs blob")


class EmbeddedResource(Wire, tag="resource", tag_field="type"):
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


class PromptMessage(Wire):
    role: Role
    content: ContentBlock
