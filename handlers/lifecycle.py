"""Handshake-era lifecycle: ``initialize``, ``notifications/initialized``, ``ping``.

MCP 2025-11-25 basic/lifecycle: the client proposes a version; the server answers with the
same version when it supports it, otherwise with the latest version it supports.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from runtime.core import Handler, NotificationHandler, RequestContext
from runtime.features import App
from runtime.protocol import (
    INITIALIZE,
    INITIALIZED,
    PING,
    SERVER_DISCOVER,
    SUPPORTED_VERSIONS,
    TASKS_EXTENSION,
)

from ._common import decode_params

__all__ = ["capabilities", "methods"]


class _InitializeParams(msgspec.Struct, rename="camel"):
    protocol_version: str
    capabilities: dict[str, Any] = {}
    client_info: dict[str, Any] | None = None


_initialize_decoder: Final = msgspec.json.Decoder(_InitializeParams)


def capabilities(server: App, *, modern: bool = False) -> dict[str, Any]:
    """Exactly what is implemented: a feature appears once something is registered for it.

    Tasks differ per era: the 2025-11-25 ``tasks`` capability, or the 2026-07-28 extension
    ``io.modelcontextprotocol/tasks`` under ``extensions``.
    """
    reg = server.registry
    caps: dict[str, Any] = {"logging": {}}
    # listChanged/subscribe: handlers.subscriptions (list changes come from the registry).
    if reg.tools:
        caps["tools"] = {"listChanged": True}
    if reg.resources or reg.templates:
        caps["resources"] = {"subscribe": True, "listChanged": True}
    if reg.prompts:
        caps["prompts"] = {"listChanged": True}
    if reg.prompts or reg.templates:
        caps["completions"] = {}
    if any(tool.task_support for tool in reg.tools.values()):
        if modern:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        else:
            caps["tasks"] = {"requests": {"tools": {"call": {}}}, "list": {}, "cancel": {}}
    return caps


def methods(server: App) -> tuple[dict[str, Handler], dict[str, NotificationHandler]]:
    async def initialize(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _initialize_decoder, b"{}")
        session = ctx.session
        version = session.lifecycle.initialize(params.protocol_version)  # -32600 if repeated
        session.client_capabilities = params.capabilities
        session.client_info = params.client_info
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": capabilities(server),
            "serverInfo": server.server_info(),
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return result

    async def initialized(ctx: RequestContext) -> None:
        ctx.session.lifecycle.initialized()

    async def ping(ctx: RequestContext) -> dict[str, Any]:
        return {}

    async def discover(ctx: RequestContext) -> dict[str, Any]:
        # 2026-07-28 server/discover; resultType, serverInfo and cache hints are added by
        # the modern dispatch (handlers.era).
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": capabilities(server, modern=True),
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return result

    return (
        {INITIALIZE: initialize, PING: ping, SERVER_DISCOVER: discover},
        {INITIALIZED: initialized},
    )
