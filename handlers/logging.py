"""``logging/setLevel`` (MCP 2025-11-25 server/utilities/logging)."""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from runtime.core import Handler, RequestContext
from runtime.features import App
from runtime.protocol import LOGGING_SET_LEVEL

from ._common import decode_params

__all__ = ["methods"]

Level = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class _SetLevelParams(msgspec.Struct):
    level: Level


_decoder: Final = msgspec.json.Decoder(_SetLevelParams)


def methods(server: App) -> dict[str, Handler]:
    async def set_level(ctx: RequestContext) -> dict[str, Any]:
        params = decode_params(ctx, _decoder, b"{}")
        ctx.session.log_level = params.level
        return {}

    return {LOGGING_SET_LEVEL: set_level}
