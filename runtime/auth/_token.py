"""The authenticated principal and the verifier contract.

An MCP server is an OAuth 2.1 resource server (MCP 2025-11-25 and 2026-07-28,
basic/authorization "Roles"): it checks the bearer token on every HTTP request and never passes
it on ("Token Handling": servers MUST NOT accept or transit any other tokens). So the principal
below keeps what the token *says*, never the token itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol

__all__ = ["AccessToken", "TokenVerifier", "is_scope_token", "scopes_from_claims"]

# RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), i.e. visible ASCII
# without '"' and '\'. Checking this keeps every scope safe inside a quoted-string of a
# WWW-Authenticate header (RFC 6750 section 3).
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def is_scope_token(value: str) -> bool:
    """True when ``value`` is one RFC 6749 scope-token."""
    return _SCOPE_TOKEN.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class AccessToken:
    """A verified access token: who it is for and what it allows.

    ``claims`` holds every claim of the token (read-only). It is left out of ``repr`` and of
    equality: claims may carry other credentials (an ``act`` chain, an upstream token an
    authorization server chose to embed) and must not reach a log line through a repr.
    The raw bearer token is deliberately not kept (no token passthrough).
    """

    subject: str
    scopes: frozenset[str]
    client_id: str | None = None
    #: Seconds since the epoch (the ``exp`` claim), or None when the verifier has no expiry.
    expires_at: float | None = None
    claims: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )


class TokenVerifier(Protocol):
    """Checks one bearer token.

    Returns the principal for a valid token and None for any invalid one (bad signature,
    expired, wrong issuer or audience, unknown key, malformed): the caller answers None with
    401 ``invalid_token``. Raise only when the verifier itself cannot decide (an introspection
    endpoint is down); ``authenticate`` answers that with 503, never with 401, so that clients
    do not throw away good tokens during an outage.

    Contract: never put the token in a log line, an exception message or a repr. Cancellation
    (``trio.Cancelled``) must propagate. Any ``async def f(token: str) -> AccessToken | None``
    satisfies this protocol.
    """

    async def __call__(self, token: str, /) -> AccessToken | None: ...


def scopes_from_claims(claims: Mapping[str, Any]) -> frozenset[str] | None:
    """The scopes a token grants, or None when its scope claim is malformed.

    ``scope`` is a space-separated string (RFC 9068 section 2.2.3, RFC 8693 section 4.2);
    ``scp`` is the list form several authorization servers emit (some emit it as a string,
    accepted likewise). ``scope`` wins when both are present. No claim means no scopes.
    """
    raw = claims.get("scope")
    if raw is None:
        raw = claims.get("scp")
    if raw is None:
        return frozenset()
    if isinstance(raw, str):
        parts = [part for part in raw.split(" ") if part]
    elif isinstance(raw, list) and all(isinstance(part, str) for part in raw):
        parts = list(raw)
    else:
        return None
    if not all(is_scope_token(part) for part in parts):
        return None
    return frozenset(parts)
