"""JSON-RPC 2.0 and MCP error codes, and the exception that carries one to the wire.

Codes: JSON-RPC 2.0 section 5.1; MCP 2025-11-25 "Error Handling" (-32002 resource not found);
MCP 2026-07-28 basic/errors (-32020 header mismatch, -32021 missing client capability,
-32022 unsupported protocol version). -32001 (request timeout) matches the official SDKs.
-32010 (server overloaded) is this runtime's own code from the implementation-defined
server-error range -32000..-32099 (JSON-RPC 2.0 section 5.1).
"""

from __future__ import annotations

from typing import Any, Final

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
REQUEST_TIMEOUT: Final = -32001
RESOURCE_NOT_FOUND: Final = -32002
SERVER_OVERLOADED: Final = -32010
#: The connection ended before the request finished (the official SDKs' CONNECTION_CLOSED).
CONNECTION_CLOSED: Final = -32000
HEADER_MISMATCH: Final = -32020
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

__all__ = [
    "CONNECTION_CLOSED",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "SERVER_OVERLOADED",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "JSONRPCError",
    "ResourceNotFoundError",
    "ToolError",
]


class JSONRPCError(Exception):
    """An error that becomes a JSON-RPC error object on the wire, exactly as given.

    Raise it from a handler to answer with a specific code; any other exception a handler
    raises becomes -32603 with a generic message (see ``runtime.core._dispatch``).
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"JSONRPCError({self.code}, {self.message!r})"

    @classmethod
    def invalid_params(cls, message: str, data: Any = None) -> JSONRPCError:
        return cls(INVALID_PARAMS, message, data)

    @classmethod
    def method_not_found(cls, method: str) -> JSONRPCError:
        return cls(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})


class ToolError(Exception):
    """Raise from a tool to fail with exactly this message as the ``isError: true`` text.

    Any other exception from a tool also becomes an ``isError`` result, with the message
    prefixed by the tool's name (MCP 2025-11-25 server/tools, "Tool Execution Errors").
    """


class ResourceNotFoundError(JSONRPCError):
    """Raise from a resource function when the URI names nothing: -32002 in the handshake
    era (MCP 2025-11-25 server/resources, "Error Handling")."""

    def __init__(self, uri: str, message: str = "Resource not found") -> None:
        super().__init__(RESOURCE_NOT_FOUND, message, {"uri": uri})
