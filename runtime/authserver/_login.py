"""The browser's part: authorize (RFC 6749 section 4.1.1 with PKCE S256 and RFC 8707
``resource``), the consent page, and the upstream provider's callback, which ends in our own
authorization code sent to the client with ``iss`` (RFC 9207).

Order: consent first, then the provider's login. The consent page names the client and where
the browser goes afterwards, so that a registered client cannot quietly ride a person's
existing login at the provider (the "confused deputy" of MCP's security best practices for
proxies). A cookie set with the consent page binds the whole login to that browser: the
consent form and the provider's callback are refused from any other (CSRF, login CSRF).
Errors before the client and redirect URI are known to be good are shown as a page, never
redirected (RFC 6749 section 4.1.2.1: no open redirect).
"""

from __future__ import annotations

import hmac
import logging
import secrets

from ..auth import RouteRequest, RouteResponse
from ..stores import GrantStore
from ._clients import redirect_matches
from ._fetch import UpstreamError
from ._http import BadRequest, cookie, html, parameters, redirect
from ._metadata import Endpoints
from ._pages import consent_page, error_page
from ._pkce import is_challenge, make_pair
from ._records import Code, Pending, decode, encode, hashed
from ._registry import ClientRegistry
from ._settings import AuthServerSettings
from ._upstream import Upstream

__all__ = ["LoginFlow"]

log = logging.getLogger("mcp_runtime.authserver")

_COOKIE = "mcp_runtime_login"
_LOGINS_GROUP = "logins"


