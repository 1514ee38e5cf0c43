"""Our access tokens: JWTs in the RFC 9068 profile, bound to the MCP server's resource.

Claims: ``iss`` (us), ``aud`` (the resource, RFC 8707 section 2: a token is good for the one
server it was asked for, and ``runtime.auth`` refuses it anywhere else), ``sub`` (who logged in
upstream), ``client_id``, ``scope``, ``iat``, ``exp``, ``jti`` and ``sid``: the grant family
(the login that began it), which revocation and refresh-token reuse detection end as a whole.
The header's ``typ`` is ``at+jwt`` (RFC 9068 section 2.1) so that an ID token can never pass
as an access token, here or at a resource server that checks ``typ``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import jwt

from ..auth import AccessToken, scopes_from_claims
from ..stores import GrantStore
from ._keys import ALGORITHM, KeyRing

__all__ = ["TokenIssuer", "revoked_key"]

#: Tokens past this size are refused before parsing (ours are well under 1 KiB).
_MAX_TOKEN_CHARS = 8 * 1024


def revoked_key(family: str) -> str:
    return f"revoked:{family}"


class TokenIssuer:
    """Signs access tokens and verifies them (it is the ``TokenVerifier`` of the MCP endpoint
    it protects: no JWKS fetch, the keys are ours)."""

    def __init__(
        self,
        keys: KeyRing,
        store: GrantStore,
        *,
        issuer: str,
        resource: str,
        lifetime: float,
        leeway: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._keys = keys
        self._store = store
        self.issuer = issuer
        self.resource = resource
        self.lifetime = lifetime
        self._leeway = leeway
        self._clock = clock

    async def issue(self, *, subject: str, client_id: str, scopes: list[str], family: str) -> str:
        key = await self._keys.current()
        now = int(self._clock())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.resource,
            "sub": subject,
            "client_id": client_id,
            "scope": " ".join(scopes),
            "iat": now,
            "exp": now + int(self.lifetime),
            "jti": secrets.token_urlsafe(16),
            "sid": family,
        }
        headers = {"kid": key.kid, "typ": "at+jwt"}
        return jwt.encode(claims, key.private(), algorithm=ALGORITHM, headers=headers)

    async def claims(self, token: str) -> dict[str, Any] | None:
        """The claims of a valid token of ours (signature, ``typ``, issuer, audience; expiry
        and issue time on our clock with ``leeway`` seconds of skew), or None. Revocation
        is not checked here."""
        if len(token) > _MAX_TOKEN_CHARS:
            return None
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        if header.get("typ") != "at+jwt" or header.get("alg") != ALGORITHM:
            return None
        for key in await self._keys.verifying():
            if key.kid != header.get("kid"):
                continue
            try:
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key.private().public_key(),
                    algorithms=[ALGORITHM],
                    audience=self.resource,
                    issuer=self.issuer,
                    # The times are checked below, on our clock (the one that issued them).
                    options={
                        "require": ["exp", "iat", "sub", "aud", "iss", "sid"],
                        "verify_exp": False,
                        "verify_iat": False,
                        "verify_nbf": False,
                    },
                )
            except jwt.PyJWTError:
                return None
            exp, iat = claims.get("exp"), claims.get("iat")
            if not isinstance(exp, int) or not isinstance(iat, int):
                return None
            now = self._clock()
            # Replicas' clocks differ a little: ``leeway`` seconds either way.
            if now > exp + self._leeway or now < iat - self._leeway:
                return None
            return claims
        return None

    async def __call__(self, token: str, /) -> AccessToken | None:
        claims = await self.claims(token)
        if claims is None or not isinstance(claims.get("sid"), str):
            return None
        if await self._store.get(revoked_key(claims["sid"])) is not None:
            return None
        scopes = scopes_from_claims(claims)
        if scopes is None or not isinstance(claims.get("sub"), str):
            return None
        client_id = claims.get("client_id")
        return AccessToken(
            subject=claims["sub"],
            scopes=scopes,
            client_id=client_id if isinstance(client_id, str) else None,
            expires_at=float(claims["exp"]),
            claims=MappingProxyType(claims),
        )
