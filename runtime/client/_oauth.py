"""``OAuth``: the client's side of MCP authorization, an :class:`Auth` for the HTTP links.

MCP basic/authorization (2025-06-18 onward; 2025-03-26's fallbacks kept), driven from the
server's refusals:

1. A request is refused with 401 (or 403 ``insufficient_scope``). The ``WWW-Authenticate``
   challenge may name the Protected Resource Metadata and the scope needed.
2. Discovery (``_oauth_metadata``): the resource metadata (the challenge's URL, then the
   well-known ones), its ``resource`` checked against the server; its first authorization
   server's metadata (RFC 8414, then OpenID Connect), its ``issuer`` checked. No resource
   metadata at all: a 2025-03-26 server, whose origin is its authorization server.
3. Registration (``_oauth_registration``): pre-registered, a Client ID Metadata Document, or
   Dynamic Client Registration; bound to the issuer, and done again when the issuer changes.
4. The grant: authorization code with PKCE S256 through the user's browser (``Login``), or
   client credentials for a service; ``resource`` on every request (RFC 8707). Scope: the
   one configured, else the challenge's, else the resource's ``scopes_supported``, else none;
   ``offline_access`` added when the authorization server offers it (for a refresh token).
5. The request is sent again with the token (the link does that: ``_auth``).

Afterwards: a token within ``refresh_margin`` seconds of its expiry is refreshed before it
is sent; a 401 for a token we still hold tries a refresh before a new login; a 403
``insufficient_scope`` asks for the union of the scope held and the one challenged (step-up),
at most ``max_step_ups`` times. One flow at a time: every request that meets an expired
token or a refusal waits for the one refresh or login in progress and then uses its outcome.

Nothing of a token, a code, a verifier or a secret reaches a log line, an error or a repr.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal

import trio

from ._auth import AuthorizationFailed
from ._oauth_challenge import Challenge, parse_challenge
from ._oauth_discovery import Discovery
from ._oauth_fetch import (
    DEFAULT_FETCH_TIMEOUT,
    DEFAULT_MAX_METADATA_BYTES,
    OAuthHttp,
    check_url,
)
from ._oauth_grants import (
    AUTH_METHODS,
    CallbackError,
    GrantError,
    authorization_code_request,
    authorization_url,
    choose_auth_method,
    client_credentials_request,
    code_from_callback,
    jwt_bearer_request,
    refresh_request,
    revocation_request,
)
from ._oauth_identity import EnterpriseIdentity
from ._oauth_loopback import Login
from ._oauth_metadata import (
    AuthServerMetadata,
    canonical_resource,
)
from ._oauth_pkce import Pkce, new_state
from ._oauth_registrar import Registrar
from ._oauth_registration import (
    is_metadata_document_url,
)
from ._oauth_store import ClientRegistration, MemoryTokenStore, StoredLogin, Tokens, TokenStore
from ._oauth_token_endpoint import TokenEndpoint

__all__ = ["DEFAULT_MAX_STEP_UPS", "DEFAULT_REFRESH_MARGIN", "OAuth"]

log = logging.getLogger("mcp_runtime.client.oauth")

#: Seconds before its expiry that a token is refreshed (``OAuth(refresh_margin=)``): a
#: request sent with a token about to expire may arrive after it has (clock skew, a slow
#: network); a minute covers both.
DEFAULT_REFRESH_MARGIN: Final = 60.0
#: Step-up authorizations one ``OAuth`` makes (``OAuth(max_step_ups=)``): basic/authorization
#: "Step-Up Authorization Flow" asks for retry limits; two cover a server that challenges
#: one operation's scopes, then another's.
DEFAULT_MAX_STEP_UPS: Final = 2

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer"]
_GRANTS: Final = ("authorization_code", "client_credentials", "jwt_bearer")


class OAuth:
    """OAuth 2.1 for the MCP server one client talks to (pass it as
    ``open_client(url, auth=OAuth(...))``; see the module docstring for the flow).

    ``client_id`` / ``client_secret``: pre-registered credentials (else the client registers
    itself). ``private_key``: a PEM key for ``private_key_jwt``. ``token_endpoint_auth_method``:
    one of ``none``, ``client_secret_basic``, ``client_secret_post``, ``private_key_jwt``
    (default: chosen from the registration and the server's metadata).
    ``client_metadata_url``: this client's Client ID Metadata Document (an https URL with a
    path), used where the authorization server supports them. ``client_name``: the name shown
    on consent pages. ``scope``: the scope to ask for (default: what the server asks).
    ``grant``: ``authorization_code`` (a user logs in through ``login``, e.g.
    :class:`LoopbackLogin`; without one, only stored tokens are used and a needed login is
    :class:`AuthorizationFailed`), ``client_credentials`` (a service; needs credentials) or
    ``jwt_bearer`` (RFC 7523: ``assertion``, a workload identity JWT or an async function
    returning a fresh one, or ``enterprise``, an :class:`EnterpriseIdentity` whose ID token
    the enterprise IdP exchanges for an ID-JAG; ``_oauth_identity``).
    ``dpop``: bind tokens to a key with DPoP (RFC 9449, ``_oauth_dpop``): True where the
    authorization server supports ES256 proofs, False never, None (default) where it does
    and the resource asks for it (a ``DPoP`` challenge, or ``dpop_bound_access_tokens_required``
    in its metadata).
    ``store``: where logins are kept (default: in memory; :class:`FileTokenStore` persists).
    ``refresh_margin``, ``max_step_ups``: see :data:`DEFAULT_REFRESH_MARGIN`,
    :data:`DEFAULT_MAX_STEP_UPS`. ``fetch_timeout`` (seconds) and ``max_metadata_bytes``
    bound every request to the authorization server and for metadata.
    """

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        private_key: Any = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcp-runtime",
        scope: str | None = None,
        grant: Grant = "authorization_code",
        login: Login | None = None,
        assertion: str | Callable[[], Awaitable[str]] | None = None,
        enterprise: EnterpriseIdentity | None = None,
        dpop: bool | None = None,
        store: TokenStore | None = None,
        refresh_margin: float = DEFAULT_REFRESH_MARGIN,
        max_step_ups: int = DEFAULT_MAX_STEP_UPS,
        fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
        max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES,
        ssl_context: Any = None,
    ) -> None:
        if grant not in _GRANTS:
            raise ValueError(f"grant must be one of {', '.join(_GRANTS)}, not {grant!r}")
        if grant == "jwt_bearer" and (assertion is None) == (enterprise is None):
            raise ValueError("the jwt_bearer grant needs an assertion or an enterprise identity")
        if token_endpoint_auth_method is not None and token_endpoint_auth_method not in (
            AUTH_METHODS
        ):
            raise ValueError(
                f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}, "
                f"not {token_endpoint_auth_method!r}"
            )
        if client_metadata_url is not None and not is_metadata_document_url(client_metadata_url):
            raise ValueError("client_metadata_url must be an https URL with a path")
        if grant in ("client_credentials", "jwt_bearer") and client_id is None:
            raise ValueError(f"the {grant} grant needs a client_id")
        if not refresh_margin >= 0:
            raise ValueError(f"refresh_margin must be >= 0 seconds, not {refresh_margin!r}")
        if not (isinstance(max_step_ups, int) and max_step_ups >= 0):
            raise ValueError(f"max_step_ups must be an int >= 0, not {max_step_ups!r}")
        if not fetch_timeout > 0:
            raise ValueError(f"fetch_timeout must be > 0 seconds, not {fetch_timeout!r}")
        if not (isinstance(max_metadata_bytes, int) and max_metadata_bytes > 0):
            raise ValueError(f"max_metadata_bytes must be an int > 0, not {max_metadata_bytes!r}")
        self.client_id = client_id
        self._private_key = private_key
        self._registrar = Registrar(
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=token_endpoint_auth_method,
            client_metadata_url=client_metadata_url,
            client_name=client_name,
            has_key=private_key is not None,
        )
        self.scope = scope
        self.grant: Grant = grant
        self.login = login
        self._assertion = assertion
        self._enterprise = enterprise
        self._tokens = TokenEndpoint(dpop)
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.refresh_margin = refresh_margin
        self.max_step_ups = max_step_ups
        self.fetch_timeout = fetch_timeout
        self.max_metadata_bytes = max_metadata_bytes
        self.ssl_context = ssl_context
        self._server: str | None = None
        self._entry: StoredLogin | None = None
        self._loaded = False
        self._lock = trio.Lock()
        self._discovery: Discovery | None = None
        self._step_ups = 0
        self._requested_scope: str | None = None
        #: Counters for diagnostics and the tests.
        self.logins = 0
        self.refreshes = 0
        self.revocations = 0
        #: Every URL the flows requested, in order: (method, URL without its query).
        self.requested: list[tuple[str, str]] = []

    def __repr__(self) -> str:
        secret = ", client_secret=<hidden>" if self._registrar.has_secret else ""
        return (
            f"OAuth(server={self._server!r}, client_id={self.client_id!r}{secret}, "
            f"grant={self.grant!r}, store={self.store!r})"
        )

    # -- the Auth seam ----------------------------------------------------------------------

    async def headers(self, method: str, url: str) -> Sequence[tuple[str, str]]:
        await self._bind(url)
        tokens = self.tokens
        if (
            tokens is not None
            and tokens.refresh_token
            and tokens.expires_within(self.refresh_margin, time.time())
        ):
            async with self._lock:
                if self.tokens is tokens:  # nobody refreshed it while this one waited
                    try:
                        await self._refresh(tokens)
                    except AuthorizationFailed as exc:
                        # The token may still work (a network blip): send it; a 401
                        # comes back to ``challenged`` if it does not.
                        log.warning("token refresh failed: %s", exc)
            tokens = self.tokens
        if tokens is None:
            return ()
        return self._tokens.resource_headers(method, url, tokens)

    async def challenged(
        self,
        status: int,
        response_headers: Mapping[str, str],
        sent: Sequence[tuple[str, str]],
    ) -> None:
        challenge = parse_challenge(response_headers.get("www-authenticate"))
        if self._tokens.resource_nonce(challenge, response_headers.get("dpop-nonce")):
            return  # RFC 9449 9: sent again with the resource's nonce in its proof
        sent_token = _bearer(sent)
        async with self._lock:
            current = self.tokens
            if current is not None and current.access_token != sent_token:
                return  # another request renewed it while this one was refused
            if status == 403:
                await self._step_up(challenge, current)
                return
            if (
                current is not None
                and current.refresh_token
                and challenge.error in (None, "invalid_token")
                and await self._refresh(current)
            ):
                return
            await self._authorize(challenge, None, status)

    # -- public operations ------------------------------------------------------------------

    @property
    def tokens(self) -> Tokens | None:
        """The tokens held now (None before a login)."""
        return self._entry.tokens if self._entry is not None else None

    async def login_to(self, server_url: str) -> None:
        """Log in to the server at ``server_url`` now, without waiting for a refusal
        (``mcp-runtime login``): discovery from the well-known URLs, then the grant."""
        await self._bind(server_url)
        async with self._lock:
            await self._authorize(Challenge(), self.scope, 0)

    async def forget(self, server_url: str) -> bool:
        """Remove the stored login for ``server_url`` (``mcp-runtime logout``); whether
        there was one. Its refresh token (else its access token) is then revoked where the
        authorization server offers revocation (RFC 7009), so that a copy of the file is of
        no use either; a revocation that fails is logged, the login is forgotten anyway."""
        key = canonical_resource(server_url)
        entry = await self.store.load(key)
        await self.store.delete(key)
        if key == self._server:
            self._entry = None
        if entry is not None and entry.tokens is not None and entry.client is not None:
            try:
                await self._revoke(key, entry, entry.tokens, entry.client)
            except AuthorizationFailed as exc:
                log.warning("the tokens were forgotten but not revoked: %s", exc)
        return entry is not None

    async def _revoke(
        self, key: str, entry: StoredLogin, tokens: Tokens, client: ClientRegistration
    ) -> None:
        issuer = entry.issuer or client.issuer
        if issuer is None:
            return
        async with self._http() as http:
            metadata = await Discovery(key).auth_server(http, issuer)
            if metadata.revocation_endpoint is None:
                return
            check_url(metadata.revocation_endpoint, "revocation endpoint")
            refresh = tokens.refresh_token
            request = revocation_request(
                metadata.revocation_endpoint,
                token=refresh or tokens.access_token,
                hint="refresh_token" if refresh else "access_token",
                client=client,
                method=self._auth_method(client, metadata),
                audience=metadata.issuer,
                private_key=self._private_key,
            )
            answer = await http.request(
                "POST",
                request.url,
                "revocation endpoint",
                body=request.body(),
                headers=request.headers,
                content_type="application/x-www-form-urlencoded",
            )
            if answer.status != 200:
                raise AuthorizationFailed(f"the revocation endpoint answered {answer.status}")
            self.revocations += 1

    # -- the flow ---------------------------------------------------------------------------

    async def _bind(self, url: str) -> None:
        key = canonical_resource(url.split("?", 1)[0])
        if self._server is None:
            self._server = key
            self._discovery = Discovery(key)
        elif self._server != key and _origin_of(self._server) != _origin_of(key):
            # The same server may use more than one URL (the legacy transport POSTs to the
            # endpoint its stream names, of the same origin); another origin is another
            # server, whose tokens this one must never see.
            raise AuthorizationFailed(
                f"this OAuth is for {self._server}, not {key}: use one OAuth per server"
            )
        if not self._loaded:
            self._loaded = True
            entry = await self.store.load(key)
            if entry is not None and self._entry is None:
                self._entry = entry

    async def _save(self, entry: StoredLogin) -> None:
        self._entry = entry
        assert self._server is not None
        await self.store.save(self._server, entry)

    def _http(self) -> OAuthHttp:
        http = OAuthHttp(
            timeout=self.fetch_timeout,
            max_bytes=self.max_metadata_bytes,
            ssl_context=self.ssl_context,
        )
        http.requested = self.requested
        return http

    async def _step_up(self, challenge: Challenge, current: Tokens | None) -> None:
        if challenge.error != "insufficient_scope":
            what = challenge.error_description or challenge.error or "no reason given"
            raise AuthorizationFailed(
                f"the server refused the token (HTTP 403: {what})", status=403
            )
        if self._step_ups >= self.max_step_ups:
            raise AuthorizationFailed(
                f"the server still asks for scope {challenge.scope or '(unnamed)'!r} after "
                f"{self._step_ups} step-up authorization(s) (max_step_ups)",
                status=403,
            )
        self._step_ups += 1
        held = self._requested_scope or (current.scope if current is not None else None)
        wanted = list(dict.fromkeys([*(held or "").split(), *challenge.scopes]))
        await self._authorize(challenge, " ".join(wanted) or None, 403)

    async def _authorize(self, challenge: Challenge, scope: str | None, status: int) -> None:
        """Discovery, registration and a grant (module docstring), then the tokens saved."""
        assert self._server is not None
        server = self._server
        async with self._http() as http:
            assert self._discovery is not None
            resource_document = await self._discovery.resource(http, challenge)
            if resource_document is not None:
                issuer = resource_document.authorization_servers[0]
                resource = resource_document.resource
            else:
                origin = urllib.parse.urlsplit(server)
                issuer, resource = f"{origin.scheme}://{origin.netloc}", server
            metadata = await self._discovery.auth_server(
                http, issuer, legacy=resource_document is None
            )
            self._tokens.choose_dpop(challenge, resource_document, metadata)
            scope = (
                scope
                or self.scope
                or challenge.scope
                or (
                    " ".join(resource_document.scopes_supported)
                    if resource_document is not None and resource_document.scopes_supported
                    else None
                )
            )
            if self.grant == "client_credentials":
                client = self._registrar.preregistered(metadata)
                request = client_credentials_request(
                    _endpoint(metadata.token_endpoint, "token"),
                    resource=resource,
                    scope=scope,
                    client=client,
                    method=self._auth_method(client, metadata),
                    audience=metadata.issuer,
                    private_key=self._private_key,
                )
                tokens = await self._tokens.request(http, request, None, status)
            elif self.grant == "jwt_bearer":
                client = self._registrar.preregistered(metadata)
                if self._enterprise is not None:
                    assertion = await self._tokens.id_jag(
                        http,
                        self._enterprise,
                        audience=metadata.issuer,
                        resource=resource,
                        scope=scope,
                        status=status,
                    )
                elif isinstance(self._assertion, str):
                    assertion = self._assertion
                else:
                    assert self._assertion is not None
                    assertion = await self._assertion()
                request = jwt_bearer_request(
                    _endpoint(metadata.token_endpoint, "token"),
                    assertion=assertion,
                    resource=resource,
                    scope=scope,
                    client=client,
                    method=self._auth_method(client, metadata),
                    audience=metadata.issuer,
                    private_key=self._private_key,
                )
                tokens = await self._tokens.request(http, request, None, status)
            else:
                scope = _with_offline_access(scope, metadata)
                client, tokens = await self._user_login(http, metadata, resource, scope, status)
        self._requested_scope = scope
        self.logins += 1
        log.info("logged in to %s (issuer %s)", server, metadata.issuer)
        await self._save(
            StoredLogin(
                resource=server,
                issuer=metadata.issuer,
                client=client,
                tokens=tokens,
                token_resource=resource if resource != server else None,
            )
        )

    async def _user_login(
        self,
        http: OAuthHttp,
        metadata: AuthServerMetadata,
        resource: str,
        scope: str | None,
        status: int,
    ) -> tuple[ClientRegistration, Tokens]:
        if self.login is None:
            again = f" --scope '{scope}'" if status == 403 and scope else ""
            raise AuthorizationFailed(
                f"{self._server} needs a login (HTTP {status or 401}): run "
                f"`mcp-runtime login {self._server}{again}`, or give OAuth a "
                "login=LoopbackLogin()",
                status=status,
            )
        methods = metadata.code_challenge_methods_supported
        if not methods or "S256" not in methods:
            # basic/authorization "Authorization Code Protection": without S256 advertised
            # the server cannot be trusted to check PKCE; the client must not proceed.
            raise AuthorizationFailed(
                f"the authorization server {metadata.issuer} does not advertise PKCE S256 "
                "(code_challenge_methods_supported): refusing to log in",
                status=status,
            )
        authorize_at = _endpoint(metadata.authorization_endpoint, "authorization")
        check_url(authorize_at, "authorization endpoint")
        async with self.login.redirect() as redirect:
            stored = self._entry.client if self._entry is not None else None
            client = await self._registrar.client(http, metadata, redirect.uri, stored)
            pkce, state = Pkce.new(), new_state()
            url = authorization_url(
                authorize_at,
                client_id=client.client_id,
                redirect_uri=redirect.uri,
                pkce=pkce,
                state=state,
                resource=resource,
                scope=scope,
            )
            params = await redirect.wait(url, state)
        try:
            code = code_from_callback(
                params,
                state=state,
                issuer=metadata.issuer,
                iss_required=metadata.authorization_response_iss_parameter_supported,
            )
        except CallbackError as exc:
            raise AuthorizationFailed(str(exc), status=status) from None
        request = authorization_code_request(
            _endpoint(metadata.token_endpoint, "token"),
            code=code,
            redirect_uri=redirect.uri,
            pkce=pkce,
            resource=resource,
            client=client,
            method=self._auth_method(client, metadata),
            audience=metadata.issuer,
            private_key=self._private_key,
        )
        return client, await self._tokens.request(http, request, None, status)

    def _auth_method(self, client: ClientRegistration, metadata: AuthServerMetadata) -> str:
        return choose_auth_method(
            client,
            metadata.token_endpoint_auth_methods_supported,
            self._private_key is not None,
        )

    async def _refresh(self, tokens: Tokens) -> bool:
        """Trade the refresh token for new tokens (the caller holds the lock). False when the
        authorization server refused it (revoked, expired): the tokens are dropped, and the
        next refusal starts a new login. :class:`AuthorizationFailed` when it could not be
        asked (the tokens are kept)."""
        entry = self._entry
        if entry is None or entry.client is None or tokens.refresh_token is None:
            return False
        self._tokens.resume(tokens)
        async with self._http() as http:
            issuer = entry.issuer or entry.client.issuer
            if issuer is None:
                return False
            assert self._discovery is not None
            metadata = await self._discovery.auth_server(http, issuer)
            request = refresh_request(
                _endpoint(metadata.token_endpoint, "token"),
                refresh_token=tokens.refresh_token,
                resource=entry.token_resource or entry.resource,
                scope=None,
                client=entry.client,
                method=self._auth_method(entry.client, metadata),
                audience=metadata.issuer,
                private_key=self._private_key,
            )
            try:
                fresh = await self._tokens.request(http, request, tokens, 0)
            except AuthorizationFailed as exc:
                if not isinstance(exc.__cause__, GrantError):
                    raise
                log.info("the refresh token was refused (%s): a new login is needed", exc)
                await self._save(
                    StoredLogin(
                        resource=entry.resource,
                        issuer=entry.issuer,
                        client=entry.client,
                        token_resource=entry.token_resource,
                    )
                )
                return False
        self.refreshes += 1
        await self._save(
            StoredLogin(
                resource=entry.resource,
                issuer=entry.issuer,
                client=entry.client,
                tokens=fresh,
                token_resource=entry.token_resource,
            )
        )
        return True


def _origin_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _endpoint(url: str | None, what: str) -> str:
    if url is None:
        raise AuthorizationFailed(f"the authorization server's metadata has no {what} endpoint")
    check_url(url, f"{what} endpoint")
    return url


def _with_offline_access(scope: str | None, metadata: AuthServerMetadata) -> str | None:
    """basic/authorization "Refresh Tokens": a client MAY add ``offline_access`` where the
    authorization server lists it; without it many servers issue no refresh token."""
    offered = metadata.scopes_supported or ()
    if "offline_access" not in offered:
        return scope
    words = (scope or "").split()
    return scope if "offline_access" in words else " ".join([*words, "offline_access"])


def _bearer(headers: Sequence[tuple[str, str]]) -> str | None:
    """The access token an ``Authorization`` header carried (Bearer or DPoP scheme)."""
    for name, value in headers:
        if name.lower() == "authorization":
            scheme, _, token = value.partition(" ")
            if scheme.lower() in ("bearer", "dpop"):
                return token.strip()
    return None
