"""OAuth 2.0 Protected Resource Metadata (RFC 9728) for an MCP server.

MCP 2025-11-25 / 2026-07-28 basic/authorization: servers MUST publish this document and it MUST
list at least one authorization server. Clients find it through the ``resource_metadata``
parameter of a 401 challenge, else by probing the well-known URIs: first the path-inserted form
(``https://host/.well-known/oauth-protected-resource/mcp`` for ``https://host/mcp``), then the
root form. The transport serves ``document_json()`` at every path ``well_known_paths`` returns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec

from ._token import is_scope_token

__all__ = ["WELL_KNOWN_PREFIX", "ProtectedResourceMetadata", "well_known_paths"]

#: RFC 9728 section 3 (registered in section 8.3).
WELL_KNOWN_PREFIX: Final = "/.well-known/oauth-protected-resource"

# Visible ASCII without '"' and '\': the URL appears inside a quoted-string of the
# WWW-Authenticate header (RFC 9110 section 5.6.4), so it must need no escaping there.
_HEADER_SAFE: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
_LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})


def _check_url(url: str, what: str) -> None:
    """Raise ValueError unless ``url`` is an absolute https URL without fragment or userinfo.

    Plain http is allowed for loopback hosts only, for local development (OAuth 2.1 section
    1.5 requires TLS elsewhere). RFC 9728 section 2: the resource identifier has no fragment.
    """
    if not isinstance(url, str) or _HEADER_SAFE.fullmatch(url) is None:
        raise ValueError(f"{what} must be a URL of visible ASCII without quotes or backslashes")
    parts = urlsplit(url)
    if "#" in url or parts.username is not None or parts.password is not None:
        raise ValueError(f"{what} must not contain a fragment or user information")
    if not parts.hostname:
        raise ValueError(f"{what} must be an absolute URL with a host")
    if parts.scheme != "https" and not (
        parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS
    ):
        raise ValueError(f"{what} must use https (http only for localhost)")


def well_known_paths(resource_url: str) -> list[str]:
    """The request paths at which the metadata for ``resource_url`` is served, in the order
    MCP clients probe them (2025-11-25 "Protected Resource Metadata Discovery Requirements").

    ``https://host/mcp`` gives ``["/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-protected-resource"]``; a resource at the host root
    (``https://host`` or ``https://host/``) gives only the root form, since RFC 9728 section
    3.1 drops a terminating slash after the host. Raises ValueError for a URL that cannot be a
    resource identifier, or one with a query (RFC 9728 discourages it and MCP never uses one).
    """
    _check_url(resource_url, "resource")
    parts = urlsplit(resource_url)
    if parts.query or "?" in resource_url:
        raise ValueError("a resource identifier with a query component is not supported")
    if parts.path in ("", "/"):
        return [WELL_KNOWN_PREFIX]
    return [WELL_KNOWN_PREFIX + parts.path, WELL_KNOWN_PREFIX]


@dataclass(frozen=True, slots=True)
class ProtectedResourceMetadata:
    """The RFC 9728 document for one MCP endpoint.

    ``resource`` is the server's canonical URI (RFC 8707 section 2; MCP "Canonical Server
    URI"), the value access tokens carry as ``aud``. ``authorization_servers`` are issuer
    URLs (at least one). ``scopes_supported`` should be the minimal set for basic use (MCP
    2026-07-28 "Scope Selection Strategy"); ``offline_access`` does not belong there.
    ``bearer_methods_supported`` is always ``["header"]``: tokens in a form body or query
    string are refused (OAuth 2.1 section 5.1; MCP "Token Requirements").
    Construction validates every field and raises ValueError.
    """

    resource: str
    authorization_servers: Sequence[str]
    scopes_supported: Sequence[str] | None = None
    resource_documentation: str | None = None
    resource_name: str | None = None

    def __post_init__(self) -> None:
        well_known_paths(self.resource)  # validates the resource URL
        servers = _as_tuple(self.authorization_servers, "authorization_servers")
        if not servers:
            raise ValueError("authorization_servers must list at least one issuer URL")
        for server in servers:
            _check_url(server, "each authorization server")
        object.__setattr__(self, "authorization_servers", servers)
        if self.scopes_supported is not None:
            scopes = _as_tuple(self.scopes_supported, "scopes_supported")
            if not all(is_scope_token(scope) for scope in scopes):
                raise ValueError("scopes_supported holds a value that is not an RFC 6749 scope")
            if "offline_access" in scopes:
                raise ValueError("offline_access is not a resource scope (MCP 2026-07-28)")
            object.__setattr__(self, "scopes_supported", scopes)
        if self.resource_documentation is not None:
            _check_url(self.resource_documentation, "resource_documentation")
        if self.resource_name is not None and not isinstance(self.resource_name, str):
            raise ValueError("resource_name must be a string")

    @property
    def metadata_url(self) -> str:
        """The absolute URL of the document, as advertised in ``resource_metadata`` of every
        challenge: the most specific (path-inserted) well-known form."""
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{well_known_paths(self.resource)[0]}"

    def well_known_paths(self) -> list[str]:
        """The request paths to serve ``document_json()`` at (see ``well_known_paths``)."""
        return well_known_paths(self.resource)

    def document(self) -> dict[str, Any]:
        """The metadata as a JSON-ready dict, RFC 9728 section 2 member names."""
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
        }
        if self.scopes_supported is not None:
            doc["scopes_supported"] = list(self.scopes_supported)
        doc["bearer_methods_supported"] = ["header"]
        if self.resource_documentation is not None:
            doc["resource_documentation"] = self.resource_documentation
        if self.resource_name is not None:
            doc["resource_name"] = self.resource_name
        return doc

    def document_json(self) -> bytes:
        """The response body for GET on a well-known path (``application/json``)."""
        return msgspec.json.encode(self.document())


def _as_tuple(values: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(values, str | bytes):
        raise ValueError(f"{what} must be a list of strings, not one string")
    result = tuple(values)
    if not all(isinstance(value, str) for value in result):
        raise ValueError(f"{what} must hold strings only")
    return result
