"""Protocol revisions and the ``_meta`` keys that carry them.

MCP has two eras (DESIGN.md "Protocol eras"): the handshake era, whose ``initialize``
negotiates one revision per connection or session, and the modern stateless revision, where
every request names its revision in ``params._meta`` (2026-07-28 basic/versioning).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BATCH_REVISION",
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_MCP_PREFIX",
    "META_PROGRESS_TOKEN",
    "META_PROTOCOL_VERSION",
    "META_RELATED_TASK",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "TASKS_EXTENSION",
]

#: Handshake-era revisions this server speaks, newest first. basic/lifecycle (2025-11-25):
#: the server answers ``initialize`` with the client's version when it supports it, else
#: with its latest.
HANDSHAKE_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_HANDSHAKE_VERSION: Final = HANDSHAKE_VERSIONS[0]
#: Per-request (stateless) revisions.
MODERN_VERSIONS: Final = ("2026-07-28",)
#: Everything this server speaks, newest first (``server/discover`` ``supportedVersions``,
#: and the ``supported`` list of -32022).
SUPPORTED_VERSIONS: Final = MODERN_VERSIONS + HANDSHAKE_VERSIONS
#: The one revision that allows JSON-RPC batches over HTTP: 2025-03-26 added them and
#: 2025-06-18 removed them again (its changelog: "Remove support for JSON-RPC batching").
#: Streams accept batches in every revision (DESIGN.md "Batches": a batch costs the peer
#: nothing it did not ask for).
BATCH_REVISION: Final = "2025-03-26"

# 2026-07-28 basic/index, "Request Metadata": reserved keys of ``params._meta``.
META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
#: ... and of a result's ``_meta`` (every modern result names the server).
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
#: The prefix of every ``_meta`` key MCP defines (basic/index, "_meta", since 2025-06-18:
#: prefixes naming ``modelcontextprotocol`` or ``mcp`` are reserved for MCP's own use).
META_MCP_PREFIX: Final = "io.modelcontextprotocol/"
#: 2026-07-28 basic/utilities/subscriptions: each notification of a ``subscriptions/listen``
#: stream names its subscription (the listen request's id) under this ``_meta`` key.
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
#: basic/utilities/progress (every revision): the token a request's progress notifications
#: carry, under ``params._meta``.
META_PROGRESS_TOKEN: Final = "progressToken"
#: The tasks extension's identifier (SEP-2663), a key of ``capabilities.extensions``.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
#: 2025-11-25 basic/utilities/tasks: the ``_meta`` key tying a message to its task.
META_RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
