"""Where people log in: an upstream OpenID Connect provider, or static users for development.

The authorization server never sees a password. It sends the browser to the provider's
authorization endpoint (with its own PKCE S256 pair and an OIDC nonce), receives the code at
its callback, redeems it at the provider's token endpoint over a direct, bounded connection,
and keeps only the ID token's verified subject. The provider's tokens go no further (MCP
basic/authorization "Access Token Privilege Restriction"; "Token Passthrough" is forbidden).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol
from urllib.parse import quote, urlencode

import trio

from ..auth import Route, RouteRequest, RouteResponse
from ._fetch import UpstreamError, check_upstream_url, fetch_json
from ._http import BadRequest, html, parameters, redirect
from ._pages import dev_login_page, error_page

__all__ = ["DevStaticUsers", "OIDCUpstream", "Upstream", "UpstreamError"]

log = logging.getLogger("mcp_runtime.authserver")

#: ID token algorithms we accept from a provider (never ``none``, never HMAC: a client secret
#: shared with the provider must not be able to mint identities). OIDC Core section 15.1
#: makes RS256 mandatory; ES256 and PS256 are common.
_ID_TOKEN_ALGORITHMS: Final = ("RS256", "ES256", "PS256", "ES384", "RS384")


class Upstream(Protocol):
    """A source of identities. ``name`` names it in logs and pages."""

    name: str

    async def authorization_url(
        self, *, state: str, nonce: str, code_challenge: str, redirect_uri: str
    ) -> str:
        """Where to send the browser to log in; it comes back to ``redirect_uri`` with
        ``code`` and ``state``. Raises UpstreamError when the provider cannot be reached."""
        ...

    async def identify(
        self, *, code: str, code_verifier: str, redirect_uri: str, nonce: str
    ) -> str | None:
        """The subject who logged in, from the code the callback received; None when the
        provider refused it or its ID token does not check out. Raises UpstreamError when
        the provider cannot be reached or answers nonsense."""
        ...

    def routes(self, base: str) -> Mapping[str, Route]:
        """Endpoints of its own beside ours (``base``: the issuer's path), e.g. a login page."""
        ...


class OIDCUpstream:
    """Any OpenID Connect provider, by discovery (OIDC Discovery 1.0 section 4).

    ``issuer`` is the provider's issuer URL; its metadata is fetched from
    ``{issuer}/.well-known/openid-configuration`` on first use and kept ``metadata_ttl``
    seconds, and must name the same issuer (section 4.3). We are a confidential client of it
    (``client_id``, ``client_secret``; sent with ``client_secret_basic`` unless the provider
    supports only ``client_secret_post``). Every call is bounded by ``timeout`` seconds and
    ``max_bytes``. The ID token's signature is checked against the provider's JWKS (through
    ``runtime.auth.JWTVerifier``: fetched, cached, rotated), with its issuer, audience (our
    client id), expiry and nonce.
    """

    def __init__(
        self,
        issuer: str,
        *,
        client_id: str,
        client_secret: str | None = None,
        scopes: Sequence[str] = ("openid",),
        timeout: float = 10.0,
        max_bytes: int = 256 * 1024,
        metadata_ttl: float = 3600.0,
        name: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_upstream_url(issuer, "the upstream issuer")
        if not client_id:
            raise ValueError("an upstream OpenID provider needs a client id")
        if "openid" not in scopes:
            raise ValueError('the upstream scopes must include "openid"')
        # Kept exactly as given: the discovery document must name this very string (OIDC
        # Discovery section 4.3), trailing slash and all (some providers' issuers end in one).
        self.issuer = issuer
        self.name = name or f"oidc {issuer}"
        self.client_id = client_id
        self._secret = client_secret
        self.scopes = tuple(scopes)
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.metadata_ttl = metadata_ttl
        self._clock = clock
        self._metadata: dict[str, Any] | None = None
        self._fetched_at = 0.0
        self._verifier: Any = None
        self._lock = trio.Lock()

    def __repr__(self) -> str:  # never the secret
        return f"OIDCUpstream({self.issuer!r}, client_id={self.client_id!r})"

    def routes(self, base: str) -> Mapping[str, Route]:
        return {}

    async def _discover(self) -> dict[str, Any]:
        async with self._lock:
            if self._metadata is not None and self._clock() - self._fetched_at < self.metadata_ttl:
                return self._metadata
            url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
            status, document = await fetch_json(url, timeout=self.timeout, max_bytes=self.max_bytes)
            if status != 200 or not isinstance(document, dict):
                raise UpstreamError(f"{url}: HTTP {status}, not a provider configuration")
            if document.get("issuer") != self.issuer:
                raise UpstreamError(f"{url}: names issuer {document.get('issuer')!r}, not ours")
            for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                value = document.get(name)
                if not isinstance(value, str):
                    raise UpstreamError(f"{url}: no {name}")
                try:
                    check_upstream_url(value, name)
                except ValueError as exc:
                    raise UpstreamError(f"{url}: {exc}") from None
            methods = document.get("code_challenge_methods_supported")
            if isinstance(methods, list) and "S256" not in methods:
                raise UpstreamError(f"{url}: the provider does not support PKCE S256")
            if (
                self._verifier is None
                or self._metadata is None
                or (self._metadata.get("jwks_uri") != document["jwks_uri"])
            ):
                from ..auth import JWTVerifier

                self._verifier = JWTVerifier(
                    jwks_uri=document["jwks_uri"],
                    issuer=self.issuer,
                    audience=self.client_id,
                    algorithms=_ID_TOKEN_ALGORITHMS,
                )
            self._metadata = document
            self._fetched_at = self._clock()
            return document

    async def authorization_url(
        self, *, state: str, nonce: str, code_challenge: str, redirect_uri: str
    ) -> str:
        metadata = await self._discover()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.scopes),
                "state": state,
                "nonce": nonce,
                "code_challenge": code_challenge,
                "code_challenge_method": "S256",
            },
            quote_via=quote,
        )
        endpoint: str = metadata["authorization_endpoint"]
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    async def identify(
        self, *, code: str, code_verifier: str, redirect_uri: str, nonce: str
    ) -> str | None:
        metadata = await self._discover()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        headers: dict[str, str] = {}
        methods = metadata.get("token_endpoint_auth_methods_supported", ["client_secret_basic"])
        if self._secret is None:
            form["client_id"] = self.client_id
        elif "client_secret_basic" in methods or not isinstance(methods, list):
            import base64

            pair = f"{quote(self.client_id, safe='')}:{quote(self._secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["client_id"] = self.client_id
            form["client_secret"] = self._secret
        status, answer = await fetch_json(
            metadata["token_endpoint"],
            form=form,
            headers=headers,
            timeout=self.timeout,
            max_bytes=self.max_bytes,
        )
        if status != 200 or not isinstance(answer, dict):
            error = answer.get("error") if isinstance(answer, dict) else None
            log.warning("authserver.upstream_refused status=%d error=%s", status, error)
            return None
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            log.warning("authserver.upstream_no_id_token")
            return None
        principal = await self._verifier(id_token)
        if principal is None:
            log.warning("authserver.upstream_id_token_invalid")
            return None
        if not secrets.compare_digest(str(principal.claims.get("nonce", "")), nonce):
            log.warning("authserver.upstream_nonce_mismatch")
            return None
        subject: str = principal.subject
        return subject


