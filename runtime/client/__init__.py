"""The client half: talk to any MCP server from a trio program (the CLI's ``list``,
``call``, ``read`` and ``inspect`` use it: ``runtime.cli``).

    from runtime.client import open_client

    async with open_client("http://127.0.0.1:8000/mcp") as client:
        tools = await client.all_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

See ``docs/client.md`` for targets, eras, timeouts and the reconnection policy, and
"Log in to a remote server" for :class:`OAuth` (``open_client(url, auth=OAuth(...))``).
"""

from ._auth import Auth, AuthorizationFailed
from ._backoff import Backoff, BackoffRun, parse_retry_after
from ._client import Client, Era, Notification, RequestHandler
from ._conversation import RAISED
from ._errors import BadMessage, ClientError, PeerError, RequestTimeout, TransportLost
from ._oauth import OAuth
from ._oauth_identity import EnterpriseIdentity
from ._oauth_loopback import Login, LoopbackLogin, Redirect
from ._oauth_store import (
    ClientRegistration,
    FileTokenStore,
    MemoryTokenStore,
    StoredLogin,
    Tokens,
    TokenStore,
    default_token_dir,
)
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
    "Auth",
    "AuthorizationFailed",
    "Backoff",
    "BackoffRun",
    "BadMessage",
    "CallToolResult",
    "Client",
    "ClientError",
    "ClientRegistration",
    "CompleteResult",
    "Completion",
    "Content",
    "EmbeddedResource",
    "EnterpriseIdentity",
    "Era",
    "FileTokenStore",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListToolsResult",
    "Login",
    "LoopbackLogin",
    "MemoryTokenStore",
    "Notification",
    "OAuth",
    "PeerError",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Redirect",
    "RequestHandler",
    "RequestTimeout",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "ServerDescription",
    "StoredLogin",
    "Task",
    "TextContent",
    "TokenStore",
    "Tokens",
    "Tool",
    "TransportLost",
    "connector_for",
    "default_token_dir",
    "is_server_file",
    "open_client",
    "parse_retry_after",
    "server_command",
]
