"""Proxies and bridges: serve a remote MCP server through ours (see ``_forward``)."""

from ._forward import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MAX_POLL_INTERVAL,
    DEFAULT_MAX_UPSTREAM_PROCESSES,
    DEFAULT_MAX_UPSTREAM_SESSIONS,
    DEFAULT_PARALLEL_IDLE_TIMEOUT,
    DEFAULT_ROUND_TIMEOUT,
    FORWARDED_METHODS,
    Forward,
    UpstreamSession,
    proxy_server,
    proxy_target,
)

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_PARALLEL",
    "DEFAULT_MAX_POLL_INTERVAL",
    "DEFAULT_MAX_UPSTREAM_PROCESSES",
    "DEFAULT_MAX_UPSTREAM_SESSIONS",
    "DEFAULT_PARALLEL_IDLE_TIMEOUT",
    "DEFAULT_ROUND_TIMEOUT",
    "FORWARDED_METHODS",
    "Forward",
    "UpstreamSession",
    "proxy_server",
    "proxy_target",
]
