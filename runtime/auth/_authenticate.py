"""The seam between the HTTP/WebSocket transports and authorization: ``authenticate``.

One call per HTTP request (MCP 2025-11-25 / 2026-07-28 basic/authorization "Token
Requirements": authorization MUST be included in every request, even within one session).
It parses the ``Authorization`` header strictly, runs the configured verifier, checks scopes,
and returns either the principal or a ready-made ``AuthError`` (status, ``WWW-Authenticate``
value, JSON body) that the transport sends as is. Nothing here does I/O except what the
verifier does.

Challenges (RFC 6750 section 3, RFC 9728 section 5.1, MCP "Error Handling"):

- no credentials, or another scheme: 401, no ``error`` parameter (RFC 6750 section 3.1);
- malformed Bearer credentials, or a token in the query string: 400 ``invalid_request``;
- invalid, expired or foreign token: 401 ``invalid_token``;
- valid token without the needed scopes: 403 ``insufficient_scope``;
- the verifier itself failed (raised): 503, no challenge; the client keeps its token.

Every challenge carries ``resource_metadata`` and, when the operation needs scopes, ``scope``
with *all* of them (MCP 2026-07-28 "Scope Challenge Handling": one challenge, not one scope at
a time). Parameter order is fixed: error, error_description, resource_metadata, scope.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from types import MappingProxyType
from typing import Final
from urllib.parse import parse_qsl

import msgspec

from ._metadata import ProtectedResourceMetadata
from ._routes import Route
from ._token import AccessToken, TokenVerifier, is_scope_token

__all__ = [
    "BEARER_TOKEN_SYNTAX",
    "AuthConfig",
    "AuthError",
    "authenticate",
    "authorize",
    "is_bearer_token",
    "parse_authorization",
]

log = logging.getLogger("mcp_runtime.auth")

# RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# RFC 9110 section 5.6.2: token = 1*tchar (the auth-scheme).
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

_DESCRIPTIONS: Final = {
    "invalid_request": "malformed Authorization header or token in the query string",
    "invalid_token": "the access token is invalid or expired",
    "insufficient_scope": "the access token lacks a required scope",
}


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """What ``authenticate`` checks.

    ``required_scopes`` are needed by every request; ``tool_scopes[name]`` are needed on top
    by ``tools/call`` of that tool. ``scope_implies`` maps a broad scope to the narrower ones
    it grants (MCP 2026-07-28: servers MUST account for scope hierarchies), applied
    transitively. ``max_token_length`` bounds what reaches the verifier; 16 KiB is far above
    real access tokens yet below common proxy header limits.

    ``routes`` (request path -> ``Route``) are served beside the MCP endpoint without a
    token: the endpoints of an authorization server inside the runtime
    (``runtime.authserver.AuthorizationServer.auth_config``).
    """

    verifier: TokenVerifier
    resource_metadata: ProtectedResourceMetadata
    required_scopes: frozenset[str] = frozenset()
    tool_scopes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    scope_implies: Mapping[str, frozenset[str]] = field(default_factory=dict)
    max_token_length: int = 16 * 1024
    routes: Mapping[str, Route] = field(default_factory=dict)

    def __post_init__(self) -> None:
        required = _scope_set(self.required_scopes, "required_scopes")
        tools = {name: _scope_set(s, "tool_scopes") for name, s in self.tool_scopes.items()}
        _scope_set(self.scope_implies.keys(), "scope_implies")
        implies = {
            broad: _scope_set(narrow, "scope_implies")
            for broad, narrow in self.scope_implies.items()
        }
        object.__setattr__(self, "required_scopes", required)
        object.__setattr__(self, "tool_scopes", MappingProxyType(tools))
        object.__setattr__(self, "scope_implies", MappingProxyType(implies))
        if not all(path.startswith("/") for path in self.routes):
            raise ValueError("each route is a request path starting with /")
        object.__setattr__(self, "routes", MappingProxyType(dict(self.routes)))
        if self.max_token_length < 1:
            raise ValueError("max_token_length must be positive")

    def scopes_for(self, tool: str | None = None) -> frozenset[str]:
        """Every scope an operation needs: the base set, plus the tool's when one is named."""
        if tool is None:
            return self.required_scopes
        return self.required_scopes | self.tool_scopes.get(tool, frozenset())

    def granted(self, scopes: Iterable[str]) -> frozenset[str]:
        """``scopes`` closed under ``scope_implies``."""
        closed = set(scopes)
        pending = list(closed)
        while pending:
            for narrower in self.scope_implies.get(pending.pop(), frozenset()):
                if narrower not in closed:
                    closed.add(narrower)
                    pending.append(narrower)
        return frozenset(closed)


@dataclass(frozen=True, slots=True)
class AuthError:
    """A refused request, ready to send: ``status`` (with its ``reason`` phrase), ``headers``
    (``WWW-Authenticate``, content type, ``no-store``) and ``body`` (short JSON:
    ``{"error", "error_description"}``).

    ``error`` is the RFC 6750 code (None when no credentials were sent). ``www_authenticate``
    is None only for 503. Nothing in it is derived from the token.
    """

    status: int
    error: str | None
    www_authenticate: str | None
    body: bytes

    @property
    def reason(self) -> str:
        return HTTPStatus(self.status).phrase

    @property
    def headers(self) -> list[tuple[str, str]]:
        """Lower-case names; str values are ASCII (no CR, LF or NUL), ready for any HTTP layer."""
        headers = [("content-type", "application/json"), ("cache-control", "no-store")]
        if self.www_authenticate is not None:
            headers.append(("www-authenticate", self.www_authenticate))
        return headers


