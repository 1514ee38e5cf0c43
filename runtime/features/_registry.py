"""What a server offers: tools, resources, resource templates and prompts.

Each definition is built once at registration: schemas, decoders and the wire form that the
list methods return, so listing and calling do no per-request introspection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec

from ..protocol import JSONRPCError, ResourceNotFoundError
from ._broadcast import Broadcast
from ._output import OutputSpec
from ._pagination import CursorCodec
from ._signature import Signature
from ._state import StateSealer
from ._tasks import TaskTable
from ._threads import WorkerThreads

if TYPE_CHECKING:
    from ._uritemplate import UriTemplate  # loaded with the first template (start-up time)

__all__ = ["App", "Completer", "PromptDef", "Registry", "ResourceDef", "TemplateDef", "ToolDef"]

T = TypeVar("T")


#: ``(ref_type, ref_name_or_uri, argument, value, context_arguments) -> suggestions``
#: (None: no suggestions of its own for that ref; the annotation's are used.)
Completer = Callable[[str, str, str, str, dict[str, str]], Awaitable[Sequence[str] | None]]


class App(Protocol):
    """What the MCP handlers need of a server (``runtime.Server`` is one). Handlers are
    written against this, never against the Server class, so layers point downward."""

    name: str
    version: str
    instructions: str | None
    #: The handshake-era log level before the client's ``logging/setLevel`` (None: none).
    default_log_level: str | None

    @property
    def registry(self) -> Registry: ...

    @property
    def cursors(self) -> CursorCodec: ...

    @property
    def completer(self) -> Completer | None: ...

    @property
    def state_sealer(self) -> StateSealer: ...

    @property
    def tasks(self) -> TaskTable: ...

    @property
    def worker_threads(self) -> WorkerThreads: ...

    def server_info(self) -> dict[str, Any]: ...

    def cache_hint(self, method: str) -> tuple[int, str]:
        """``(ttlMs, cacheScope)`` for a cacheable result of ``method`` (2026-07-28)."""
        ...


def _wire(**items: Any) -> dict[str, Any]:
    return {key: value for key, value in items.items() if value is not None}


# The definitions are msgspec Structs rather than dataclasses: msgspec builds a class in C,
# where a dataclass compiles its generated methods when the module is imported, a cost paid
# by every ``mcp-runtime serve`` start-up (figures: ``benchmarks/README.md``). Like the
# dataclasses, they compare by value, are mutable, and ``msgspec.structs.replace`` runs
# ``__post_init__`` (a copy's ``listing`` follows its new name).
class ToolDef(msgspec.Struct):
    name: str
    fn: Callable[..., Any]
    signature: Signature
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    #: Structured output (None: the tool returns unstructured content only).
    output: OutputSpec | None = None
    #: A user-supplied outputSchema, passed through untouched.
    output_schema: dict[str, Any] | None = None
    #: Task support: None (never), "optional" or "required" (2025-11-25 execution.taskSupport;
    #: in 2026-07-28 any task-capable tool runs as a task for clients with the extension).
    task_support: str | None = None
    #: Modern era: run in the request until ``ctx.become_task()`` (input rounds first).
    defer_task: bool = False
    listing: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.listing = _wire(
            name=self.name,
            title=self.title,
            description=self.description,
            inputSchema=self.input_schema or self.signature.schema,
            outputSchema=self.output_schema or (self.output.schema if self.output else None),
            annotations=self.annotations,
            icons=self.icons,
            execution={"taskSupport": self.task_support} if self.task_support else None,
            _meta=self.meta,
        )


class _ResourceBase(msgspec.Struct, kw_only=True):
    """What a static resource and a resource template share."""

    name: str
    fn: Callable[..., Any]
    signature: Signature
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    icons: list[dict[str, Any]] | None = None
    #: (ttlMs, cacheScope) for resources/read; None: the server default.
    cache: tuple[int, str] | None = None
    listing: dict[str, Any] = msgspec.field(default_factory=dict)

    def _listing(self, **address: str) -> dict[str, Any]:
        return _wire(
            **address,
            name=self.name,
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
            icons=self.icons,
        )


class ResourceDef(_ResourceBase, kw_only=True):
    uri: str

    def __post_init__(self) -> None:
        self.listing = self._listing(uri=self.uri)


class TemplateDef(_ResourceBase, kw_only=True):
    template: UriTemplate

    def __post_init__(self) -> None:
        self.listing = self._listing(uriTemplate=self.template.template)


class PromptDef(msgspec.Struct):
    name: str
    fn: Callable[..., Any]
    signature: Signature
    title: str | None = None
    description: str | None = None
    icons: list[dict[str, Any]] | None = None
    listing: dict[str, Any] = msgspec.field(default_factory=dict)

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
            icons=self.icons,
        )


class Registry:
    """Name-keyed tables; dict insertion order gives a deterministic list order.

    Every add and remove publishes the matching list change on ``changes`` (a no-op until
    something subscribes, so registering at import time costs nothing). Mutate it from the
    server's trio thread (not from a sync tool's worker thread).
    """

    def __init__(self) -> None:
        self.tools: dict[str, ToolDef] = {}
        self.resources: dict[str, ResourceDef] = {}
        self.templates: dict[str, TemplateDef] = {}
        self.prompts: dict[str, PromptDef] = {}
        #: Change events (list changes, resource updates) for subscribers.
        self.changes = Broadcast()

    def add_tool(self, tool: ToolDef) -> None:
        _check_new(self.tools, tool.name, "tool")
        self.tools[tool.name] = tool
        self.changes.list_changed("tools")

    def add_resource(self, resource: ResourceDef) -> None:
        _check_new(self.resources, resource.uri, "resource")
        self.resources[resource.uri] = resource
        self.changes.list_changed("resources")

    def add_template(self, template: TemplateDef) -> None:
        _check_new(self.templates, template.template.template, "resource template")
        self.templates[template.template.template] = template
        self.changes.list_changed("resources")

    def add_prompt(self, prompt: PromptDef) -> None:
        _check_new(self.prompts, prompt.name, "prompt")
        self.prompts[prompt.name] = prompt
        self.changes.list_changed("prompts")

    def remove_tool(self, name: str) -> ToolDef:
        """Remove and return a tool; KeyError when none has that name."""
        tool = _pop(self.tools, name, "tool")
        self.changes.list_changed("tools")
        return tool

    def remove_resource(self, uri: str) -> ResourceDef | TemplateDef:
        """Remove a resource by URI, or a resource template by its template string."""
        removed: ResourceDef | TemplateDef
        if uri in self.resources or uri not in self.templates:
            removed = _pop(self.resources, uri, "resource")
        else:
            removed = self.templates.pop(uri)
        self.changes.list_changed("resources")
        return removed

    def remove_prompt(self, name: str) -> PromptDef:
        """Remove and return a prompt; KeyError when none has that name."""
        prompt = _pop(self.prompts, name, "prompt")
        self.changes.list_changed("prompts")
        return prompt

    def resolve_resource(self, uri: str) -> tuple[ResourceDef | TemplateDef, msgspec.Struct]:
        """The definition that serves ``uri`` and its validated arguments (a template's
        variables converted to the annotated types).

        Raises ResourceNotFoundError, or JSONRPCError(-32602) for a template variable whose
        value does not convert.
        """
        resource = self.resources.get(uri)
        if resource is not None:
            return resource, resource.signature.convert({})
        found = self.find_template(uri)
        if found is None:
            raise ResourceNotFoundError(uri)
        template, values = found
        sig = template.signature
        try:
            args = sig.convert({k: v for k, v in values.items() if k in sig.names}, strict=False)
        except msgspec.ValidationError as exc:
            raise JSONRPCError.invalid_params(
                f"Invalid value in resource URI {uri!r}: {exc}", {"uri": uri}
            ) from None
        return template, args

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


def _pop(table: dict[str, T], key: str, kind: str) -> T:
    try:
        return table.pop(key)
    except KeyError:
        raise KeyError(f"no {kind} named {key!r} is registered") from None
