"""``completion/complete`` for prompt arguments and resource-template variables
(MCP 2025-11-25 server/utilities/completion; unchanged in 2026-07-28).

Suggestions come from the server's completer (``@app.completion``) when it has one, else
from the argument's annotation: ``Literal[...]`` values and ``Enum`` members are completed
by prefix. At most 100 values are returned (spec), with ``total`` and ``hasMore``.
"""

from __future__ import annotations

import enum
import typing
from typing import Any, Final, Literal

import msgspec

from runtime.core import Handler, RequestContext
from runtime.features import App
from runtime.protocol import COMPLETION_COMPLETE, JSONRPCError

from ._common import decode_params

__all__ = ["MAX_VALUES", "methods", "suggestions_from_annotation"]

MAX_VALUES: Final = 100


class _Ref(msgspec.Struct):
    type: Literal["ref/prompt", "ref/resource"]
    name: str | None = None
    uri: str | None = None


class _Argument(msgspec.Struct):
    name: str
    value: str


class _Context(msgspec.Struct):
    arguments: dict[str, str] = {}


class _CompleteParams(msgspec.Struct):
    ref: _Ref
    argument: _Argument
    context: _Context | None = None


_decoder: Final = msgspec.json.Decoder(_CompleteParams)


def suggestions_from_annotation(annotation: Any) -> list[str]:
    """The finite string values an annotation allows (Literal, Enum, Optional of those)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return suggestions_from_annotation(typing.get_args(annotation)[0])
    if origin is Literal:
        return [str(v) for v in typing.get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    args = typing.get_args(annotation)
    if args and origin is not None:  # unions: collect from each member
        return [s for arg in args for s in suggestions_from_annotation(arg)]
    return []


def methods(server: App) -> dict[str, Handler]:
    registry = server.registry

    async def complete(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _decoder, b"{}")
        ref = params.ref
        if ref.type == "ref/prompt":
            prompt = registry.prompts.get(ref.name or "")
            if prompt is None:
                raise JSONRPCError.invalid_params(f"Unknown prompt: {ref.name}")
            fn = prompt.fn
            names = prompt.signature.names
        else:
            template = registry.templates.get(ref.uri or "")
            if template is None:
                raise JSONRPCError.invalid_params(f"Unknown resource template: {ref.uri}")
            fn = template.fn
            names = template.template.variable_names
        argument = params.argument
        if argument.name not in names:
            raise JSONRPCError.invalid_params(
                f"Unknown argument {argument.name!r}", {"argument": argument.name}
            )
        context = params.context.arguments if params.context else {}
        completer = server.completer
        values: list[str]
        suggested = None
        if completer is not None:
            # None from a completer: no completer for this ref (a mounted server's prompt
            # or template whose server has none): completed from the annotation below.
            suggested = await completer(
                ref.type, ref.name or ref.uri or "", argument.name, argument.value, context
            )
        if suggested is not None:
            values = list(suggested)
        else:
            hints = typing.get_type_hints(fn, include_extras=True)
            allowed = suggestions_from_annotation(hints.get(argument.name))
            values = [v for v in allowed if v.startswith(argument.value)]
        completion: dict[str, Any] = {"values": values[:MAX_VALUES], "total": len(values)}
        completion["hasMore"] = len(values) > MAX_VALUES
        return {"completion": completion}

    return {COMPLETION_COMPLETE: complete}
