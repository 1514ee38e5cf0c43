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
from typing import TYPE_CHECKING, Any, Final

import msgspec
import msgspec.structs
import trio

from ._annotations import ACCEPTED, SchemaBuilder, dec_hook, normalize

if TYPE_CHECKING:
    from ._threads import WorkerThreads

__all__ = ["Signature", "doc_summary", "inspect_signature"]

# Docstring sections that hold argument descriptions, in the three common styles:
# Google ("Args:" and indented "name (type): text"), NumPy ("Parameters" over a dashed rule,
# then "name : type" and indented text) and Sphinx/reST (":param name: text").
_GOOGLE_ARGS: Final = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_ARG: Final = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_GOOGLE_SECTION: Final = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?|"
    r"Attributes|Keyword Args|Keyword Arguments|Other Parameters|See Also|Warnings?)\s*:\s*$"
)
_NUMPY_RULE: Final = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_ARG: Final = re.compile(r"^([\w*, ]+?)\s*(:.*)?$")
_SPHINX_FIELD: Final = re.compile(r"^\s*:(\w+)(\s+[^:]*)?:\s*(.*)$")


class Signature(msgspec.Struct, frozen=True):
    """What registration learned about a function.

    A frozen msgspec Struct rather than a frozen dataclass: msgspec builds the class in C,
    where a dataclass compiles its generated methods on import, in every ``mcp-runtime
    serve`` start-up (figures: ``benchmarks/README.md``)."""

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
    #: True when a parameter's type is validated by a hook (a pydantic model).
    hooked: bool = False

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
        return msgspec.convert(
            values, self.struct, strict=strict, dec_hook=dec_hook if self.hooked else None
        )


def doc_summary(fn: Callable[..., Any]) -> str | None:
    """The docstring without its argument/return sections (any of the three styles), or
    None."""
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    lines = doc.splitlines()
    kept: list[str] = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if (
            _GOOGLE_SECTION.match(line)
            or (line.strip() and _NUMPY_RULE.match(following))
            or _SPHINX_FIELD.match(line)
        ):
            break
        kept.append(line)
    text = "\n".join(kept).strip()
    return text or None


def arg_descriptions(doc: str) -> dict[str, str]:
    """Argument descriptions from a docstring in Google, NumPy or Sphinx style."""
    lines = doc.splitlines()
    out: dict[str, str] = {}
    # Sphinx: ":param name: text" or ":param type name: text", continued by indented lines.
    current: str | None = None
    for line in lines:
        field = _SPHINX_FIELD.match(line)
        if field:
            current = None
            words = (field.group(2) or "").split()
            if words and field.group(1) in ("param", "parameter", "arg", "argument", "key"):
                current = words[-1].lstrip("*")
                out[current] = field.group(3).strip()
        elif current and line[:1].isspace() and line.strip():
            out[current] = f"{out[current]} {line.strip()}".strip()
        elif not line.strip():
            current = None
    for index, line in enumerate(lines):
        if _GOOGLE_ARGS.match(line):
            out.update(_google_args(lines[index + 1 :], len(line) - len(line.lstrip())))
        elif (
            line.strip() in ("Parameters", "Other Parameters", "Arguments")
            and index + 1 < len(lines)
            and _NUMPY_RULE.match(lines[index + 1])
        ):
            out.update(_numpy_args(lines[index + 2 :], len(line) - len(line.lstrip())))
    return out


def _google_args(lines: list[str], indent: int) -> dict[str, str]:
    out: dict[str, str] = {}
    current: str | None = None
    item_indent: int | None = None
    for line in lines:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth <= indent:
            break  # the next section
        match = _GOOGLE_ARG.match(line)
        if match and (item_indent is None or depth <= item_indent):
            item_indent = depth
            current = match.group(1).lstrip("*")
            out[current] = match.group(3).strip()
        elif current:
            out[current] = f"{out[current]} {line.strip()}".strip()
    return out


def _numpy_args(lines: list[str], indent: int) -> dict[str, str]:
    out: dict[str, str] = {}
    current: str | None = None
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth <= indent:
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if _NUMPY_RULE.match(following):
                break  # the next section
            match = _NUMPY_ARG.match(line.strip())
            if match is None:
                break
            names = [name.strip().lstrip("*") for name in match.group(1).split(",")]
            current = names[0]
            out[current] = ""
        elif current:
            out[current] = f"{out[current]} {line.strip()}".strip()
    return {name: text for name, text in out.items() if text}


def _inline_schema(struct: type[msgspec.Struct], hook: SchemaBuilder) -> dict[str, Any]:
    (ref,), components = msgspec.json.schema_components(
        [struct], ref_template="#/$defs/{name}", schema_hook=hook
    )
    components = hook.merge(dict(components))
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
    positional-only parameters, or a type without a JSON Schema: the message names the
    parameter and lists what to use instead).
    """
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        # A type defined inside a function, under ``from __future__ import annotations``.
        raise TypeError(
            f"{name}: cannot resolve its type hints ({exc}); define the types they name at "
            "module level"
        ) from None
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
        try:
            annotation, default = normalize(annotation, param.default)
        except TypeError as exc:
            raise TypeError(f"{name}: parameter {param.name!r}: {exc}") from None
        names.append(param.name)
        if default is inspect.Parameter.empty:
            fields.append((param.name, annotation))
            required.append(param.name)
        else:
            fields.append((param.name, annotation, default))
    struct_name = "".join(part.capitalize() for part in re.split(r"\W+", name) if part) or "Args"
    struct = msgspec.defstruct(f"{struct_name}Arguments", fields, kw_only=True)
    hook = SchemaBuilder()
    try:
        # No arguments: the empty object schema, which is what msgspec's schema pass gives an
        # empty struct, without the schema pass (start-up time: it runs per registration).
        schema: dict[str, Any] = (
            _inline_schema(struct, hook) if fields else {"type": "object", "properties": {}}
        )
        # The hook only when a custom type needs it: plain signatures decode without it.
        decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(
            struct, strict=not lax, dec_hook=dec_hook if hook.defs else None
        )
    except (TypeError, ValueError) as exc:
        raise TypeError(_unsupported(name, fields, exc)) from None
    is_async = inspect.iscoroutinefunction(fn)
    descriptions = arg_descriptions(inspect.getdoc(fn) or "")
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
        hooked=bool(hook.defs),
    )


def _unsupported(
    name: str, fields: list[tuple[str, Any] | tuple[str, Any, Any]], exc: Exception
) -> str:
    """The registration error for a signature without a JSON Schema: which parameter, which
    type, and what to use instead."""
    for field in fields:
        try:
            msgspec.json.schema(field[1], schema_hook=SchemaBuilder())
        except (TypeError, ValueError) as field_exc:
            return (
                f"{name}: parameter {field[0]!r} is annotated {field[1]!r}, which has no "
                f"JSON Schema ({field_exc}); {ACCEPTED}"
            )
    return f"{name}: cannot build a schema for its parameters: {exc}; {ACCEPTED}"
