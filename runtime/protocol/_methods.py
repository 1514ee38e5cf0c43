"""Method names, and which era has which (2026-07-28 changelog; schema.ts of each revision)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CACHEABLE_METHODS",
    "CANCELLED",
    "CLIENT_METHODS",
    "COMPLETION_COMPLETE",
    "ELICITATION_CREATE",
    "HANDSHAKE_ONLY",
    "INITIALIZE",
    "INITIALIZED",
    "LOGGING_SET_LEVEL",
    "LOG_MESSAGE",
    "MODERN_ONLY",
    "NAMED_METHODS",
    "PING",
    "PROGRESS",
    "PROMPTS_GET",
    "PROMPTS_LIST",
    "PROMPTS_LIST_CHANGED",
    "RESOURCES_LIST",
    "RESOURCES_LIST_CHANGED",
    "RESOURCES_READ",
    "RESOURCES_SUBSCRIBE",
    "RESOURCES_TEMPLATES_LIST",
    "RESOURCES_UNSUBSCRIBE",
    "RESOURCES_UPDATED",
    "ROOTS_LIST",
    "ROOTS_LIST_CHANGED",
    "SAMPLING_CREATE_MESSAGE",
    "SERVER_DISCOVER",
    "SUBSCRIPTIONS_ACKNOWLEDGED",
    "SUBSCRIPTIONS_LISTEN",
    "TASKS_CANCEL",
    "TASKS_CHANGED",
    "TASKS_GET",
    "TASKS_LIST",
    "TASKS_METHODS",
    "TASKS_RESULT",
    "TASKS_STATUS",
    "TASKS_UPDATE",
    "TOOLS_CALL",
    "TOOLS_LIST",
    "TOOLS_LIST_CHANGED",
]

INITIALIZE: Final = "initialize"
PING: Final = "ping"
INITIALIZED: Final = "notifications/initialized"
CANCELLED: Final = "notifications/cancelled"
SUBSCRIPTIONS_LISTEN: Final = "subscriptions/listen"
# Requests a client sends (schema.ts ClientRequest; the tasks methods of 2025-11-25
# basic/utilities/tasks and of the io.modelcontextprotocol/tasks extension, SEP-2663).
SERVER_DISCOVER: Final = "server/discover"
TOOLS_LIST: Final = "tools/list"
TOOLS_CALL: Final = "tools/call"
RESOURCES_LIST: Final = "resources/list"
RESOURCES_TEMPLATES_LIST: Final = "resources/templates/list"
RESOURCES_READ: Final = "resources/read"
RESOURCES_SUBSCRIBE: Final = "resources/subscribe"
RESOURCES_UNSUBSCRIBE: Final = "resources/unsubscribe"
PROMPTS_LIST: Final = "prompts/list"
PROMPTS_GET: Final = "prompts/get"
COMPLETION_COMPLETE: Final = "completion/complete"
LOGGING_SET_LEVEL: Final = "logging/setLevel"
TASKS_GET: Final = "tasks/get"
TASKS_RESULT: Final = "tasks/result"
TASKS_LIST: Final = "tasks/list"
TASKS_CANCEL: Final = "tasks/cancel"
TASKS_UPDATE: Final = "tasks/update"
#: Every task method of either task protocol (2025-11-25 has no tasks/update; the
#: extension has no tasks/result or tasks/list).
TASKS_METHODS: Final = frozenset({TASKS_GET, TASKS_RESULT, TASKS_LIST, TASKS_CANCEL, TASKS_UPDATE})
# Requests a server sends its client (handshake era; schema.ts ServerRequest). A 2026-07-28
# server asks the same questions inside input rounds (basic/patterns/mrtr), under these names.
SAMPLING_CREATE_MESSAGE: Final = "sampling/createMessage"
ELICITATION_CREATE: Final = "elicitation/create"
ROOTS_LIST: Final = "roots/list"
# Notifications (schema.ts ClientNotification and ServerNotification; the tasks extension's
# notifications/tasks carries the whole DetailedTask).
PROGRESS: Final = "notifications/progress"
LOG_MESSAGE: Final = "notifications/message"
RESOURCES_UPDATED: Final = "notifications/resources/updated"
TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"
RESOURCES_LIST_CHANGED: Final = "notifications/resources/list_changed"
PROMPTS_LIST_CHANGED: Final = "notifications/prompts/list_changed"
ROOTS_LIST_CHANGED: Final = "notifications/roots/list_changed"
SUBSCRIPTIONS_ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
TASKS_STATUS: Final = "notifications/tasks/status"
TASKS_CHANGED: Final = "notifications/tasks"

#: Methods the modern revision removed (2026-07-28 changelog, items 2, 4, 5): at that
#: revision they are -32601 like any unknown method.
HANDSHAKE_ONLY: Final = frozenset(
    {INITIALIZE, PING, "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
#: Methods that exist only in the modern revision (-32601 in a handshake-era session).
MODERN_ONLY: Final = frozenset({"server/discover", SUBSCRIPTIONS_LISTEN})
#: Results that implement CacheableResult (2026-07-28 schema.ts): they carry ``ttlMs`` and
#: ``cacheScope`` (server/utilities/caching).
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
#: Methods whose ``params.name`` / ``params.uri`` / ``params.taskId`` a 2026-07-28 HTTP
#: client mirrors into the ``Mcp-Name`` header (SEP-2243 "Standard Headers"; the tasks
#: extension, SEP-2663 "Streamable HTTP: Routing Headers", adds its task methods, named by
#: task id).
NAMED_METHODS: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
#: Every method a client sends a server, in every revision this runtime speaks: the
#: requests and notifications of ClientRequest and ClientNotification in schema.ts of
#: 2024-11-05 through 2026-07-28, and those of the tasks extension (2025-11-25 tasks;
#: io.modelcontextprotocol/tasks, SEP-2663). What a client may send under any other name is
#: its own choice of string: metrics and traces label it as one "unknown" value
#: (``runtime.middleware.method_label``), so a client cannot grow their label sets.
CLIENT_METHODS: Final = frozenset(
    {
        INITIALIZE,
        PING,
        "server/discover",
        SUBSCRIPTIONS_LISTEN,
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        "logging/setLevel",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "tasks/update",
        INITIALIZED,
        CANCELLED,
        "notifications/progress",
        "notifications/roots/list_changed",
        "notifications/tasks/status",
    }
)
