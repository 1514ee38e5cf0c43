"""The parameter and return types a tool may use, beyond what msgspec knows natively.

msgspec describes and validates builtins, ``msgspec.Struct``, dataclasses, ``TypedDict``,
``NamedTuple``, attrs classes, ``Enum``, ``Literal`` and ``Annotated[..., msgspec.Meta(...)]``
itself. This module adds what users bring from the pydantic world, without importing pydantic:

- a pydantic v2 ``BaseModel`` as a parameter or return type: its own JSON Schema
  (``model_json_schema``), its own validation (``model_validate``) and its own serialization
  (``model_dump(mode="json")``), through msgspec's extension hooks;
- ``Annotated[int, Field(ge=0, description=...)]``, ``x: int = Field(3, description=...)`` and
  ``annotated_types`` constraints (``Ge``, ``MaxLen``...): translated into ``msgspec.Meta``.

Pydantic is looked up in ``sys.modules`` only: if the user's annotation is a pydantic model,
pydantic is imported already, and if it is not imported, no annotation can be one. So
``import runtime`` never pays for pydantic and pydantic is never a dependency.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable
from typing import Annotated, Any, Final

import msgspec

__all__ = [
    "ACCEPTED",
    "SchemaBuilder",
    "dec_hook",
    "enc_hook",
    "is_pydantic_model",
    "normalize",
]

#: What the error for an unsupported annotation suggests (and what the docs list).
ACCEPTED: Final = (
    "use builtin types (str, int, float, bool, None, list[...], dict[str, ...], tuple[...]), "
    "a msgspec.Struct, a dataclass, a TypedDict, a NamedTuple, an Enum or Literal, "
    "datetime/date/UUID/Decimal, a pydantic v2 BaseModel or an attrs class "
    "(constraints via Annotated[..., msgspec.Meta(...)] or pydantic Field), "
    "or Any to take the JSON value unvalidated"
)

# annotated_types / pydantic constraint attributes and their msgspec.Meta keyword.
_CONSTRAINTS: Final = (
    "gt",
    "ge",
    "lt",
    "le",
    "multiple_of",
    "min_length",
    "max_length",
    "pattern",
)


def _pydantic_base() -> type | None:
    module = sys.modules.get("pydantic")
    base = getattr(module, "BaseModel", None) if module is not None else None
    return base if isinstance(base, type) else None


def is_pydantic_model(annotation: Any) -> bool:
    base = _pydantic_base()
    return base is not None and isinstance(annotation, type) and issubclass(annotation, base)


def _pydantic_error_text(exc: Exception) -> str:
    """A pydantic ValidationError in one line: ``loc: msg; loc: msg`` (no URLs, no input
    values, which may be personal data)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for error in errors(include_url=False, include_input=False):
        loc = ".".join(str(item) for item in error.get("loc", ()))
        parts.append(f"{loc}: {error.get('msg')}" if loc else str(error.get("msg")))
    return "; ".join(parts) or str(exc)


def dec_hook(annotation: Any, value: Any) -> Any:
    """msgspec's decode hook: builds the custom types msgspec does not know."""
    if is_pydantic_model(annotation):
        try:
            return annotation.model_validate(value)
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            # msgspec turns a ValueError into a ValidationError naming the path ("at `$.x`").
            raise ValueError(_pydantic_error_text(exc)) from None
    raise NotImplementedError(f"{annotation!r} is not a supported type")


def enc_hook(value: Any) -> Any:
    """msgspec's encode hook: pydantic models serialize as their own JSON form."""
    dump = getattr(value, "model_dump", None)
    if dump is not None and is_pydantic_model(type(value)):
        return dump(mode="json", by_alias=True)
    raise NotImplementedError(f"cannot encode a {type(value).__name__} as JSON")


