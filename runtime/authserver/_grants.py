"""The token endpoint (RFC 6749 section 3.2: authorization code and refresh token grants)
and revocation (RFC 7009).

- A code is taken from the store (one use across replicas). A second use of a code finds its
  "used" marker and revokes every token issued from it (RFC 6749 section 4.1.2: the server
  SHOULD revoke them; the first redeemer may have been the thief).
- A refresh token is rotated on every use (OAuth 2.1 section 4.3.1). Presenting one that was
  already rotated means two parties hold it: the whole family (the login it came from) is
  revoked, access tokens included, and both must log in again.
- Access tokens are bound to the resource (RFC 8707): a ``resource`` other than the one the
  code was issued for is ``invalid_target``.
"""

from __future__ import annotations

import logging
import secrets

from ..auth import RouteRequest, RouteResponse
from ..stores import GrantStore
from ._http import BadRequest, json_response, oauth_error, parameters
from ._pkce import verifies
from ._records import Client, Code, Refresh, decode, encode, hashed
from ._registry import ClientRegistry
from ._settings import AuthServerSettings
from ._tokens import TokenIssuer, revoked_key

__all__ = ["TokenService"]

log = logging.getLogger("mcp_runtime.authserver")


class TokenService:
    def __init__(
        self,
        *,
        store: GrantStore,
        settings: AuthServerSettings,
        clients: ClientRegistry,
        issuer: TokenIssuer,
    ) -> None:
        self._store = store
        self._settings = settings
        self._clients = clients
        self._issuer = issuer

    async def token(self, request: RouteRequest) -> RouteResponse:
        """POST /token."""
        if request.method != "POST":
            return oauth_error(405, "invalid_request", "the token endpoint takes POST")
        try:
            params = parameters(request, form=True)
        except BadRequest as exc:
            return oauth_error(400, "invalid_request", str(exc))
        client = await self._clients.authenticate(request, params)
        if isinstance(client, RouteResponse):
            return client
        grant = params.get("grant_type")
        if grant == "authorization_code":
            return await self._code(client, params)
        if grant == "refresh_token":
            return await self._refresh(client, params)
        return oauth_error(400, "unsupported_grant_type", "authorization_code or refresh_token")

    async def _code(self, client: Client, params: dict[str, str]) -> RouteResponse:
        code = params.get("code", "")
        key = hashed(code)
        data = await self._store.take(f"code:{key}")
        record = None if data is None else decode(data, Code)
        if record is None:
            family = await self._store.get(f"used:{key}")
            if family is not None:
                await self.revoke_family(family.decode("ascii"), "code reused")
            return oauth_error(400, "invalid_grant", "the code is invalid, expired or used")
        # Marked before any other check: a failed attempt spends the code too.
        await self._store.put(
            f"used:{key}", record.family.encode("ascii"), self._settings.refresh_token_ttl
        )
        if record.client_id != client.client_id:
            return oauth_error(400, "invalid_grant", "the code was issued to another client")
        if params.get("redirect_uri") != record.redirect_uri:
            return oauth_error(400, "invalid_grant", "redirect_uri differs from authorize's")
        if not verifies(params.get("code_verifier", ""), record.code_challenge):
            return oauth_error(400, "invalid_grant", "the PKCE code_verifier does not match")
        if params.get("resource", record.resource) != record.resource:
            return oauth_error(400, "invalid_target", "the code was issued for another resource")
        refresh = await self._new_refresh(
            Refresh(client.client_id, record.scopes, record.resource, record.subject, record.family)
        )
        return await self._answer(
            record.subject, client.client_id, record.scopes, record.family, refresh
        )

    async def _refresh(self, client: Client, params: dict[str, str]) -> RouteResponse:
        token = params.get("refresh_token", "")
        key = hashed(token)
        data = await self._store.take(f"refresh:{key}")
        record = None if data is None else decode(data, Refresh)
        if record is None:
            family = await self._store.get(f"rotated:{key}")
            if family is not None:
                await self.revoke_family(family.decode("ascii"), "refresh token reused")
            return oauth_error(400, "invalid_grant", "the refresh token is invalid or expired")
        await self._store.put(
            f"rotated:{key}", record.family.encode("ascii"), self._settings.refresh_token_ttl
        )
        if record.client_id != client.client_id:
            return oauth_error(400, "invalid_grant", "the refresh token belongs to another client")
        if await self._store.get(revoked_key(record.family)) is not None:
            return oauth_error(400, "invalid_grant", "the grant was revoked")
        if params.get("resource", record.resource) != record.resource:
            return oauth_error(400, "invalid_target", "the grant is for another resource")
        scopes = record.scopes
        if "scope" in params:  # RFC 6749 section 6: a narrower scope may be asked for
            asked = params["scope"].split()
            if not set(asked) <= set(record.scopes):
                return oauth_error(400, "invalid_scope", "more scope than was granted")
            scopes = asked
        rotated = await self._new_refresh(
            Refresh(client.client_id, record.scopes, record.resource, record.subject, record.family)
        )
        return await self._answer(record.subject, client.client_id, scopes, record.family, rotated)

    async def _new_refresh(self, record: Refresh) -> str:
        token = secrets.token_urlsafe(32)
        await self._store.put(
            f"refresh:{hashed(token)}", encode(record), self._settings.refresh_token_ttl
        )
        return token

    async def _answer(
        self, subject: str, client_id: str, scopes: list[str], family: str, refresh: str
    ) -> RouteResponse:
        access = await self._issuer.issue(
            subject=subject, client_id=client_id, scopes=scopes, family=family
        )
        answer: dict[str, object] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self._settings.access_token_ttl),
            "scope": " ".join(scopes),
        }
        answer["refresh_token"] = refresh
        return json_response(200, answer)

    async def revoke_family(self, family: str, reason: str) -> None:
        """End every token of a grant family (its refresh tokens and access tokens)."""
        await self._store.put(revoked_key(family), b"1", self._settings.refresh_token_ttl)
        log.warning("authserver.grant_revoked reason=%s", reason)

    async def revoke(self, request: RouteRequest) -> RouteResponse:
        """POST /revoke (RFC 7009 section 2): 200 whether or not the token was known (2.2),
        so that the answer tells nothing; the client must authenticate (2.1)."""
        if request.method != "POST":
            return oauth_error(405, "invalid_request", "the revocation endpoint takes POST")
        try:
            params = parameters(request, form=True)
        except BadRequest as exc:
            return oauth_error(400, "invalid_request", str(exc))
        client = await self._clients.authenticate(request, params)
        if isinstance(client, RouteResponse):
            return client
        token = params.get("token")
        if token is None:
            return oauth_error(400, "invalid_request", "token is required")
        data = await self._store.get(f"refresh:{hashed(token)}")
        record = None if data is None else decode(data, Refresh)
        if record is not None and record.client_id == client.client_id:
            await self.revoke_family(record.family, "revoked by its client")
        else:
            claims = await self._issuer.claims(token)
            if claims is not None and claims.get("client_id") == client.client_id:
                await self.revoke_family(str(claims["sid"]), "revoked by its client")
        return json_response(200, {})
