"""OAuth 2.1 resource-server support for MCP's HTTP transports.

MCP 2025-11-25 and 2026-07-28, basic/authorization: a protected MCP server validates a bearer
token on every HTTP request, publishes RFC 9728 Protected Resource Metadata, and answers
401/403 with an RFC 6750 ``WWW-Authenticate`` challenge. stdio servers do not use this (they
take credentials from the environment).

The transport's seam is one call per request::

    result = await authenticate(config, authorization_header, tool=tool_name, query=query)
    if isinstance(result, AuthError):
        respond(result.status, result.reason, result.headers, result.body)
    else:
        ...  # result is the AccessToken; hand it to the request context

(``tool_name`` only for ``tools/call``; if it is learned after authenticating, call
``authorize(config, principal, tool=name)`` for the scope check alone.)

and it serves ``config.resource_metadata.document_json()`` at every path of
``config.resource_metadata.well_known_paths()``.

``JWTVerifier`` needs the ``auth`` extra (``pyjwt[crypto]``); it is imported lazily so that the
transports can import this package without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._authenticate import (
    BEARER_TOKEN_SYNTAX,
    AuthConfig,
    AuthError,
    authenticate,
    authorize,
    is_bearer_token,
    parse_authorization,
)
from ._metadata import WELL_KNOWN_PREFIX, ProtectedResourceMetadata, well_known_paths
from ._routes import Route, RouteRequest, RouteResponse
from ._token import AccessToken, TokenVerifier, is_scope_token, scopes_from_claims

if TYPE_CHECKING:
    from ._jwks import JWKSFetchError, RemoteJWKS
    from ._jwt import JWKSFetcher, JWTVerifier

__all__ = [
    "BEARER_TOKEN_SYNTAX",
    "WELL_KNOWN_PREFIX",
    "AccessToken",
    "AuthConfig",
    "AuthError",
    "JWKSFetchError",
    "JWKSFetcher",
    "JWTVerifier",
    "ProtectedResourceMetadata",
    "RemoteJWKS",
    "Route",
    "RouteRequest",
    "RouteResponse",
    "TokenVerifier",
    "authenticate",
    "authorize",
    "is_bearer_token",
    "is_scope_token",
    "parse_authorization",
    "scopes_from_claims",
    "well_known_paths",
]

_LAZY = frozenset({"JWKSFetcher", "JWTVerifier"})


def __getattr__(name: str) -> Any:
    # PyJWT is an optional dependency: load it only when a JWT verifier is asked for.
    if name in _LAZY:
        from . import _jwt

        return getattr(_jwt, name)
    if name in ("RemoteJWKS", "JWKSFetchError"):
        from . import _jwks

        return getattr(_jwks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
