"""Structured tool output: ``outputSchema`` from a return annotation, built once.

MCP 2025-06-18+ server/tools "Structured Content": a tool may declare an ``outputSchema``
(an object schema) and return ``structuredContent`` conforming to it, plus a text mirror
of the same JSON in ``content`` for clients that predate structured output. A return type
whose schema is not an object (``int``, ``list[str]``, ...) is wrapped as ``{"result": ...}``
so that the declared schema is always an object, as the 2025-11-25 schema requires.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, Final

import msgspec

from ._annotations import ACCEPTED, SchemaBuilder, enc_hook
from ._types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

__all__ = ["OutputSpec", "output_spec"]

_UNSTRUCTURED: Final = {
    str,
    type(None),
    Any,
    object,
    bytes,
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
}


class OutputSpec(msgspec.Struct, frozen=True):
    """A tool's output schema, and whether its value is wrapped as ``{"result": value}``.

    A frozen msgspec Struct, not a dataclass: start-up time, as ``Signature``."""

    schema: dict[str, Any]
    #: True when the value is wrapped as {"result": value}.
    wrap: bool

    def structured(self, value: Any) -> Any:
        # enc_hook: a pydantic model (returned, or nested in a Struct) serializes as its own
        # JSON form (model_dump(mode="json")), the form its schema describes.
        builtins = msgspec.to_builtins(value, enc_hook=enc_hook)
        return {"result": builtins} if self.wrap else builtins


def _is_unstructured(annotation: Any) -> bool:
    if annotation in _UNSTRUCTURED or annotation is inspect.Signature.empty:
        return True
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, typing.Union) or str(origin) == "<class 'types.UnionType'>":
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        # list[TextContent], str | None, ...: content, not data.
        return bool(args) and all(_is_unstructured(a) for a in args)
    return False


def output_spec(fn: Callable[..., Any], *, name: str, required: bool = False) -> OutputSpec | None:
    """The output schema for ``fn``'s return annotation, or None for unstructured tools.

    An annotation msgspec cannot describe gives None (unstructured), or a TypeError when
    ``required`` (the user asked for structured output explicitly).
    """
    hints = typing.get_type_hints(fn, include_extras=True)
    annotation = hints.get("return", inspect.Signature.empty)
    if _is_unstructured(annotation):
        return None
    hook = SchemaBuilder()
    try:
        (ref,), found = msgspec.json.schema_components(
            [annotation], ref_template="#/$defs/{name}", schema_hook=hook
        )
        components = hook.merge(dict(found))
    except (TypeError, ValueError) as exc:
        if not required:
            return None
        raise TypeError(
            f"{name}: the return annotation {annotation!r} has no JSON Schema ({exc}); {ACCEPTED}"
        ) from None
    if "$ref" in ref:
        top_name = ref["$ref"].rsplit("/", 1)[1]
        top = dict(components.pop(top_name))
        top.pop("title", None)
    else:
        top = dict(ref)
    if top.get("type") == "object":
        if components:
            top["$defs"] = components
        return OutputSpec(top, wrap=False)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": top},
        "required": ["result"],
    }
    if components:
        wrapped["$defs"] = components
    return OutputSpec(wrapped, wrap=True)
