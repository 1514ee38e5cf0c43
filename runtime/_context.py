"""``Context``: what a tool, resource or prompt function may ask the runtime for."""

from __future__ import annotations

from typing import Any, Final

from ._registry import App
from .core import RequestContext, RequestId, Session

__all__ = ["Context"]

META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"

# RFC 5424 severities as MCP names them (2025-11-25 server/utilities/logging).
LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class Context:
    """Injected into a handler function whose parameter is annotated ``Context``.

    Methods that send notifications wait only while the connection's write queue is full;
    they raise nothing when the connection is closing (the output is dropped and logged).
    """

    __slots__ = ("_meta", "_request", "server")

    def __init__(
        self, request: RequestContext, server: App, meta: dict[str, Any] | None = None
    ) -> None:
        self._request = request
        self._meta = meta if meta is not None else (request.meta or {})
        self.server = server

    @property
    def request_id(self) -> RequestId | None:
        return self._request.id

    @property
    def method(self) -> str:
        return self._request.method

    @property
    def session(self) -> Session:
        return self._request.session

    @property
    def protocol_version(self) -> str | None:
        """The revision this request is served at (per request in the modern era)."""
        return self._request.protocol_version

    @property
    def modern(self) -> bool:
        """True for a stateless 2026-07-28 request, False in the handshake era."""
        return self._request.modern

    @property
    def client_info(self) -> dict[str, Any] | None:
        if self._request.modern:
            info = self._meta.get(META_CLIENT_INFO)
            return info if isinstance(info, dict) else None
        return self._request.session.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._request.client_capabilities

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``params._meta`` (empty when absent)."""
        return self._meta

    @property
    def progress_token(self) -> str | int | None:
        token = self._meta.get("progressToken")
        return token if isinstance(token, str | int) else None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the client asked for progress (else a no-op).

        MCP basic/utilities/progress: progress must increase with each notification; that is
        the caller's duty.
        """
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._request.peer.notify("notifications/progress", params, related=self._request.id)

    async def log(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` when the client's level lets it through."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        # Handshake era: the session's logging/setLevel. Modern: only when this request
        # carries io.modelcontextprotocol/logLevel (2026-07-28 server/utilities/logging).
        if self._request.modern:
            requested = self._meta.get(META_LOG_LEVEL)
            threshold = requested if requested in LOG_LEVELS else None
        else:
            threshold = self._request.session.log_level
        if threshold is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._request.peer.notify("notifications/message", params, related=self._request.id)

    async def debug(self, data: Any) -> None:
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        await self.log("error", data)
