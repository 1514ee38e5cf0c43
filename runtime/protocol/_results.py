"""The results of MCP requests as they cross the wire (msgspec structs, ``schema.ts``).

The shapes of what a server answers ``tools/list``, ``tools/call``, ``resources/read``, ...
with: the client decodes answers into them (``runtime.client`` re-exports each), and any
other reader of a result (a bridge, a test) has them here. They follow ``_content``'s rules:
``None`` for absent, ``omit_defaults``, unknown fields ignored. Everything they do not model
stays in the raw result (``_meta`` is ``meta``).

Revisions differ in a few members, kept side by side: 2026-07-28 cache hints (``ttlMs``,
``cacheScope``) on cacheable results; a task's ``ttl``/``pollInterval`` (2025-11-25) and
``ttlMs``/``pollIntervalMs`` (the 2026-07-28 tasks extension).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._content import ContentBlock, PromptMessage, ResourceContents, TextContent, Wire

__all__ = [
    "CallToolResult",
    "CompleteResult",
    "Completion",
    "GetPromptResult",
    "Implementation",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListToolsResult",
    "Prompt",
    "PromptArgument",
    "ReadResourceResult",
    "Resource",
    "ResourceTemplate",
    "Task",
    "Tool",
]


class Implementation(Wire):
    """``clientInfo`` / ``serverInfo``: a name, a version, a title for people."""

    name: str
    version: str = ""
    title: str | None = None


class Tool(Wire):
    name: str
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    execution: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ListToolsResult(Wire):
    tools: list[Tool]
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None


class CallToolResult(Wire):
    content: list[ContentBlock] = msgspec.field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (a convenience for the common case)."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))


class Resource(Wire):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None


class ListResourcesResult(Wire):
    resources: list[Resource]
    next_cursor: str | None = None


class ResourceTemplate(Wire):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None


class ListResourceTemplatesResult(Wire):
    resource_templates: list[ResourceTemplate]
    next_cursor: str | None = None


class ReadResourceResult(Wire):
    contents: list[ResourceContents]
    ttl_ms: int | None = None
    cache_scope: str | None = None


class PromptArgument(Wire):
    name: str
    description: str | None = None
    required: bool = False


class Prompt(Wire):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = msgspec.field(default_factory=list)


class ListPromptsResult(Wire):
    prompts: list[Prompt]
    next_cursor: str | None = None


class GetPromptResult(Wire):
    messages: list[PromptMessage]
    description: str | None = None


class Completion(Wire):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Wire):
    completion: Completion


class Task(Wire):
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
