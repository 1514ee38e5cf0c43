"""Where the metadata documents are, and what makes one acceptable (sans-IO).

- Protected Resource Metadata (RFC 9728): the URL a 401's ``resource_metadata`` names, else
  the well-known URL with the MCP endpoint's path (RFC 9728 3.1: inserted after
  ``/.well-known/oauth-protected-resource``), then the one at the root (an MCP extension for
  endpoints with a path; basic/authorization "Protected Resource Metadata Discovery
  Requirements"). Its ``resource`` must name this server (RFC 9728 3.3; RFC 8707): a document
  for another resource would have the client fetch, and send, a token meant for someone else.
- Authorization server metadata: RFC 8414 3.1 then OpenID Connect Discovery 1.0, path
  inserted and appended for an issuer with a path (basic/authorization "Authorization Server
  Metadata Discovery"); its ``issuer`` must be identical to the one the URL was built from
  (RFC 8414 3.3; OIDC Discovery 4.3), or a document could claim another server's identity.
- 2025-03-26 servers predate RFC 9728: without any resource metadata the authorization
  server is the MCP server's origin, and without its metadata the endpoints are the
  default ``/authorize``, ``/token`` and ``/register`` there (2025-03-26
  basic/authorization 2.3.3 "Fallbacks for Servers without Metadata Discovery").
"""

from __future__ import annotations

import urllib.parse
from typing import Final

import msgspec

__all__ = [
    "AuthServerMetadata",
    "MetadataError",
    "ProtectedResource",
    "auth_server_metadata_urls",
    "canonical_resource",
    "decode_auth_server",
    "decode_resource",
    "fallback_auth_server",
    "resource_allowed",
    "resource_metadata_urls",
]

_PRM_SUFFIX: Final = "/.well-known/oauth-protected-resource"
_AS_SUFFIX: Final = "/.well-known/oauth-authorization-server"
_OIDC_SUFFIX: Final = "/.well-known/openid-configuration"


class MetadataError(ValueError):
    """A metadata document the client must not use (the message says why)."""


class ProtectedResource(msgspec.Struct, frozen=True):
    """RFC 9728 2: the fields the client reads."""

    resource: str
    authorization_servers: list[str] = []
    scopes_supported: list[str] | None = None
    dpop_bound_access_tokens_required: bool = False


class AuthServerMetadata(msgspec.Struct, frozen=True):
    """RFC 8414 2 (and OIDC Discovery 3): the fields the client reads."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    client_id_metadata_document_supported: bool = False
    authorization_response_iss_parameter_supported: bool = False
    revocation_endpoint: str | None = None
    dpop_signing_alg_values_supported: list[str] | None = None


_PRM_DECODER: Final = msgspec.json.Decoder(ProtectedResource)
_AS_DECODER: Final = msgspec.json.Decoder(AuthServerMetadata)


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _path(url: str) -> str:
    return urllib.parse.urlsplit(url).path.rstrip("/")


def canonical_resource(server_url: str) -> str:
    """The MCP server's canonical URI (basic/authorization "Canonical Server URI"): lower-case
    scheme and host, no fragment, no query, no trailing slash."""
    parts = urllib.parse.urlsplit(server_url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def resource_metadata_urls(server_url: str) -> list[str]:
    """The well-known Protected Resource Metadata URLs to try, in order."""
    origin, path = _origin(server_url), _path(server_url)
    urls = [f"{origin}{_PRM_SUFFIX}{path}"] if path else []
    urls.append(f"{origin}{_PRM_SUFFIX}")
    return urls


def auth_server_metadata_urls(issuer: str) -> list[str]:
    """The metadata URLs to try for an issuer, in order."""
    origin, path = _origin(issuer), _path(issuer)
    if not path:
        return [f"{origin}{_AS_SUFFIX}", f"{origin}{_OIDC_SUFFIX}"]
    return [
        f"{origin}{_AS_SUFFIX}{path}",
        f"{origin}{_OIDC_SUFFIX}{path}",
        f"{origin}{path}{_OIDC_SUFFIX}",
    ]


def resource_allowed(server_url: str, resource: str) -> bool:
    """Whether a metadata document's ``resource`` may stand for the server at ``server_url``:
    the same origin, and a path that is the server's or one of its parents (segment-wise),
    so ``https://h/mcp`` covers ``https://h/mcp`` and ``https://h/mcp/x``, never ``/mcpx``."""
    if _origin(server_url) != _origin(resource):
        return False
    server_path, resource_path = _path(server_url), _path(resource)
    return server_path == resource_path or server_path.startswith(resource_path + "/")


def decode_resource(body: bytes, server_url: str) -> ProtectedResource:
    """A Protected Resource Metadata document for the server at ``server_url``, checked."""
    try:
        document = _PRM_DECODER.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise MetadataError(f"bad protected resource metadata: {exc}") from None
    if not resource_allowed(server_url, document.resource):
        raise MetadataError(
            f"the protected resource metadata is for {document.resource[:200]!r}, "
            f"not for {canonical_resource(server_url)!r} (RFC 9728 3.3)"
        )
    if not document.authorization_servers:
        raise MetadataError("the protected resource metadata names no authorization server")
    return document


def decode_auth_server(body: bytes, issuer: str) -> AuthServerMetadata:
    """Authorization server metadata fetched for ``issuer``, checked."""
    try:
        document = _AS_DECODER.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise MetadataError(f"bad authorization server metadata: {exc}") from None
    if document.issuer != issuer:
        raise MetadataError(
            f"the authorization server metadata's issuer {document.issuer[:200]!r} is not "
            f"{issuer[:200]!r} (RFC 8414 3.3)"
        )
    if document.authorization_endpoint is None and document.token_endpoint is None:
        raise MetadataError("the authorization server metadata names no endpoint")
    return document


def fallback_auth_server(server_url: str) -> AuthServerMetadata:
    """The 2025-03-26 default endpoints at the MCP server's origin."""
    origin = _origin(server_url)
    return AuthServerMetadata(
        issuer=origin,
        authorization_endpoint=f"{origin}/authorize",
        token_endpoint=f"{origin}/token",
        registration_endpoint=f"{origin}/register",
        code_challenge_methods_supported=["S256"],
    )
