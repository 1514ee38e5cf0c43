"""``AuthorizationServer``: the runtime's own OAuth 2.1 authorization server for one MCP
server, in front of an upstream OpenID provider (or development users).

It is composed of collaborators with one job each: ``ClientRegistry`` (registration, client
authentication), ``LoginFlow`` (authorize, consent, callback), ``TokenService`` (token,
revocation), ``TokenIssuer`` and ``KeyRing`` (our JWTs and their rotating keys). All state is
in a ``GrantStore``, so replicas sharing one serve any step of a login.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ..auth import AuthConfig, ProtectedResourceMetadata, Route, RouteRequest, RouteResponse
from ..stores import GrantStore, MemoryGrantStore, StoreUnavailable
from ._grants import TokenService
from ._http import json_response, oauth_error
from ._keys import KeyRing
from ._login import LoginFlow
from ._metadata import Endpoints, metadata_document
from ._registry import ClientRegistry
from ._settings import AuthServerSettings
from ._tokens import TokenIssuer
from ._upstream import Upstream

__all__ = ["AuthorizationServer"]

log = logging.getLogger("mcp_runtime.authserver")


def _guarded(route: Route) -> Route:
    """``route`` answering 503 ``temporarily_unavailable`` (with ``Retry-After``) while the
    shared store cannot be reached, as the MCP endpoint does, rather than a 500."""

    async def answer(request: RouteRequest) -> RouteResponse:
        try:
            return await route(request)
        except StoreUnavailable as exc:
            log.warning("authserver.store_unavailable reason=%s", exc)
            return oauth_error(
                503,
                "temporarily_unavailable",
                "the authorization server's store cannot be reached; try again",
                extra=(("Retry-After", "1"),),
            )

    return answer


class AuthorizationServer:
    """An authorization server for the MCP endpoint ``resource``, whose issuer is ``issuer``
    (an https URL, or http on loopback; its endpoints are served under the issuer's path on
    the MCP server's own listener).

    ``scopes``: what clients may ask for (the default grant when they ask for none).
    ``upstream``: where people log in (``OIDCUpstream``, or ``DevStaticUsers`` for
    development). ``store``: where its state lives (default: this process's memory).
    Construction does no I/O; the provider is discovered on the first login.
    """

    def __init__(
        self,
        *,
        issuer: str,
        resource: str,
        upstream: Upstream,
        scopes: Iterable[str] = (),
        store: GrantStore | None = None,
        settings: AuthServerSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        parts = urlsplit(issuer)
        if parts.query or parts.fragment or issuer.endswith("/"):
            raise ValueError("the issuer is a URL without query, fragment or trailing slash")
        # Validates the resource and the issuer as the metadata would (https or loopback).
        ProtectedResourceMetadata(resource=resource, authorization_servers=[issuer])
        self.issuer = issuer
        self.resource = resource
        self.upstream = upstream
        self.scopes = list(dict.fromkeys(scopes))
        self.store = store if store is not None else MemoryGrantStore()
        self.settings = settings or AuthServerSettings()
        self.endpoints = Endpoints(issuer)
        self.keys = KeyRing(self.store, self.settings.key_rotation, clock)
        self.tokens = TokenIssuer(
            self.keys,
            self.store,
            issuer=issuer,
            resource=resource,
            lifetime=self.settings.access_token_ttl,
            leeway=self.settings.leeway,
            clock=clock,
        )
        self.clients = ClientRegistry(self.store, self.settings, frozenset(self.scopes))
        self.login = LoginFlow(
            store=self.store,
            settings=self.settings,
            endpoints=self.endpoints,
            clients=self.clients,
            upstream=upstream,
            resource=resource,
            scopes=self.scopes,
        )
        self.grants = TokenService(
            store=self.store, settings=self.settings, clients=self.clients, issuer=self.tokens
        )
        self._metadata = msgspec.json.encode(metadata_document(self.endpoints, self.scopes))

    def routes(self) -> dict[str, Route]:
        """Request path -> endpoint, for ``AuthConfig.routes``."""
        path = self.endpoints.path
        routes: dict[str, Route] = {
            self.endpoints.metadata_path: self._metadata_endpoint,
            path("authorize"): self.login.authorize,
            path("authorize/consent"): self.login.consent,
            path("callback"): self.login.callback,
            path("token"): self.grants.token,
            path("revoke"): self.grants.revoke,
            path("register"): self.clients.register,
            path("jwks.json"): self._jwks_endpoint,
        }
        routes.update(self.upstream.routes(self.endpoints.base))
        return {path: _guarded(route) for path, route in routes.items()}

    def auth_config(
        self,
        *,
        required_scopes: Iterable[str] = (),
        tool_scopes: Mapping[str, Iterable[str]] | None = None,
        resource_name: str | None = None,
    ) -> AuthConfig:
        """What ``serve_http(auth=...)`` takes: our tokens checked on every MCP request,
        Protected Resource Metadata naming this issuer, and our endpoints served beside."""
        return AuthConfig(
            verifier=self.tokens,
            resource_metadata=ProtectedResourceMetadata(
                resource=self.resource,
                authorization_servers=[self.issuer],
                scopes_supported=self.scopes or None,
                resource_name=resource_name,
            ),
            required_scopes=frozenset(required_scopes),
            tool_scopes={name: frozenset(s) for name, s in (tool_scopes or {}).items()},
            routes=self.routes(),
        )

    async def _metadata_endpoint(self, request: RouteRequest) -> RouteResponse:
        if request.method not in ("GET", "HEAD"):
            return oauth_error(405, "invalid_request", "GET the metadata")
        return RouteResponse(200, self._metadata)

    async def _jwks_endpoint(self, request: RouteRequest) -> RouteResponse:
        if request.method not in ("GET", "HEAD"):
            return oauth_error(405, "invalid_request", "GET the key set")
        document: dict[str, Any] = await self.keys.jwks()
        return json_response(200, document)
