"""The client half: talk to any MCP server from a trio program (the CLI's ``list``,
``call``, ``read`` and ``inspect`` use it: ``runtime.cli``).

    from runtime.client import open_client

    async with open_client("http://127.0.0.1:8000/mcp") as client:
        tools = await client.all_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

See ``docs/client.md`` for targets, eras, timeouts and the reconnection policy.
"""

from ._backoff import Backoff, BackoffRun, parse_retry_after
from ._client import Client, Era, Notification, RequestHandler
from ._conversation import RAISED
from ._errors import BadMessage, ClientError, PeerError, RequestTimeout, TransportLost
from ._open import connector_for, is_server_file, open_client, server_command
from ._types import (
    AudioContent,
    CallToolResult,
    CompleteResult,
    Completion,
    Content,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    ServerDescription,
    Task,
    TextContent,
    Tool,
)

__all__ = [
    "RAISED",
    "AudioContent",
    "Backoff",
    "BackoffRun",
    "BadMessage",
    "CallToolResult",
    "Client",
    "ClientError",
    "CompleteResult",
    "Completion",
    "Content",
    "EmbeddedResource",
    "Era",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListToolsResult",
    "Notification",
    "PeerError",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "RequestHandler",
    "RequestTimeout",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "ServerDescription",
    "Task",
    "TextContent",
    "Tool",
    "TransportLost",
    "connector_for",
    "is_server_file",
    "open_client",
    "parse_retry_after",
    "server_command",
]
