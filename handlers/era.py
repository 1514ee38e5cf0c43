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

from runtime._registry import App
from runtime.core import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    Dispatcher,
    Handler,
    JSONRPCError,
    NotificationHandler,
    RequestContext,
)

from .lifecycle import HANDSHAKE_VERSIONS

__all__ = [
    "CACHEABLE_METHODS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "McpDispatcher",
]

MODERN_VERSIONS: Final = ("2026-07-28",)
#: Everything this server speaks, newest first (server/discover ``supportedVersions``).
SUPPORTED_VERSIONS: Final = MODERN_VERSIONS + HANDSHAKE_VERSIONS

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
_MARKER: Final = META_PROTOCOL_VERSION.encode()

#: Methods the modern revision removed (2026-07-28 changelog, items 2, 4, 5).
HANDSHAKE_ONLY: Final = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
#: Handshake-era requests served before initialize (2025-11-25 basic/lifecycle).
BEFORE_INITIALIZE: Final = frozenset({"initialize", "ping"})
#: Methods that exist only in the modern revision.
MODERN_ONLY: Final = frozenset({"server/discover", "subscriptions/listen"})
#: Results that implement CacheableResult (2026-07-28 schema.ts).
CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


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
    ) -> None:
        super().__init__(requests, notifications)
        self.app = app

    def route(self, ctx: RequestContext) -> Handler | None:
        meta = ctx.meta  # set when the transport decoded params._meta already
        if meta is None:
            raw = ctx.params
            # Fast path: the marker key cannot be absent from a modern request's bytes.
            if raw is None or bytes(raw).find(_MARKER) < 0:  # (``in`` costs more)
                return self._handshake_route(ctx)
            meta = _probe.decode(raw).meta
        if not meta or META_PROTOCOL_VERSION not in meta:
            # The marker appeared elsewhere (inside arguments, say): a handshake-era request.
            return self._handshake_route(ctx)
        version = meta[META_PROTOCOL_VERSION]
        if not isinstance(version, str):
            raise JSONRPCError(
                INVALID_PARAMS,
                f"Invalid params: _meta[{META_PROTOCOL_VERSION!r}] must be a string",
                {"path": f"params._meta.{META_PROTOCOL_VERSION}"},
            )
        if version not in MODERN_VERSIONS:
            raise JSONRPCError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": list(SUPPORTED_VERSIONS), "requested": version},
            )
        capabilities = meta.get(META_CLIENT_CAPABILITIES)
        if not isinstance(capabilities, dict):
            raise JSONRPCError(
                INVALID_PARAMS,
                f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] is required "
                "(an object) on every 2026-07-28 request",
                {"path": f"params._meta.{META_CLIENT_CAPABILITIES}"},
            )
        ctx.modern = True
        ctx.protocol_version = version
        ctx.meta = meta
        ctx.client_capabilities = capabilities
        if ctx.method in HANDSHAKE_ONLY:
            return None
        return self.requests.get(ctx.method)  # its result then passes through decorate

    def _handshake_route(self, ctx: RequestContext) -> Handler | None:
        if ctx.method in MODERN_ONLY:
            return None
        handler = self.requests.get(ctx.method)
        if (
            handler is not None
            and ctx.session.protocol_version is None
            and ctx.method not in BEFORE_INITIALIZE
        ):
            # 2025-11-25 basic/lifecycle: before the server answered initialize, a client
            # sends nothing but pings. A handshake-era request outside a session is
            # refused (the connection lives on), as the official SDK refuses it.
            raise JSONRPCError(
                INVALID_REQUEST,
                f"Invalid Request: {ctx.method} before initialize (send initialize first, "
                "or the 2026-07-28 per-request _meta)",
            )
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
