"""MCP semantics, one module per feature, written against the runtime's registry and
request context. Never imports transports.
"""

from __future__ import annotations

from runtime._registry import App
from runtime.core import Dispatcher, Handler, NotificationHandler

from . import completion, era, lifecycle, logging, prompts, resources, tools
from .era import McpDispatcher

__all__ = [
    "McpDispatcher",
    "build_dispatcher",
    "completion",
    "era",
    "lifecycle",
    "logging",
    "prompts",
    "resources",
    "tools",
]


def build_dispatcher(server: App) -> Dispatcher:
    """The method tables of every feature, for one server."""
    lifecycle_requests, lifecycle_notifications = lifecycle.methods(server)
    requests: dict[str, Handler] = {}
    notifications: dict[str, NotificationHandler] = dict(lifecycle_notifications)
    for table in (
        lifecycle_requests,
        logging.methods(server),
        tools.methods(server),
        resources.methods(server),
        prompts.methods(server),
        completion.methods(server),
    ):
        requests.update(table)
    return McpDispatcher(server, requests, notifications)