async def authenticate(
    config: AuthConfig,
    authorization_header: str | bytes | None,
    *,
    tool: str | None = None,
    query: str | bytes | None = None,
) -> AccessToken | AuthError:
    """Authenticate one HTTP request: the principal, or the error response to send.

    ``authorization_header`` is the raw field value, None when absent (several
    ``Authorization`` fields: pass them joined with ", "; that is then refused as malformed).
    ``tool`` is the tool name of a ``tools/call`` (adds ``tool_scopes[tool]``). ``query`` is
    the request target's query string, passed only so that an ``access_token`` parameter is
    refused (OAuth 2.1 section 5.1.1: tokens MUST NOT be sent in the query); it is never read
    for a token. Awaits the verifier once; cancellation propagates; never raises otherwise.
    """
    needed = config.scopes_for(tool)
    if query is not None and _has_query_token(query):
        return _refuse(config, 400, "invalid_request", needed)
    if authorization_header is None:
        return _refuse(config, 401, None, needed)
    kind, token = parse_authorization(authorization_header)
    if kind == "other":
        return _refuse(config, 401, None, needed)
    if kind == "malformed":
        return _refuse(config, 400, "invalid_request", needed)
    if len(token) > config.max_token_length:
        return _refuse(config, 401, "invalid_token", needed)
    try:
        principal = await config.verifier(token)
    except Exception as exc:
        # Only the type: a verifier's message might quote the token.
        log.warning("auth.verifier_failed exc_type=%s", type(exc).__name__)
        return AuthError(503, None, None, _body("temporarily_unavailable", "try again later"))
    if principal is None:
        return _refuse(config, 401, "invalid_token", needed)
    return authorize(config, principal, tool=tool) or principal


def authorize(
    config: AuthConfig, principal: AccessToken, *, tool: str | None = None
) -> AuthError | None:
    """The scope check alone, for a principal already verified on this request (e.g. once the
    transport has decoded the body and learned the tool name): None when allowed, else the
    403 ``insufficient_scope`` to send. Synchronous, no I/O.
    """
    needed = config.scopes_for(tool)
    if needed <= config.granted(principal.scopes):
        return None
    return _refuse(config, 403, "insufficient_scope", needed)


def parse_authorization(value: str | bytes) -> tuple[str, str]:
    """("token", token), ("other", "") for a non-Bearer scheme, or ("malformed", "").

    The one reading of an ``Authorization`` value (the OAuth resource server and the
    ``/metrics`` token both use it). Strict, per RFC 9110 section 11.4 and RFC 6750
    section 2.1: the scheme compares case-insensitively (RFC 9110 section 11.1: ``bearer``
    and ``BEARER`` are ``Bearer``), then exactly one space, then one b64token and nothing
    else.
    """
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return "malformed", ""
    scheme, space, rest = value.partition(" ")
    if _TOKEN.fullmatch(scheme) is None:
        return "malformed", ""
    if scheme.lower() != "bearer":
        return "other", ""
    if not space or _B64TOKEN.fullmatch(rest) is None:
        return "malformed", ""
    return "token", rest


#: What a token a server expects must look like to ever be presented (RFC 6750 section 2.1).
BEARER_TOKEN_SYNTAX: Final = (
    "a bearer token is letters, digits and -._~+/ (then optional trailing =), RFC 6750 section 2.1"
)


def is_bearer_token(token: str) -> bool:
    """Whether ``Authorization: Bearer <token>`` reads back as ``token``: a secret a server
    expects (``--metrics-token``) that is not is refused when configured, not never met."""
    return parse_authorization("Bearer " + token) == ("token", token)


def _has_query_token(query: str | bytes) -> bool:
    if isinstance(query, bytes):
        query = query.decode("latin-1")
    query = query.removeprefix("?")
    return any(name == "access_token" for name, _ in parse_qsl(query, keep_blank_values=True))


def _refuse(
    config: AuthConfig, status: int, error: str | None, needed: frozenset[str]
) -> AuthError:
    params: list[tuple[str, str]] = []
    if error is not None:
        params += [("error", error), ("error_description", _DESCRIPTIONS[error])]
    params.append(("resource_metadata", config.resource_metadata.metadata_url))
    if needed:
        params.append(("scope", " ".join(sorted(needed))))
    # Every value is header-safe by construction (fixed descriptions, validated URL and
    # scope tokens), so no quoted-pair escaping is needed.
    challenge = "Bearer " + ", ".join(f'{name}="{value}"' for name, value in params)
    log.info("auth.refused status=%d error=%s", status, error or "none")
    if error is None:
        body = _body("unauthorized", "a Bearer access token is required")
    else:
        body = _body(error, _DESCRIPTIONS[error])
    return AuthError(status, error, challenge, body)


def _body(error: str, description: str) -> bytes:
    return msgspec.json.encode({"error": error, "error_description": description})


def _scope_set(scopes: Iterable[str], what: str) -> frozenset[str]:
    if isinstance(scopes, str | bytes):
        raise ValueError(f"{what} must be a set of scope strings, not one string")
    result = frozenset(scopes)
    if not all(isinstance(s, str) and is_scope_token(s) for s in result):
        raise ValueError(f"{what} holds a value that is not an RFC 6749 scope token")
    if "offline_access" in result:
        raise ValueError("offline_access is not a resource scope (MCP 2026-07-28)")
    return result
