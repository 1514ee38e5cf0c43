"""Method names, and which era has which (2026-07-28 changelog; schema.ts of each revision)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CACHEABLE_METHODS",
    "CANCELLED",
    "CLIENT_METHODS",
    "COMPLETION_COMPLETE",
    "ELICITATION_COMPLETE",
    "ELICITATION_CREATE",
    "HANDSHAKE_ONLY",
    "INITIALIZE",
    "INITIALIZED",
    "LIST_CHANGED",
    "LOGGING_SET_LEVEL",
    "LOG_MESSAGE",
    "MCP_METHODS",
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
    "SERVER_METHODS",
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

# Requests a client sends (ClientRequest in schema.ts of each revision; the tasks methods of
# 2025-11-25 and of the 2026-07-28 tasks extension, io.modelcontextprotocol/tasks).
INITIALIZE: Final = "initialize"
PING: Final = "ping"
SERVER_DISCOVER: Final = "server/discover"
SUBSCRIPTIONS_LISTEN: Final = "subscriptions/listen"
TOOLS_LIST: Final = "tools/list"
TOOLS_CALL: Final = "tools/call"
PROMPTS_LIST: Final = "prompts/list"
PROMPTS_GET: Final = "prompts/get"
RESOURCES_LIST: Final = "resources/list"
RESOURCES_TEMPLATES_LIST: Final = "resources/templates/list"
RESOURCES_READ: Final = "resources/read"
RESOURCES_SUBSCRIBE: Final = "resources/subscribe"
RESOURCES_UNSUBSCRIBE: Final = "resources/unsubscribe"
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
# Requests a handshake-era server sends its client (ServerRequest; ``ping`` goes both ways).
SAMPLING_CREATE_MESSAGE: Final = "sampling/createMessage"
ELICITATION_CREATE: Final = "elicitation/create"
ROOTS_LIST: Final = "roots/list"
# Notifications (ClientNotification and ServerNotification).
INITIALIZED: Final = "notifications/initialized"
CANCELLED: Final = "notifications/cancelled"
PROGRESS: Final = "notifications/progress"
LOG_MESSAGE: Final = "notifications/message"
TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED: Final = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED: Final = "notifications/resources/list_changed"
RESOURCES_UPDATED: Final = "notifications/resources/updated"
ROOTS_LIST_CHANGED: Final = "notifications/roots/list_changed"
ELICITATION_COMPLETE: Final = "notifications/elicitation/complete"
#: 2025-11-25 tasks: a task's status changed.
TASKS_STATUS: Final = "notifications/tasks/status"
#: 2026-07-28 tasks extension: a task's state, on a ``subscriptions/listen`` stream.
TASKS_CHANGED: Final = "notifications/tasks"
#: 2026-07-28 ``subscriptions/listen``: the server took the subscription.
SUBSCRIPTIONS_ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"

#: Methods the modern revision removed (2026-07-28 changelog, items 2, 4, 5): at that
#: revision they are -32601 like any unknown method.
HANDSHAKE_ONLY: Final = frozenset(
    {INITIALIZE, PING, LOGGING_SET_LEVEL, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE}
)
#: Methods that exist only in the modern revision (-32601 in a handshake-era session).
MODERN_ONLY: Final = frozenset({SERVER_DISCOVER, SUBSCRIPTIONS_LISTEN})
#: Results that implement CacheableResult (2026-07-28 schema.ts): they carry ``ttlMs`` and
#: ``cacheScope`` (server/utilities/caching).
CACHEABLE_METHODS: Final = frozenset(
    {
        SERVER_DISCOVER,
        TOOLS_LIST,
        PROMPTS_LIST,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
    }
)
#: Methods whose ``params.name`` / ``params.uri`` / ``params.taskId`` a 2026-07-28 HTTP
#: client mirrors into the ``Mcp-Name`` header (SEP-2243 "Standard Headers"; the tasks
#: extension, SEP-2663 "Streamable HTTP: Routing Headers", adds its task methods, named by
#: task id).
NAMED_METHODS: Final = {
    TOOLS_CALL: "name",
    PROMPTS_GET: "name",
    RESOURCES_READ: "uri",
    TASKS_GET: "taskId",
    TASKS_UPDATE: "taskId",
    TASKS_CANCEL: "taskId",
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
        SERVER_DISCOVER,
        SUBSCRIPTIONS_LISTEN,
        TOOLS_LIST,
        TOOLS_CALL,
        PROMPTS_LIST,
        PROMPTS_GET,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        COMPLETION_COMPLETE,
        LOGGING_SET_LEVEL,
        TASKS_GET,
        TASKS_RESULT,
        TASKS_LIST,
        TASKS_CANCEL,
        TASKS_UPDATE,
        INITIALIZED,
        CANCELLED,
        PROGRESS,
        ROOTS_LIST_CHANGED,
        TASKS_STATUS,
    }
)
#: Every method a server sends a client, in every revision this runtime speaks (ServerRequest
#: and ServerNotification in schema.ts, and the tasks notifications).
SERVER_METHODS: Final = frozenset(
    {
        PING,
        SAMPLING_CREATE_MESSAGE,
        ELICITATION_CREATE,
        ROOTS_LIST,
        CANCELLED,
        PROGRESS,
        LOG_MESSAGE,
        TOOLS_LIST_CHANGED,
        PROMPTS_LIST_CHANGED,
        RESOURCES_LIST_CHANGED,
        RESOURCES_UPDATED,
        ELICITATION_COMPLETE,
        TASKS_STATUS,
        TASKS_CHANGED,
        SUBSCRIPTIONS_ACKNOWLEDGED,
    }
)
#: Every MCP method name, either way: no other module writes one as a literal
#: (``tests/test_layers.py``).
MCP_METHODS: Final = CLIENT_METHODS | SERVER_METHODS
#: The ``list_changed`` notification of each list whose changes a server may announce
#: (the ``listChanged`` of its ``tools``, ``prompts`` and ``resources`` capabilities).
LIST_CHANGED: Final = {
    "tools": TOOLS_LIST_CHANGED,
    "prompts": PROMPTS_LIST_CHANGED,
    "resources": RESOURCES_LIST_CHANGED,
}