class DevStaticUsers:
    """DEVELOPMENT ONLY: log in as one of ``users`` by clicking a button, no password.

    For trying a protected server on a fresh machine (``examples/oauth_server.py`` with no
    provider configured). It logs a warning at start and its page says the same in a box.
    The one-time login codes live in this process (``max_pending`` at once, ``code_ttl``
    seconds each).
    """

    name = "dev-static-users (DEVELOPMENT ONLY)"

    def __init__(self, users: Sequence[str] = ("alice", "bob"), *, code_ttl: float = 120.0) -> None:
        if not users or not all(isinstance(user, str) and user for user in users):
            raise ValueError("the development users must be non-empty names")
        self.users = list(users)
        self.code_ttl = code_ttl
        self.max_pending = 1000
        self._codes: dict[str, tuple[str, str, float]] = {}  # code -> (user, challenge, until)
        #: state -> (our callback, our PKCE challenge, until): logins shown, not yet chosen
        self._pending: dict[str, tuple[str, str, float]] = {}
        self._login_path = "/dev-login"
        log.warning(
            "authserver.dev_static_users DEVELOPMENT ONLY: anyone who reaches this server "
            "can log in as %s without a password; configure --auth oidc --issuer URL "
            "before exposing it",
            ", ".join(self.users),
        )

    def routes(self, base: str) -> Mapping[str, Route]:
        self._login_path = base + "/dev-login"
        return {self._login_path: self._login}

    async def authorization_url(
        self, *, state: str, nonce: str, code_challenge: str, redirect_uri: str
    ) -> str:
        self._pending[state] = (redirect_uri, code_challenge, time.monotonic() + self.code_ttl)
        if len(self._pending) > self.max_pending:
            self._pending.pop(next(iter(self._pending)))
        return f"{self._login_path}?{urlencode({'state': state})}"

    async def _login(self, request: RouteRequest) -> RouteResponse:
        try:
            params = parameters(request, form=request.method == "POST")
        except BadRequest as exc:
            return html(400, error_page("Bad request", str(exc)))
        state = params.get("state", "")
        if request.method == "GET":
            if state not in self._pending:
                return html(400, error_page("Unknown login", "Start again from your application."))
            return html(200, dev_login_page(action=self._login_path, state=state, users=self.users))
        if request.method != "POST":
            return html(405, error_page("Method not allowed", "GET or POST only."))
        entry = self._pending.pop(state, None)
        user = params.get("user")
        if entry is None or entry[2] < time.monotonic() or user not in self.users:
            return html(400, error_page("Unknown login", "Start again from your application."))
        code = secrets.token_urlsafe(32)
        self._codes[code] = (user, entry[1], time.monotonic() + self.code_ttl)
        if len(self._codes) > self.max_pending:
            self._codes.pop(next(iter(self._codes)))
        return redirect(entry[0], {"code": code, "state": state}, status=303)

    async def identify(
        self, *, code: str, code_verifier: str, redirect_uri: str, nonce: str
    ) -> str | None:
        from ._pkce import verifies

        entry = self._codes.pop(code, None)
        if entry is None or entry[2] < time.monotonic() or not verifies(code_verifier, entry[1]):
            return None
        return entry[0]
