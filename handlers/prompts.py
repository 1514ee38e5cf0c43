"""``prompts/list`` and ``prompts/get`` (MCP 2025-11-25 server/prompts).

An unknown prompt name or a missing required argument is -32602 (spec: "Error Handling").
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from runtime.core import Handler, RequestContext
from runtime.features import App, PromptMessage, TextContent
from runtime.protocol import PROMPTS_GET, PROMPTS_LIST, JSONRPCError, params_error

from ._common import InputFields, call_with_input, decode_params, paginated, request_meta

__all__ = ["methods", "to_messages"]


class _GetParams(InputFields, kw_only=True):
    name: str
    arguments: dict[str, str] | None = None
    #: Kept raw: decoded by ``request_meta`` (a modern request's is decoded already).
    meta: Raw | UnsetType = msgspec.field(default=UNSET, name="_meta")


class _ListParams(msgspec.Struct):
    cursor: str | None = None


_get_decoder: Final = msgspec.json.Decoder(_GetParams)
_list_decoder: Final = msgspec.json.Decoder(_ListParams)


def to_messages(value: Any) -> list[Any]:
    """A prompt function's return value as a list of prompt messages."""
    items = value if isinstance(value, list | tuple) else [value]
    out: list[Any] = []
    for item in items:
        if isinstance(item, str):
            out.append(PromptMessage(role="user", content=TextContent(text=item)))
        elif isinstance(item, PromptMessage | dict):
            out.append(item)
        else:
            raise TypeError(f"a prompt returned {type(item).__name__}, not a message")
    return out


def methods(server: App) -> dict[str, Handler]:
    registry = server.registry

    async def list_prompts(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _list_decoder, b"{}")
        return paginated(server, "prompts", registry.prompts.values(), params.cursor)

    async def get_prompt(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _get_decoder, b"{}")
        prompt = registry.prompts.get(params.name)
        if prompt is None:
            raise JSONRPCError.invalid_params(
                f"Unknown prompt: {params.name}", {"name": params.name}
            )
        sig = prompt.signature
        try:
            args = sig.convert(params.arguments or {}, strict=False)
        except msgspec.ValidationError as exc:
            raise params_error(exc, root="params.arguments") from None
        salient = [prompt.name, params.arguments or {}]
        asking, value = await call_with_input(
            server,
            ctx,
            prompt.fn,
            sig,
            args,
            request_meta(ctx, params.meta),
            params,
            lambda: salient,
        )
        if asking:
            return value  # type: ignore[no-any-return]
        result: dict[str, Any] = {"messages": to_messages(value)}
        if prompt.description:
            result["description"] = prompt.description
        return result

    return {PROMPTS_LIST: list_prompts, PROMPTS_GET: get_prompt}