class LoginFlow:
    def __init__(
        self,
        *,
        store: GrantStore,
        settings: AuthServerSettings,
        endpoints: Endpoints,
        clients: ClientRegistry,
        upstream: Upstream,
        resource: str,
        scopes: list[str],
    ) -> None:
        self._store = store
        self._settings = settings
        self._endpoints = endpoints
        self._clients = clients
        self._upstream = upstream
        self._resource = resource
        self._scopes = scopes
        self._secure = endpoints.issuer.startswith("https:")

    def _to_client(self, pending: Pending, **params: str | None) -> RouteResponse:
        """Back to the client's redirect URI with ``params``, ``state`` and ``iss``."""
        return redirect(
            pending.redirect_uri,
            {**params, "state": pending.state, "iss": self._endpoints.issuer},
            extra=(self._clear_cookie(),),
        )

    def _set_cookie(self, value: str) -> tuple[str, str]:
        secure = "; Secure" if self._secure else ""
        return (
            "Set-Cookie",
            f"{_COOKIE}={value}; Path={self._endpoints.base or '/'}; HttpOnly; SameSite=Lax"
            f"; Max-Age={int(self._settings.login_ttl)}{secure}",
        )

    def _clear_cookie(self) -> tuple[str, str]:
        return ("Set-Cookie", f"{_COOKIE}=; Path={self._endpoints.base or '/'}; Max-Age=0")

    async def authorize(self, request: RouteRequest) -> RouteResponse:
        """GET /authorize: check the request, then show the consent page."""
        if request.method not in ("GET", "HEAD"):
            return html(
                405, error_page("Method not allowed", "The authorization request is a GET.")
            )
        try:
            params = parameters(request, form=False)
        except BadRequest as exc:
            return html(400, error_page("Bad authorization request", str(exc)))
        client = await self._clients.load(params.get("client_id", ""))
        if client is None:
            return html(400, error_page("Unknown client", "This application is not registered."))
        given = params.get("redirect_uri")
        if given is None and len(client.redirect_uris) == 1:
            given = client.redirect_uris[0]
        if given is None or not redirect_matches(client.redirect_uris, given):
            # Never redirect to an unregistered URI (open redirect, code theft).
            return html(400, error_page("Bad redirect URI", "The redirect URI is not registered."))
        base = Pending(
            client_id=client.client_id,
            redirect_uri=given,
            state=params.get("state"),
            code_challenge="",
            scopes=[],
            resource=self._resource,
            browser_hash="",
        )
        if params.get("response_type") != "code":
            return self._to_client(base, error="unsupported_response_type")
        challenge = params.get("code_challenge")
        method = params.get("code_challenge_method")
        if challenge is None or method != "S256" or not is_challenge(challenge):
            # OAuth 2.1 section 4.1.1: PKCE is required; "plain" is refused (no downgrade).
            description = "PKCE with code_challenge_method=S256 is required"
            return self._to_client(base, error="invalid_request", error_description=description)
        resource = params.get("resource", self._resource)
        if resource != self._resource:
            # RFC 8707 section 2: a token for another resource is not ours to issue.
            return self._to_client(
                base, error="invalid_target", error_description="unknown resource"
            )
        requested = params.get("scope", "").split()
        requested = [scope for scope in requested if scope != "offline_access"]
        unknown = [scope for scope in requested if scope not in self._scopes]
        if unknown:
            return self._to_client(
                base, error="invalid_scope", error_description=f"unknown scope {unknown[0]!r}"
            )
        transaction = secrets.token_urlsafe(32)
        browser = secrets.token_urlsafe(32)
        settings = self._settings
        if not await self._store.join(
            _LOGINS_GROUP, transaction, settings.login_ttl, settings.max_logins
        ):
            log.warning("authserver.login_refused limit=max_logins=%d", settings.max_logins)
            return html(
                503,
                error_page(
                    "Too many logins in progress",
                    f"max_logins={settings.max_logins} logins are in progress; try again soon.",
                ),
                extra=(("Retry-After", "60"),),
            )
        pending = Pending(
            client_id=client.client_id,
            redirect_uri=given,
            state=params.get("state"),
            code_challenge=challenge,
            scopes=requested or list(self._scopes),
            resource=resource,
            browser_hash=hashed(browser),
        )
        await self._store.put(f"login:{transaction}", encode(pending), settings.login_ttl)
        page = consent_page(
            action=self._endpoints.path("authorize/consent"),
            transaction=transaction,
            client_name=client.client_name,
            client_id=client.client_id,
            redirect_uri=given,
            scopes=pending.scopes,
            resource=resource,
        )
        return html(200, page, extra=(self._set_cookie(browser),))

    async def _pending(
        self, request: RouteRequest, transaction: str, *, take: bool
    ) -> Pending | None:
        """The login ``transaction`` when this request comes from its browser; with
        ``take``, also removed (only one request of many concurrent ones, on any replica,
        gets it). Checked before it is taken: a request from another browser (one that
        learnt the state) cannot spend the person's login."""
        key = f"login:{transaction}"
        data = await self._store.get(key)
        pending = None if data is None else decode(data, Pending)
        browser = cookie(request, _COOKIE)
        if pending is None or browser is None:
            return None
        if not hmac.compare_digest(hashed(browser), pending.browser_hash):
            return None
        if take and await self._store.take(key) is None:
            return None  # another request took it first
        return pending

    async def consent(self, request: RouteRequest) -> RouteResponse:
        """POST /authorize/consent: the person's answer. Allow: on to the provider's login."""
        if request.method != "POST":
            return html(405, error_page("Method not allowed", "The consent form is a POST."))
        try:
            params = parameters(request, form=True)
        except BadRequest as exc:
            return html(400, error_page("Bad request", str(exc)))
        transaction = params.get("transaction", "")
        pending = await self._pending(request, transaction, take=False)
        if pending is None or pending.consented:
            return html(
                400,
                error_page("Unknown or expired request", "Start again from your application."),
            )
        if params.get("decision") != "approve":
            await self._store.delete(f"login:{transaction}")
            await self._store.leave(_LOGINS_GROUP, transaction)
            return self._to_client(pending, error="access_denied")
        verifier, challenge = make_pair()
        nonce = secrets.token_urlsafe(24)
        try:
            location = await self._upstream.authorization_url(
                state=transaction,
                nonce=nonce,
                code_challenge=challenge,
                redirect_uri=self._endpoints.url("callback"),
            )
        except UpstreamError as exc:
            log.warning("authserver.upstream_unavailable reason=%s", exc)
            await self._store.delete(f"login:{transaction}")
            await self._store.leave(_LOGINS_GROUP, transaction)
            return self._to_client(
                pending,
                error="temporarily_unavailable",
                error_description="the identity provider cannot be reached",
            )
        pending.upstream_verifier = verifier
        pending.nonce = nonce
        pending.consented = True
        await self._store.put(f"login:{transaction}", encode(pending), self._settings.login_ttl)
        # 303: the browser follows a POST's answer with a GET (RFC 9110 section 15.4.4).
        return redirect(location, {}, status=303)

    async def callback(self, request: RouteRequest) -> RouteResponse:
        """GET /callback: the provider's answer. Good: our own code, back to the client."""
        try:
            params = parameters(request, form=False)
        except BadRequest as exc:
            return html(400, error_page("Bad request", str(exc)))
        transaction = params.get("state", "")
        # Taken: a state is good once (a replayed callback finds nothing).
        pending = await self._pending(request, transaction, take=True)
        if pending is None or not pending.consented:
            return html(
                400,
                error_page("Unknown or used login", "Start again from your application."),
            )
        await self._store.leave(_LOGINS_GROUP, transaction)
        if "error" in params or "code" not in params:
            log.info("authserver.upstream_denied error=%s", params.get("error", "no code"))
            return self._to_client(pending, error="access_denied")
        try:
            subject = await self._upstream.identify(
                code=params["code"],
                code_verifier=pending.upstream_verifier,
                redirect_uri=self._endpoints.url("callback"),
                nonce=pending.nonce,
            )
        except UpstreamError as exc:
            log.warning("authserver.upstream_unavailable reason=%s", exc)
            return self._to_client(
                pending,
                error="temporarily_unavailable",
                error_description="the identity provider cannot be reached",
            )
        if subject is None:
            return self._to_client(pending, error="access_denied")
        code = secrets.token_urlsafe(32)
        record = Code(
            client_id=pending.client_id,
            redirect_uri=pending.redirect_uri,
            code_challenge=pending.code_challenge,
            scopes=pending.scopes,
            resource=pending.resource,
            subject=subject,
            family=secrets.token_urlsafe(16),
        )
        await self._store.put(f"code:{hashed(code)}", encode(record), self._settings.code_ttl)
        log.info("authserver.login client_id=%s", pending.client_id)
        return self._to_client(pending, code=code)
