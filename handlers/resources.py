"""``resources/list``, ``resources/templates/list``, ``resources/read``
(MCP 2025-11-25 server/resources). An unknown URI is -32002 in the handshake era.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from runtime.core import Handler, RequestContext
from runtime.features import App, reply_contents
from runtime.protocol import (
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    ResourceNotFoundError,
    resource_not_found,
)

from ._common import InputFields, call_with_input, decode_params, paginated, request_meta

__all__ = ["methods"]


class _ReadParams(InputFields, kw_only=True):
    uri: str
    #: Kept raw: decoded by ``request_meta`` (a modern request's is decoded already).
    meta: Raw | UnsetType = msgspec.field(default=UNSET, name="_meta")


class _ListParams(msgspec.Struct):
    cursor: str | None = None


_read_decoder: Final = msgspec.json.Decoder(_ReadParams)
_list_decoder: Final = msgspec.json.Decoder(_ListParams)


def methods(server: App) -> dict[str, Handler]:
    registry = server.registry

    async def list_resources(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _list_decoder, b"{}")
        return paginated(server, "resources", registry.resources.values(), params.cursor)

    async def list_templates(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _list_decoder, b"{}")
        templates = registry.templates.values()
        return paginated(server, "resourceTemplates", templates, params.cursor)

    async def read_resource(ctx: RequestContext) -> dict[str, Any]:
        try:
            return await _read(ctx)
        except ResourceNotFoundError as exc:
            # -32002 in the handshake era; -32602 from 2026-07-28 on (changelog, minor 6).
            raise resource_not_found(exc.uri, exc.message, modern=ctx.modern) from None

    def _with_cache(ctx: RequestContext, result: dict[str, Any], cache: Any) -> dict[str, Any]:
        if ctx.modern and cache is not None:
            result["ttlMs"], result["cacheScope"] = cache
        return result

    async def _read(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _read_decoder, b"{}")
        uri = params.uri
        definition, args = registry.resolve_resource(uri)
        asking, value = await call_with_input(
            server,
            ctx,
            definition.fn,
            definition.signature,
            args,
            request_meta(ctx, params.meta),
            params,
            lambda: uri,
        )
        if asking:
            return value  # type: ignore[no-any-return]
        contents = await reply_contents(uri, value, definition.mime_type)
        return _with_cache(ctx, {"contents": contents}, definition.cache)

    return {
        RESOURCES_LIST: list_resources,
        RESOURCES_TEMPLATES_LIST: list_templates,
        RESOURCES_READ: read_resource,
    }
