"""What the authorization server keeps in its ``GrantStore``, one msgspec Struct per kind.

Secrets are never keys as they are: a client secret, a code and a refresh token are stored
under their SHA-256 (a store dump, a Redis ``MONITOR``, names no usable credential), and the
upstream provider's tokens are not kept at all (MCP basic/authorization "Access Token
Privilege Restriction": they never reach MCP clients; we keep only who logged in).
"""

from __future__ import annotations

import hashlib
from typing import TypeVar

import msgspec

__all__ = [
    "Client",
    "Code",
    "Pending",
    "Refresh",
    "decode",
    "encode",
    "hashed",
]


class Client(msgspec.Struct, omit_defaults=True):
    """A registered client (RFC 7591 section 2 fields we honour)."""

    client_id: str
    redirect_uris: list[str]
    client_name: str | None = None
    #: "none" (a public client: PKCE alone), "client_secret_post" or "client_secret_basic".
    token_endpoint_auth_method: str = "none"
    #: SHA-256 hex of the client secret (confidential clients only).
    secret_hash: str | None = None
    scope: str | None = None
    issued_at: int = 0


class Pending(msgspec.Struct, omit_defaults=True):
    """An authorization request between our authorize endpoint and the upstream callback
    (consent, then the person's login upstream)."""

    client_id: str
    redirect_uri: str
    state: str | None
    code_challenge: str
    scopes: list[str]
    resource: str
    #: SHA-256 hex of the browser-binding cookie set with the consent page: the consent and
    #: the callback must come from the browser that saw it (CSRF, login CSRF).
    browser_hash: str
    #: Our own PKCE verifier and OIDC nonce toward the upstream provider.
    upstream_verifier: str = ""
    nonce: str = ""
    consented: bool = False


class Code(msgspec.Struct, omit_defaults=True):
    """An authorization code we issued: good once, for this client, redirect URI, PKCE
    challenge and resource."""

    client_id: str
    redirect_uri: str
    code_challenge: str
    scopes: list[str]
    resource: str
    subject: str
    #: The grant family every token from this code belongs to (reuse revokes it).
    family: str


class Refresh(msgspec.Struct, omit_defaults=True):
    """A refresh token's grant: rotated on each use; ``family`` ties the chain together."""

    client_id: str
    scopes: list[str]
    resource: str
    subject: str
    family: str


def encode(record: msgspec.Struct) -> bytes:
    return msgspec.json.encode(record)


T = TypeVar("T")


def decode(data: bytes, kind: type[T]) -> T | None:
    """The record, or None when the stored bytes are not one (a store shared with an older
    or foreign writer): treated as absent, never as a crash."""
    try:
        return msgspec.json.decode(data, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def hashed(secret: str) -> str:
    """The store key part for a secret: SHA-256, hex."""
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()
