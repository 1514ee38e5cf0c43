"""Turn a Python function's signature into a msgspec decoder and a JSON Schema, once.

At registration a function like ``def add(a: int, b: int = 2, *, ctx: Context)`` becomes a
msgspec Struct ``{a: int, b: int = 2}``: its JSON Schema is the tool's ``inputSchema`` and
its precompiled decoder validates ``arguments`` straight from the raw request bytes. The
parameter annotated with :class:`~runtime.Context` is injected, never part of the schema.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec
import msgspec.structs
import trio

if TYPE_CHECKING:
    from ._threads import WorkerThreads

__all__ = ["Signature", "doc_summary", "inspect_signature"]

_ARGS_HEADER: Final = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_ARG_LINE: Final = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Signature:
    """What registration learned about a function."""

    #: Struct type holding the arguments (empty struct for no arguments).
    struct: type[msgspec.Struct]
    #: Argument names in order (the struct's fields).
    names: tuple[str, ...]
    #: Name of the parameter that receives the Context, if any.
    context_param: str | None
    #: JSON Schema (draft 2020-12) of the arguments object, self-contained.
    schema: dict[str, Any]
    #: Decoder for the JSON arguments object (strict types, or lax for string-only sources).
    json_decoder: msgspec.json.Decoder[Any]
    #: Per-argument descriptions parsed from the docstring's Args section.
    descriptions: dict[str, str]
    #: Names of arguments without a default.
    required: tuple[str, ...]
    is_async: bool
    #: An ``async def`` that takes no Context: a handler may await it directly, with its
    #: arguments as keywords (no Context, no input round, no thread).
    direct: bool

    def to_kwargs(self, args: msgspec.Struct) -> dict[str, Any]:
        # The struct's fields are exactly the argument names (asdict is implemented in C).
        return msgspec.structs.asdict(args)

    async def call(
        self,
        fn: Callable[..., Any],
        kwargs: dict[str, Any],
        threads: WorkerThreads | None = None,
        owner: str = "",
    ) -> Any:
        """Call ``fn``: async functions in the calling task (no thread hop), sync functions in
        a worker thread (from ``threads``, the server's bounded budget, for connection
        ``owner``: may raise -32010). A cancelled caller abandons a sync function's thread:
        Python cannot interrupt it, but its result is discarded and the caller ends at once."""
        if self.is_async:
            return await fn(**kwargs)
        if threads is not None:
            return await threads.run_sync(owner, functools.partial(fn, **kwargs))
        return await trio.to_thread.run_sync(
            functools.partial(fn, **kwargs), abandon_on_cancel=True
        )

    def convert(self, values: dict[str, Any], *, strict: bool = True) -> msgspec.Struct:
        """Validate already-decoded values (e.g. URI template variables, which are strings)."""
        return msgspec.convert(values, self.struct, strict=strict)


def doc_summary(fn: Callable[..., Any]) -> str | None:
    """The docstring without its Args/Returns sections, or None."""
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    lines: list[str] = []
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line) or re.match(r"^\s*(Returns|Raises|Yields)\s*:\s*$", line):
            break
        lines.append(line)
    text = "\n".join(lines).strip()
    return text or None


def _arg_descriptions(fn: Callable[..., Any]) -> dict[str, str]:
    doc = inspect.getdoc(fn) or ""
    out: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if not in_args:
            continue
        if line and not line[0].isspace():
            break  # the next section
        match = _ARG_LINE.match(line)
        if match and (len(line) - len(line.lstrip())) <= 4:
            current = match.group(1).lstrip("*")
            out[current] = match.group(3).strip()
        elif current and line.strip():
            out[current] = f"{out[current]} {line.strip()}".strip()
    return out


def _inline_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    (ref,), components = msgspec.json.schema_components([struct], ref_template="#/$defs/{name}")
    name = ref["$ref"].rsplit("/", 1)[1]
    top = dict(components.pop(name))
    top.pop("title", None)
    if components:
        top["$defs"] = components
    top.setdefault("properties", {})
    if not top.get("required"):
        top.pop("required", None)
    return top


def inspect_signature(
    fn: Callable[..., Any], *, name: str, context_type: type, lax: bool = False
) -> Signature:
    """Build the argument struct, schema and decoder for ``fn``.

    Raises TypeError for signatures that cannot be served (``*args``/``**kwargs``,
    positional-only parameters, or types msgspec cannot describe).
    """
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    names: list[str] = []
    required: list[str] = []
    context_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, Any)
        if isinstance(annotation, type) and issubclass(annotation, context_type):
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"{name}: parameter {param.name!r} must be a named parameter")
        names.append(param.name)
        if param.default is inspect.Parameter.empty:
            fields.append((param.name, annotation))
            required.append(param.name)
        else:
            fields.append((param.name, annotation, param.default))
    struct_name = "".join(part.capitalize() for part in re.split(r"\W+", name) if part) or "Args"
    struct = msgspec.defstruct(f"{struct_name}Arguments", fields, kw_only=True)
    try:
        schema = _inline_schema(struct)
        decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(struct, strict=not lax)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: cannot build a schema for its parameters: {exc}") from None
    is_async = inspect.iscoroutinefunction(fn)
    descriptions = _arg_descriptions(fn)
    for arg, text in descriptions.items():
        prop = schema["properties"].get(arg)
        if isinstance(prop, dict) and "description" not in prop:
            prop["description"] = text
    return Signature(
        struct=struct,
        names=tuple(names),
        context_param=context_param,
        schema=schema,
        json_decoder=decoder,
        descriptions=descriptions,
        required=tuple(required),
        is_async=is_async,
        direct=is_async and context_param is None,
    )
