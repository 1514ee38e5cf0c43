"""Typed results (msgspec structs) for the client's methods.

Wire names are camelCase (``rename="camel"``); unknown fields are ignored, so a newer server
adding fields does not break an older client. Content blocks are a tagged union on ``type``
(2025-11-25 schema.ts ``ContentBlock``). Everything the structs do not model stays reachable:
``meta`` holds ``_meta``; :meth:`runtime.client.Client.request` returns the raw result.

The content blocks resemble ``runtime.features``' (``TextContent``, ``ImageContent``, ...) but
are not the same structs, on purpose: those are what a server *writes* (``UNSET`` fields left
off the wire, typed ``Annotations``, text and blob resource contents as two types), these are
what a client *reads* from any server (absent fields are ``None``, unknown and odd-typed
annotations tolerated, one ``ResourceContents`` with ``text`` or ``blob``). One set for both
would either make the client strict about other servers' output or loosen what ours emits.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

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


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    pass


class Implementation(_Wire):
    name: str
    version: str = ""
    title: str | None = None


class TextContent(_Wire, tag_field="type", tag="text"):
    text: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ImageContent(_Wire, tag_field="type", tag="image"):
    data: str
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class AudioContent(_Wire, tag_field="type", tag="audio"):
    data: str
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ResourceContents(_Wire):
    """One item of ``resources/read``: ``text`` or ``blob`` (base64) is set."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ResourceLink(_Wire, tag_field="type", tag="resource_link"):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None


class EmbeddedResource(_Wire, tag_field="type", tag="resource"):
    resource: ResourceContents
    annotations: dict[str, Any] | None = None


Content = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


class Tool(_Wire):
    name: str
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    execution: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ListToolsResult(_Wire):
    tools: list[Tool]
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None


class CallToolResult(_Wire):
    content: list[Content] = msgspec.field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (a convenience for the common case)."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))


class Resource(_Wire):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None


class ListResourcesResult(_Wire):
    resources: list[Resource]
    next_cursor: str | None = None


class ResourceTemplate(_Wire):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None


class ListResourceTemplatesResult(_Wire):
    resource_templates: list[ResourceTemplate]
    next_cursor: str | None = None


class ReadResourceResult(_Wire):
    contents: list[ResourceContents]
    ttl_ms: int | None = None
    cache_scope: str | None = None


class PromptArgument(_Wire):
    name: str
    description: str | None = None
    required: bool = False


class Prompt(_Wire):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = msgspec.field(default_factory=list)


class ListPromptsResult(_Wire):
    prompts: list[Prompt]
    next_cursor: str | None = None


class PromptMessage(_Wire):
    role: Literal["user", "assistant"]
    content: Content


class GetPromptResult(_Wire):
    messages: list[PromptMessage]
    description: str | None = None


class Completion(_Wire):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(_Wire):
    completion: Completion


class Task(_Wire):
    """A task (2025-11-25 experimental tasks, or the 2026-07-28 tasks extension's
    DetailedTask: then ``result``, ``error`` or ``input_requests`` may be inline)."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl: int | None = None
    ttl_ms: int | None = None
    poll_interval: int | None = None
    poll_interval_ms: int | None = None
    result: Any = None
    error: Any = None
    input_requests: dict[str, Any] | None = None


class ServerDescription(_Wire):
    """What the server said about itself: the ``initialize`` result (handshake era) or the
    ``server/discover`` result (2026-07-28), in one shape. ``protocol_version`` is the
    revision this client speaks with it."""

    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation | None = None
    instructions: str | None = None
    supported_versions: list[str] = msgspec.field(default_factory=list)
