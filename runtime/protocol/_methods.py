"""Method names, and which era has which (2026-07-28 changelog; schema.ts of each revision)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CACHEABLE_METHODS",
    "CANCELLED",
    "CLIENT_METHODS",
    "HANDSHAKE_ONLY",
    "INITIALIZE",
    "INITIALIZED",
    "MODERN_ONLY",
    "NAMED_METHODS",
    "PING",
    "SUBSCRIPTIONS_LISTEN",
]

INITIALIZE: Final = "initialize"
PING: Final = "ping"
INITIALIZED: Final = "notifications/initialized"
CANCELLED: Final = "notifications/cancelled"
SUBSCRIPTIONS_LISTEN: Final = "subscriptions/listen"

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
