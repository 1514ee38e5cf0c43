"""What ``@app.tool``, ``@app.resource`` and ``@app.prompt`` do: a user's function read into
the definition of a tool, resource, template or prompt, which the registry then takes.

The signature becomes a schema and a precompiled decoder (``runtime.features``), the
docstring a description, the return annotation a structured-output spec. Every mistake a
decorator can see (a resource without arguments naming variables its URI lacks, structured
output asked of a function that returns no data) is a TypeError at registration, never at
the first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack

from ._context import Context
from .features import (
    PromptDef,
    ResourceDef,
    TemplateDef,
    ToolDef,
    doc_summary,
    inspect_signature,
    output_spec,
)

if TYPE_CHECKING:
    from .features import Registry, UriTemplate

__all__ = [
    "PromptOptions",
    "Registrar",
    "ResourceOptions",
    "ToolOptions",
    "check_resource_uri",
    "prompt_definition",
    "resource_cache",
    "resource_definition",
    "tool_definition",
]

F = TypeVar("F", bound=Callable[..., Any])


class ToolOptions(TypedDict, total=False):
    """The options of ``@app.tool(...)`` (``Server.tool`` says what each means): the type
    checker's view of a call that gives any of them."""

    name: str | None
    title: str | None
    description: str | None
    annotations: dict[str, Any] | None
    icons: list[dict[str, Any]] | None
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    structured_output: bool | None
    task: Literal["optional", "required"] | None
    defer_task: bool
    meta: dict[str, Any] | None


class ResourceOptions(TypedDict, total=False):
    """The options of ``@app.resource(uri, ...)`` (``Server.resource``)."""

    name: str | None
    title: str | None
    description: str | None
    mime_type: str | None
    icons: list[dict[str, Any]] | None
    ttl_ms: int | None
    cache_scope: Literal["public", "private"] | None


class PromptOptions(TypedDict, total=False):
    """The options of ``@app.prompt(...)`` (``Server.prompt``)."""

    name: str | None
    title: str | None
    description: str | None
    icons: list[dict[str, Any]] | None


class Registrar:
    """The decorators' work: each function read into its definition and added to
    ``registry`` (which tells every listener of the change). ``resource_hint()``: the
    server's cache hints for ``resources/read``, the defaults of a resource that sets its
    own only in part."""

    def __init__(self, registry: Registry, resource_hint: Callable[[], tuple[int, str]]) -> None:
        self._registry = registry
        self._resource_hint = resource_hint

    def tool(self, fn: F | None, options: ToolOptions) -> F | Callable[[F], F]:
        def register(func: F) -> F:
            self._registry.add_tool(tool_definition(func, **options))
            return func

        return register(fn) if fn is not None else register

    def resource(self, uri: str, options: ResourceOptions) -> Callable[[F], F]:
        """Checked now, so a bare ``@app.resource`` fails where it is written."""
        check_resource_uri(uri)
        hint = self._resource_hint()
        cache = resource_cache(options.get("ttl_ms"), options.get("cache_scope"), hint)

        def register(func: F) -> F:
            definition = resource_definition(func, uri, options, cache)
            if isinstance(definition, TemplateDef):
                self._registry.add_template(definition)
            else:
                self._registry.add_resource(definition)
            return func

        return register

    def prompt(self, fn: F | None, options: PromptOptions) -> F | Callable[[F], F]:
        def register(func: F) -> F:
            self._registry.add_prompt(prompt_definition(func, **options))
            return func

        return register(fn) if fn is not None else register


