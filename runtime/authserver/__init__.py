"""An OAuth 2.1 authorization server inside the runtime, in front of an OpenID provider.

MCP basic/authorization asks a protected server for a whole authorization server speaking
MCP's profile of OAuth (RFC 8414 metadata, Dynamic Client Registration, PKCE S256, resource
indicators), which most identity providers are not. ``AuthorizationServer`` is one: people
log in at the upstream provider (``OIDCUpstream``: any OpenID Connect issuer, by discovery),
and MCP clients get tokens of ours, bound to the server's resource, signed with rotating keys;
the provider's tokens never reach them. ``DevStaticUsers`` replaces the provider for
development only.

::

    login = AuthorizationServer(
        issuer="https://mcp.example.com",
        resource="https://mcp.example.com/mcp",
        upstream=OIDCUpstream("https://accounts.example.com", client_id=..., client_secret=...),
        scopes=["notes:read"],
    )
    await app.serve_http(8000, auth=login.auth_config(required_scopes=["notes:read"]))

Needs the ``auth`` extra (PyJWT, cryptography). State is in a ``runtime.stores.GrantStore``
(memory by default). Sans-IO parts: ``_pkce``, ``_clients``, ``_metadata``, ``_records``;
the endpoints are plain ``runtime.auth.Route`` functions the HTTP transport serves.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._clients import RegistrationLimits
from ._require import LoginRequirement, login_requirement, require_login
from ._settings import AuthServerSettings

if TYPE_CHECKING:
    from ._authserver import AuthorizationServer
    from ._fetch import UpstreamError
    from ._github import GitHubUpstream
    from ._upstream import DevStaticUsers, OIDCUpstream, Upstream

__all__ = [
    "AuthServerSettings",
    "AuthorizationServer",
    "DevStaticUsers",
    "GitHubUpstream",
    "LoginRequirement",
    "OIDCUpstream",
    "RegistrationLimits",
    "Upstream",
    "UpstreamError",
    "login_requirement",
    "require_login",
]

#: Loaded on first use (PEP 562): ``require_login`` in a server file, and ``mcp-runtime
#: serve`` asking whether a server wants login, must not cost PyJWT and cryptography's
#: import (nor need the ``auth`` extra) when nobody logs in.
_LAZY = {
    "AuthorizationServer": "._authserver",
    "UpstreamError": "._fetch",
    "DevStaticUsers": "._upstream",
    "GitHubUpstream": "._github",
    "OIDCUpstream": "._upstream",
    "Upstream": "._upstream",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
