"""The authorization server's RFC 8414 metadata and where its endpoints live. Sans-IO.

MCP basic/authorization ("Authorization Server Metadata Discovery"): clients fetch
``/.well-known/oauth-authorization-server`` with the issuer's path inserted after it, and
require ``code_challenge_methods_supported`` to hold S256 (else they must refuse to go on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ._clients import AUTH_METHODS

__all__ = ["Endpoints", "metadata_document"]


@dataclass(frozen=True, slots=True)
class Endpoints:
    """The issuer and the request paths of every endpoint under it."""

    issuer: str

    @property
    def base(self) -> str:
        """The issuer's path ("" for an issuer at the host's root)."""
        return urlsplit(self.issuer).path.rstrip("/")

    @property
    def origin(self) -> str:
        parts = urlsplit(self.issuer)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def metadata_path(self) -> str:
        # RFC 8414 section 3.1: the well-known segment goes between host and path.
        return "/.well-known/oauth-authorization-server" + self.base

    def path(self, name: str) -> str:
        return f"{self.base}/{name}"

    def url(self, name: str) -> str:
        return self.origin + self.path(name)


def metadata_document(endpoints: Endpoints, scopes: list[str]) -> dict[str, Any]:
    """RFC 8414 section 2 members, with RFC 9207's ``iss`` parameter support declared."""
    return {
        "issuer": endpoints.issuer,
        "authorization_endpoint": endpoints.url("authorize"),
        "token_endpoint": endpoints.url("token"),
        "registration_endpoint": endpoints.url("register"),
        "revocation_endpoint": endpoints.url("revoke"),
        "jwks_uri": endpoints.url("jwks.json"),
        "scopes_supported": scopes,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
    }
