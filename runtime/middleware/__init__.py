"""Middleware: ordered async callables around requests, notifications, tool calls,
resource reads and prompt gets (``app.add_middleware(...)``, ``--middleware module:obj``).

See docs/middleware.md. A server with no middleware runs none of this.
"""

from ._authorize import Authorize, scopes_of
from ._cache import ResponseCache
from ._chain import (
    Middleware,
    MiddlewareDispatcher,
    Next,
    PromptGet,
    Request,
    RequestMiddleware,
    ResourceRead,
    ToolCall,
    as_middleware,
)
from ._labels import UNKNOWN, KnownNames, method_label
from ._metrics import Metrics
from ._observe import (
    DEFAULT_LOG_FIELDS,
    DEFAULT_REDACT,
    MethodTiming,
    RequestLogging,
    Timing,
    redact,
    redact_url,
)
from ._ratelimit import RateLimit, TokenBucket
from ._sessions import SessionCounter

__all__ = [
    "DEFAULT_LOG_FIELDS",
    "DEFAULT_REDACT",
    "UNKNOWN",
    "Authorize",
    "KnownNames",
    "MethodTiming",
    "Metrics",
    "Middleware",
    "MiddlewareDispatcher",
    "Next",
    "PromptGet",
    "RateLimit",
    "Request",
    "RequestLogging",
    "RequestMiddleware",
    "ResourceRead",
    "ResponseCache",
    "SessionCounter",
    "Timing",
    "TokenBucket",
    "ToolCall",
    "as_middleware",
    "method_label",
    "redact",
    "redact_url",
    "scopes_of",
]
