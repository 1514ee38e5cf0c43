"""The core: the connection supervisor, the request engine, the dispatcher, limits.

The error codes and ``JSONRPCError`` live in ``runtime.protocol``; they are re-exported here
for code written against earlier releases.
"""

from ..protocol import (
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    RESOURCE_NOT_FOUND,
    SERVER_OVERLOADED,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONRPCError,
    RequestId,
    ResourceNotFoundError,
    ToolError,
    params_error,
)
from ._channel import MessageChannel, Outgoing
from ._connection import Connection
from ._context import Peer, RequestContext
from ._dispatch import BatchPolicy, Dispatcher, Handler, NotificationHandler
from ._limits import Limits
from ._session import Session
from ._single import dispatch_single

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
    "BatchPolicy",
    "Connection",
    "Dispatcher",
    "Handler",
    "JSONRPCError",
    "Limits",
    "MessageChannel",
    "NotificationHandler",
    "Outgoing",
    "Peer",
    "RequestContext",
    "RequestId",
    "ResourceNotFoundError",
    "Session",
    "ToolError",
    "dispatch_single",
    "params_error",
]