def tool_definition(func: Callable[..., Any], **options: Unpack[ToolOptions]) -> ToolDef:
    """``func`` as a tool (``Server.tool`` says what each option means)."""
    name = options.get("name")
    structured_output = options.get("structured_output")
    output_schema = options.get("output_schema")
    tool_name = name or func.__name__
    sig = inspect_signature(func, name=tool_name, context_type=Context)
    output = None
    if structured_output is not False and output_schema is None:
        output = output_spec(func, name=tool_name, required=bool(structured_output))
    if structured_output and output is None and output_schema is None:
        raise TypeError(
            f"{tool_name}: structured_output=True needs a data return annotation or output_schema"
        )
    return ToolDef(
        name=tool_name,
        fn=func,
        signature=sig,
        title=options.get("title"),
        description=options.get("description") or doc_summary(func),
        input_schema=options.get("input_schema"),
        annotations=options.get("annotations"),
        icons=options.get("icons"),
        meta=options.get("meta"),
        output=output,
        output_schema=output_schema,
        task_support=options.get("task"),
        defer_task=options.get("defer_task", False),
    )


def check_resource_uri(uri: object) -> None:
    """TypeError unless ``uri`` is a URI: ``@app.resource`` without one (the function taken
    for it) would silently register nothing."""
    if not isinstance(uri, str):
        raise TypeError(
            "@app.resource needs the resource's URI: @app.resource('config://app') "
            "(or a template such as @app.resource('notes://{name}'))"
        )


def resource_cache(
    ttl_ms: int | None, cache_scope: str | None, default: tuple[int, str]
) -> tuple[int, str] | None:
    """A resource's own 2026-07-28 cache hints (``ttlMs``, ``cacheScope``): what it sets, the
    server's ``default`` for the rest; None when it sets neither (the default applies)."""
    if ttl_ms is None and cache_scope is None:
        return None
    default_ttl, default_scope = default
    return (
        default_ttl if ttl_ms is None else ttl_ms,
        default_scope if cache_scope is None else cache_scope,
    )


def resource_definition(
    func: Callable[..., Any],
    uri: str,
    options: ResourceOptions,
    cache: tuple[int, str] | None,
) -> ResourceDef | TemplateDef:
    """``func`` as the resource at ``uri``, or as a resource template when ``uri`` holds
    RFC 6570 expressions (its parameters are then the template's variables); ``cache``:
    its own cache hints (``resource_cache``)."""
    res_name = options.get("name") or func.__name__
    sig = inspect_signature(func, name=res_name, context_type=Context, lax=True)
    desc = options.get("description") or doc_summary(func)
    title, mime_type, icons = options.get("title"), options.get("mime_type"), options.get("icons")
    template = _template_of(uri)
    if template is not None:
        missing = set(sig.required) - set(template.variable_names)
        if missing:
            raise TypeError(
                f"{res_name}: parameters {sorted(missing)} are not variables of {uri!r}"
            )
        return TemplateDef(
            template=template,
            name=res_name,
            fn=func,
            signature=sig,
            title=title,
            description=desc,
            mime_type=mime_type,
            icons=icons,
            cache=cache,
        )
    if sig.required:
        raise TypeError(
            f"{res_name}: a static resource takes no arguments "
            f"(got {list(sig.required)}); use a URI template"
        )
    return ResourceDef(
        uri=uri,
        name=res_name,
        fn=func,
        signature=sig,
        title=title,
        description=desc,
        mime_type=mime_type,
        icons=icons,
        cache=cache,
    )


def prompt_definition(func: Callable[..., Any], **options: Unpack[PromptOptions]) -> PromptDef:
    """``func`` as a prompt: its parameters are the prompt's arguments."""
    prompt_name = options.get("name") or func.__name__
    sig = inspect_signature(func, name=prompt_name, context_type=Context, lax=True)
    description = options.get("description") or doc_summary(func)
    return PromptDef(
        prompt_name, func, sig, options.get("title"), description, options.get("icons")
    )


def _template_of(uri: str) -> UriTemplate | None:
    """The RFC 6570 template ``uri`` is, or None for a plain URI. Only a ``{`` opens an
    expression, so a server without templates never imports the template module (start-up
    time)."""
    if "{" not in uri:
        return None
    from .features import UriTemplate, is_template

    return UriTemplate(uri) if is_template(uri) else None
