"""Client registration rules (RFC 7591) and redirect-URI matching. Sans-IO.

Redirect URIs (OAuth 2.1 section 2.3.1 and 4.1.3; RFC 8252 sections 7.3 and 8.3):

- registered: absolute ``https`` URLs, or ``http`` on a loopback IP literal or ``localhost``
  (a native client's local listener); never a fragment (RFC 6749 section 3.1.2), never user
  information;
- matched exactly (simple string comparison), except that a loopback ``http`` URI matches on
  any port: a native client picks a free port at each start (RFC 8252 section 7.3 says the
  authorization server MUST allow that). Scheme, host, path and query still match exactly, so
  a prefix, an extra path segment, a fragment or another port on a non-loopback host is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import SplitResult, urlsplit

from ..auth import is_scope_token

__all__ = [
    "AUTH_METHODS",
    "RegistrationError",
    "RegistrationLimits",
    "redirect_matches",
    "valid_redirect_uri",
    "validate_registration",
]

#: Token endpoint authentication methods we accept (RFC 7591 section 2): a public client with
#: PKCE alone, or a client secret in the form or in Basic.
AUTH_METHODS: Final = ("none", "client_secret_post", "client_secret_basic")
_LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})
_GRANT_TYPES: Final = frozenset({"authorization_code", "refresh_token"})
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")


class RegistrationError(Exception):
    """A registration refused: ``error`` is RFC 7591 section 3.2.2's code."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True, slots=True)
class RegistrationLimits:
    """Bounds on what one registration may hold (each refused with
    ``invalid_client_metadata`` or ``invalid_redirect_uri`` naming the limit)."""

    #: Redirect URIs per client; real clients register one or two.
    max_redirect_uris: int = 10
    #: Characters per redirect URI (the common browser URL ceiling is about 2,000).
    max_redirect_uri_length: int = 2000
    #: Characters of ``client_name`` (shown on the consent page).
    max_client_name_length: int = 200


def _parts(uri: str) -> SplitResult | None:
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None
    return parts


def _is_loopback_http(parts: SplitResult) -> bool:
    return parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK_HOSTS


def valid_redirect_uri(uri: str) -> str | None:
    """Why ``uri`` cannot be registered, or None when it can."""
    if _CONTROL.search(uri) or " " in uri:
        return "a redirect URI holds a space or a control character"
    parts = _parts(uri)
    if parts is None or not parts.scheme or not parts.hostname:
        return "a redirect URI must be an absolute URL with a host"
    if "#" in uri:
        return "a redirect URI must not hold a fragment (RFC 6749 section 3.1.2)"
    if parts.username is not None or parts.password is not None:
        return "a redirect URI must not hold user information"
    if parts.scheme != "https" and not _is_loopback_http(parts):
        return "a redirect URI must use https, or http on a loopback address (RFC 8252)"
    return None


def redirect_matches(registered: list[str], given: str) -> bool:
    """Whether ``given`` is one of ``registered`` (exact, but any port for loopback http)."""
    if given in registered:
        return True
    parts = _parts(given)
    if parts is None or not _is_loopback_http(parts) or "#" in given:
        return False
    for uri in registered:
        known = _parts(uri)
        if (
            known is not None
            and _is_loopback_http(known)
            and known.hostname == parts.hostname
            and known.path == parts.path
            and known.query == parts.query
            and known.username is None
            and parts.username is None
        ):
            return True
    return False


def validate_registration(
    document: Any, limits: RegistrationLimits, supported_scopes: frozenset[str]
) -> dict[str, Any]:
    """The accepted client metadata from a registration request's JSON, normalised (RFC 7591
    section 2 names), or raise RegistrationError."""
    if not isinstance(document, Mapping):
        raise RegistrationError("invalid_client_metadata", "the body must be a JSON object")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise RegistrationError("invalid_redirect_uri", "redirect_uris must list at least one URI")
    if len(uris) > limits.max_redirect_uris:
        raise RegistrationError(
            "invalid_redirect_uri",
            f"more than max_redirect_uris={limits.max_redirect_uris} redirect URIs",
        )
    for uri in uris:
        if len(uri) > limits.max_redirect_uri_length:
            raise RegistrationError(
                "invalid_redirect_uri",
                f"a redirect URI is longer than max_redirect_uri_length="
                f"{limits.max_redirect_uri_length}",
            )
        reason = valid_redirect_uri(uri)
        if reason is not None:
            raise RegistrationError("invalid_redirect_uri", reason)
    method = document.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in AUTH_METHODS:
        raise RegistrationError(
            "invalid_client_metadata",
            "token_endpoint_auth_method must be one of " + ", ".join(AUTH_METHODS),
        )
    grants = document.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= _GRANT_TYPES:
        raise RegistrationError(
            "invalid_client_metadata", "grant_types may hold authorization_code, refresh_token"
        )
    responses = document.get("response_types", ["code"])
    if responses != ["code"]:
        raise RegistrationError("invalid_client_metadata", 'response_types must be ["code"]')
    name = document.get("client_name")
    if name is not None:
        if not isinstance(name, str) or _CONTROL.search(name):
            raise RegistrationError("invalid_client_metadata", "client_name must be plain text")
        if len(name) > limits.max_client_name_length:
            raise RegistrationError(
                "invalid_client_metadata",
                f"client_name is longer than max_client_name_length="
                f"{limits.max_client_name_length}",
            )
    scope = document.get("scope")
    if scope is not None:
        if not isinstance(scope, str):
            raise RegistrationError("invalid_client_metadata", "scope must be a string")
        for token in scope.split():
            if not is_scope_token(token) or (
                token not in supported_scopes and token != "offline_access"
            ):
                raise RegistrationError("invalid_client_metadata", f"unknown scope {token!r}")
    return {
        "redirect_uris": list(uris),
        "token_endpoint_auth_method": method,
        "grant_types": list(grants),
        "response_types": ["code"],
        "client_name": name,
        "scope": scope,
    }
