"""MCP semantics, one module per feature, written against the runtime's registry and
request context. Never imports transports.
"""

from __future__ import annotations

from runtime.core import Dispatcher, Handler, NotificationHandler, RequestContext
from runtime.features import App

from . import completion, era, lifecycle, logging, prompts, resources, subscriptions, tasks, tools
from ._typed_call import TypedCalls
from .era import McpDispatcher

__all__ = [
    "McpDispatcher",
    "TypedCalls",
    "build_dispatcher",
    "completion",
    "era",
    "lifecycle",
    "logging",
    "prompts",
    "resources",
    "subscriptions",
    "tasks",
    "tools",
]


def build_dispatcher(server: App) -> Dispatcher:
    """The method tables of every feature, for one server."""
    lifecycle_requests, lifecycle_notifications = lifecycle.methods(server)
    typed_calls = TypedCalls.of(server.registry)  # shared: a call's params are read once
    requests: dict[str, Handler] = {}
    notifications: dict[str, NotificationHandler] = dict(lifecycle_notifications)
    for table in (
        lifecycle_requests,
        logging.methods(server),
        tools.methods(server, typed_calls),
        resources.methods(server),
        prompts.methods(server),
        completion.methods(server),
        tasks.methods(server),
    ):
        requests.update(table)
    subscription_requests, subscription_notifications = subscriptions.methods(server)
    requests.update(subscription_requests)
    for method, handler in subscription_notifications.items():
        notifications[method] = _chain(notifications.get(method), handler)
    return McpDispatcher(server, requests, notifications, typed_calls)


def _chain(first: NotificationHandler | None, then: NotificationHandler) -> NotificationHandler:
    """Both handlers for one notification, in order (e.g. lifecycle, then subscriptions)."""
    if first is None:
        return then

    async def both(ctx: RequestContext) -> None:
        await first(ctx)
        await then(ctx)

    return both
