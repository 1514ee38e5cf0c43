"""A user's function read into the definition of a tool, resource, template or prompt.

What ``@app.tool``, ``@app.resource`` and ``@app.prompt`` do before the registry takes it:
the signature becomes a schema and a precompiled decoder (``runtime.features``), the
docstring a description, the return annotation a structured-output spec. Every mistake a
decorator can see (a resource without arguments naming variables its URI lacks, structured
output asked of a function that returns no data) is a TypeError at registration, never at
the first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
    from .features import UriTemplate

__all__ = [
    "check_resource_uri",
    "prompt_definition",
    "resource_cache",
    "resource_definition",
    "tool_definition",
]


def tool_definition(
    func: Callable[..., Any],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    annotations: dict[str, Any] | None,
    icons: list[dict[str, Any]] | None,
    input_schema: dict[str, Any] | None,
    output_schema: dict[str, Any] | None,
    structured_output: bool | None,
    task: str | None,
    defer_task: bool,
    meta: dict[str, Any] | None,
) -> ToolDef:
    """``func`` as a tool (``Server.tool`` says what each option means)."""
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
        title=title,
        description=description or doc_summary(func),
        input_schema=input_schema,
        annotations=annotations,
        icons=icons,
        meta=meta,
        output=output,
        output_schema=output_schema,
        task_support=task,
        defer_task=defer_task,
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
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
    icons: list[dict[str, Any]] | None,
    cache: tuple[int, str] | None,
) -> ResourceDef | TemplateDef:
    """``func`` as the resource at ``uri``, or as a resource template when ``uri`` holds
    RFC 6570 expressions (its parameters are then the template's variables)."""
    res_name = name or func.__name__
    sig = inspect_signature(func, name=res_name, context_type=Context, lax=True)
    desc = description or doc_summary(func)
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


def prompt_definition(
    func: Callable[..., Any],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    icons: list[dict[str, Any]] | None,
) -> PromptDef:
    """``func`` as a prompt: its parameters are the prompt's arguments."""
    prompt_name = name or func.__name__
    sig = inspect_signature(func, name=prompt_name, context_type=Context, lax=True)
    return PromptDef(prompt_name, func, sig, title, description or doc_summary(func), icons)


def _template_of(uri: str) -> UriTemplate | None:
    """The RFC 6570 template ``uri`` is, or None for a plain URI. Only a ``{`` opens an
    expression, so a server without templates never imports the template module (start-up
    time)."""
    if "{" not in uri:
        return None
    from .features import UriTemplate, is_template

    return UriTemplate(uri) if is_template(uri) else None
