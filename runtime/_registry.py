"""What a server offers: tools, resources, resource templates and prompts.

Each definition is built once at registration: schemas, decoders and the wire form that the
list methods return, so listing and calling do no per-request introspection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ._output import OutputSpec
from ._pagination import CursorCodec
from ._signature import Signature
from ._uritemplate import UriTemplate

__all__ = ["App", "Completer", "PromptDef", "Registry", "ResourceDef", "TemplateDef", "ToolDef"]


#: ``(ref_type, ref_name_or_uri, argument, value, context_arguments) -> suggestions``
Completer = Callable[[str, str, str, str, dict[str, str]], Awaitable[Sequence[str]]]


class App(Protocol):
    """What the MCP handlers need of a server (``runtime.Server`` is one). Handlers are
    written against this, never against the Server class, so layers point downward."""

    name: str
    version: str
    instructions: str | None

    @property
    def registry(self) -> Registry: ...

    @property
    def cursors(self) -> CursorCodec: ...

    @property
    def completer(self) -> Completer | None: ...

    def server_info(self) -> dict[str, Any]: ...

    def cache_hint(self, method: str) -> tuple[int, str]:
        """``(ttlMs, cacheScope)`` for a cacheable result of ``method`` (2026-07-28)."""
        ...


def _wire(**items: Any) -> dict[str, Any]:
    return {key: value for key, value in items.items() if value is not None}


@dataclass(slots=True)
class ToolDef:
    name: str
    fn: Callable[..., Any]
    signature: Signature
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    #: Structured output (None: the tool returns unstructured content only).
    output: OutputSpec | None = None
    #: A user-supplied outputSchema, passed through untouched.
    output_schema: dict[str, Any] | None = None
    listing: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.listing = _wire(
            name=self.name,
            title=self.title,
            description=self.description,
            inputSchema=self.input_schema or self.signature.schema,
            outputSchema=self.output_schema or (self.output.schema if self.output else None),
            annotations=self.annotations,
            _meta=self.meta,
        )


@dataclass(slots=True)
class ResourceDef:
    uri: str
    name: str
    fn: Callable[..., Any]
    signature: Signature
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    #: (ttlMs, cacheScope) for resources/read of this resource; None: the server default.
    cache: tuple[int, str] | None = None
    listing: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.listing = _wire(
            uri=self.uri,
            name=self.name,
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
        )


@dataclass(slots=True)
class TemplateDef:
    template: UriTemplate
    name: str
    fn: Callable[..., Any]
    signature: Signature
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    cache: tuple[int, str] | None = None
    listing: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.listing = _wire(
            uriTemplate=self.template.template,
            name=self.name,
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
        )


@dataclass(slots=True)
class PromptDef:
    name: str
    fn: Callable[..., Any]
    signature: Signature
    title: str | None = None
    description: str | None = None
    listing: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sig = self.signature
        arguments = [
            _wire(
                name=arg,
                description=sig.descriptions.get(arg),
                required=arg in sig.required,
            )
            for arg in sig.names
        ]
        self.listing = _wire(
            name=self.name,
            title=self.title,
            description=self.description,
            arguments=arguments or None,
        )


class Registry:
    """Name-keyed tables; dict insertion order gives a deterministic list order."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolDef] = {}
        self.resources: dict[str, ResourceDef] = {}
        self.templates: dict[str, TemplateDef] = {}
        self.prompts: dict[str, PromptDef] = {}

    def add_tool(self, tool: ToolDef) -> None:
        _check_new(self.tools, tool.name, "tool")
        self.tools[tool.name] = tool

    def add_resource(self, resource: ResourceDef) -> None:
        _check_new(self.resources, resource.uri, "resource")
        self.resources[resource.uri] = resource

    def add_template(self, template: TemplateDef) -> None:
        _check_new(self.templates, template.template.template, "resource template")
        self.templates[template.template.template] = template

    def add_prompt(self, prompt: PromptDef) -> None:
        _check_new(self.prompts, prompt.name, "prompt")
        self.prompts[prompt.name] = prompt

    def find_template(self, uri: str) -> tuple[TemplateDef, dict[str, str]] | None:
        """The first template (in registration order) that matches ``uri``, and its values."""
        for template in self.templates.values():
            values = template.template.match(uri)
            if values is not None:
                return template, values
        return None


def _check_new(table: dict[str, Any], key: str, kind: str) -> None:
    if key in table:
        raise ValueError(f"a {kind} named {key!r} is already registered")
