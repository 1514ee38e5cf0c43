"""Per-request era selection: the modern stateless revision beside the handshake era.

MCP 2026-07-28 basic/versioning, "Backward Compatibility": a dual-era server serves a request
carrying modern per-request ``_meta`` statelessly at that revision, and an ``initialize``
opens a handshake-era session (2024-11-05..2025-11-25). Both share one endpoint or process.

Modern requests must carry ``io.modelcontextprotocol/protocolVersion`` and
``.../clientCapabilities`` (else -32602); an unknown version is -32022 with the supported
list; methods that exist only in the handshake era are -32601. Every modern result carries
``resultType`` and ``_meta["io.modelcontextprotocol/serverInfo"]``, and cacheable results
carry ``ttlMs``/``cacheScope`` (server/utilities/caching).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from runtime.core import Dispatcher, Handler, NotificationHandler, RequestContext
from runtime.features import App
from runtime.protocol import (
    CACHEABLE_METHODS,
    HANDSHAKE_ONLY,
    META_SERVER_INFO,
    MODERN_MARKER,
    MODERN_ONLY,
    ONE_PASS_OVER,
    TOOLS_CALL,
    select_era,
)

from ._typed_call import TypedCalls

__all__ = ["McpDispatcher"]


class _MetaProbe(msgspec.Struct):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


_probe: Final = msgspec.json.Decoder(_MetaProbe)


class McpDispatcher(Dispatcher):
    """Chooses the era of each request from its shape, then routes within that era."""

    def __init__(
        self,
        app: App,
        requests: dict[str, Handler],
        notifications: dict[str, NotificationHandler],
        typed_calls: TypedCalls | None = None,
    ) -> None:
        super().__init__(requests, notifications)
        self.app = app
        #: The ``tools/call`` handler's one-pass reader: a call's ``_meta`` is read in the
        #: same pass as its arguments, and the handler takes the reading back.
        self.typed_calls = typed_calls

    def route(self, ctx: RequestContext) -> Handler | None:
        if ctx.modern:  # the transport read the era already (``dispatch_single``)
            return None if ctx.method in HANDSHAKE_ONLY else self.requests.get(ctx.method)
        meta = ctx.meta
        if meta is None:
            raw = ctx.params
            if raw is None:
                return self._handshake_route(ctx)
            if (
                len(raw) > ONE_PASS_OVER
                and ctx.method == TOOLS_CALL
                and self.typed_calls is not None
                and (call := self.typed_calls.for_request(ctx)) is not None
            ):
                # A big call: its ``_meta`` is in the handler's own typed pass, no copy or
                # search of the arguments, no second pass over them.
                meta = call.meta
            # Fast path: the marker key cannot be absent from a modern request's bytes.
            elif MODERN_MARKER not in bytes(raw):
                return self._handshake_route(ctx)
            else:
                meta = _probe.decode(raw).meta
        modern = select_era(meta)  # raises for a modern request we cannot serve
        if modern is None:
            # The marker appeared elsewhere (inside arguments, say): a handshake-era request.
            return self._handshake_route(ctx)
        ctx.modern = True
        ctx.protocol_version = modern.version
        ctx.meta = meta
        ctx.client_capabilities = modern.capabilities
        if ctx.method in HANDSHAKE_ONLY:
            return None
        return self.requests.get(ctx.method)  # its result then passes through decorate

    def _handshake_route(self, ctx: RequestContext) -> Handler | None:
        if ctx.method in MODERN_ONLY:
            return None
        handler = self.requests.get(ctx.method)
        if handler is not None:
            refused = ctx.session.lifecycle.before_initialize(ctx.method)
            if refused is not None:
                raise refused
        return handler

    def decorate(self, ctx: RequestContext, result: Any) -> Any:
        if isinstance(result, dict):
            result.setdefault("resultType", "complete")
            meta = result.get("_meta")
            if meta is None:
                result["_meta"] = {META_SERVER_INFO: self.app.server_info()}
            else:
                meta.setdefault(META_SERVER_INFO, self.app.server_info())
            if ctx.method in CACHEABLE_METHODS and "ttlMs" not in result:
                ttl_ms, scope = self.app.cache_hint(ctx.method)
                result["ttlMs"] = ttl_ms
                result["cacheScope"] = scope
        return result