class SchemaBuilder:
    """A ``schema_hook`` for msgspec that describes pydantic models by their own JSON Schema.

    Each model becomes ``{"$ref": "#/$defs/<Model>"}``; its schema and its nested
    definitions are collected in ``defs``, to merge into the document's ``$defs`` (a JSON
    pointer resolves from the document root, so nested ``$defs`` would not be found).
    """

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def __call__(self, annotation: Any) -> dict[str, Any]:
        if not is_pydantic_model(annotation):
            raise NotImplementedError(f"{annotation!r} is not a supported type")
        schema = dict(annotation.model_json_schema(ref_template="#/$defs/{model}"))
        nested = schema.pop("$defs", {})
        name = annotation.__name__
        for key, value in [*nested.items(), (name, schema)]:
            if key in self.defs and self.defs[key] != value:
                raise TypeError(f"two different types are both named {key!r} in one schema")
            self.defs[key] = value
        return {"$ref": f"#/$defs/{name}"}

    def merge(self, components: dict[str, Any]) -> dict[str, Any]:
        for key, value in self.defs.items():
            if key in components and components[key] != value:
                raise TypeError(f"two different types are both named {key!r} in one schema")
            components[key] = value
        return components


def _field_info(obj: Any) -> bool:
    return type(obj).__name__ == "FieldInfo" and type(obj).__module__.startswith("pydantic")


def _meta_from(obj: Any) -> dict[str, Any] | None:
    """The msgspec.Meta keywords a pydantic FieldInfo or an annotated_types constraint
    carries; None when ``obj`` is neither (other Annotated metadata is left alone)."""
    module = type(obj).__module__
    if _field_info(obj):
        keywords: dict[str, Any] = {}
        for key in ("title", "description", "examples"):
            if getattr(obj, key, None) is not None:
                keywords[key] = getattr(obj, key)
        for item in getattr(obj, "metadata", ()):
            more = _meta_from(item)
            if more is None:
                raise TypeError(
                    f"the Field constraint {item!r} has no JSON Schema equivalent; "
                    "validate it inside the tool, or take a pydantic model parameter"
                )
            keywords.update(more)
        return keywords
    if module == "annotated_types" or module.startswith("pydantic"):
        found = {key: getattr(obj, key) for key in _CONSTRAINTS if hasattr(obj, key)}
        found = {key: value for key, value in found.items() if value is not None}
        if not found:
            raise TypeError(
                f"the constraint {obj!r} has no JSON Schema equivalent; "
                "validate it inside the tool, or take a pydantic model parameter"
            )
        return found
    return None


def normalize(annotation: Any, default: Any) -> tuple[Any, Any]:
    """``(annotation, default)`` with pydantic ``Field``/``annotated_types`` metadata turned
    into ``msgspec.Meta``; a ``Field(...)`` used as the default gives its own default.

    ``default`` is ``inspect.Parameter.empty`` for a required parameter, and stays so.
    """
    extra: list[Any] = []
    if _field_info(default):
        extra.append(default)
        default = _field_default(default, inspect.Parameter.empty)
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
    else:
        base, metadata = annotation, []
    if not extra and not any(_meta_from(m) is not None for m in metadata):
        return annotation, default
    kept: list[Any] = []
    keywords: dict[str, Any] = {}
    for item in [*metadata, *extra]:
        found = _meta_from(item)
        if found is None:
            kept.append(item)
        else:
            keywords.update(found)
            if _field_info(item):
                default = _field_default(item, default)
    if keywords:
        kept.append(msgspec.Meta(**keywords))
    if not kept:
        return base, default
    return Annotated[(base, *kept)], default


def _field_default(info: Any, fallback: Any) -> Any:
    """A Field's default: its value, ``msgspec.field(default_factory=...)`` (a fresh value per
    call, never one shared mutable default), or ``fallback`` when it has none (required,
    unless the parameter has a plain default too)."""
    factory: Callable[[], Any] | None = getattr(info, "default_factory", None)
    if factory is not None:
        return msgspec.field(default_factory=factory)
    value = getattr(info, "default", None)
    if type(value).__name__ == "PydanticUndefinedType":
        return fallback
    return value
