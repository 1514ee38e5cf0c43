"""MCP's log levels, least severe first: the RFC 5424 severities (section 6.2.1) as MCP names
them (2025-11-25 server/utilities/logging; 2026-07-28 carries one per request in
``_meta["io.modelcontextprotocol/logLevel"]``). A client's level lets through its own and
every level after it here."""

from __future__ import annotations

from typing import Final

__all__ = ["LOG_LEVELS"]

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
