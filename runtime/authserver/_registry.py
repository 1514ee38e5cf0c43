"""Registered clients: Dynamic Client Registration (RFC 7591) and client authentication at
the token and revocation endpoints (RFC 6749 section 2.3)."""

from __future__ import annotations

import hmac
import logging
import secrets
import time

import msgspec

from ..auth import RouteRequest, RouteResponse
from ..stores import GrantStore
from ._clients import RegistrationError, validate_registration
from ._http import basic_credentials, json_response, oauth_error
from ._records import Client, decode, encode, hashed
from ._settings import AuthServerSettings

__all__ = ["ClientRegistry"]

log = logging.getLogger("mcp_runtime.authserver")

_CLIENTS_GROUP = "clients"


class ClientRegistry:
    def __init__(
        self, store: GrantStore, settings: AuthServerSettings, scopes: frozenset[str]
    ) -> None:
        self._store = store
        self._settings = settings
        self._scopes = scopes

    async def register(self, request: RouteRequest) -> RouteResponse:
        """POST /register: RFC 7591 section 3. 201 with the client's information, 400 with
        ``invalid_redirect_uri`` / ``invalid_client_metadata``, 429 at ``max_clients``."""
        if request.method != "POST":
            return oauth_error(405, "invalid_request", "POST a JSON client metadata document")
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return oauth_error(400, "invalid_client_metadata", "the body must be application/json")
        if len(request.body) > 64 * 1024:
            return oauth_error(413, "invalid_client_metadata", "the metadata is larger than 64 KiB")
        try:
            document = msgspec.json.decode(request.body)
        except msgspec.DecodeError:
            return oauth_error(400, "invalid_client_metadata", "the body is not JSON")
        try:
            accepted = validate_registration(document, self._settings.registration, self._scopes)
        except RegistrationError as exc:
            return oauth_error(400, exc.error, exc.description)
        client_id = secrets.token_urlsafe(24)
        settings = self._settings
        if not await self._store.join(
            _CLIENTS_GROUP, client_id, settings.client_idle_ttl, settings.max_clients
        ):
            log.warning(
                "authserver.registration_refused limit=max_clients=%d", settings.max_clients
            )
            return oauth_error(
                429,
                "temporarily_unavailable",
                f"max_clients={settings.max_clients} clients are registered; unused ones are "
                f"forgotten after client_idle_ttl={settings.client_idle_ttl:g} s",
                extra=(("Retry-After", "3600"),),
            )
        method = accepted["token_endpoint_auth_method"]
        secret = None if method == "none" else secrets.token_urlsafe(32)
        now = int(time.time())
        client = Client(
            client_id=client_id,
            redirect_uris=accepted["redirect_uris"],
            client_name=accepted["client_name"],
            token_endpoint_auth_method=method,
            secret_hash=None if secret is None else hashed(secret),
            scope=accepted["scope"],
            issued_at=now,
        )
        await self._store.put(f"client:{client_id}", encode(client), settings.client_idle_ttl)
        log.info("authserver.client_registered client_id=%s method=%s", client_id, method)
        answer = {
            "client_id": client_id,
            "client_id_issued_at": now,
            **{name: value for name, value in accepted.items() if value is not None},
        }
        if secret is not None:
            answer["client_secret"] = secret
            answer["client_secret_expires_at"] = 0
        return json_response(201, answer)

    async def load(self, client_id: str) -> Client | None:
        """The client, its idle lifetime renewed (it is in use); None when unknown."""
        data = await self._store.get(f"client:{client_id}")
        client = None if data is None else decode(data, Client)
        if client is not None:
            ttl = self._settings.client_idle_ttl
            await self._store.put(f"client:{client_id}", data or b"", ttl)
            await self._store.join(_CLIENTS_GROUP, client_id, ttl, self._settings.max_clients)
        return client

    async def authenticate(
        self, request: RouteRequest, params: dict[str, str]
    ) -> Client | RouteResponse:
        """The client making a token or revocation request, or the 400/401 refusing it
        (RFC 6749 section 5.2 ``invalid_client``; ``WWW-Authenticate: Basic`` when Basic
        credentials were tried)."""
        basic = basic_credentials(request)
        if basic is False:
            return _invalid_client(True)
        if isinstance(basic, tuple):
            if "client_secret" in params:
                return oauth_error(400, "invalid_request", "client credentials given twice")
            client_id, secret = basic
            if params.get("client_id", client_id) != client_id:
                return oauth_error(400, "invalid_request", "client_id differs from Basic's")
        else:
            client_id = params.get("client_id", "")
            secret = params.get("client_secret", "")
        client = await self.load(client_id) if client_id else None
        if client is None:
            return _invalid_client(isinstance(basic, tuple))
        if client.secret_hash is None:
            if secret:  # a public client has no secret: one sent is a confused client
                return _invalid_client(isinstance(basic, tuple))
            return client
        if not secret or not hmac.compare_digest(hashed(secret), client.secret_hash):
            return _invalid_client(isinstance(basic, tuple))
        return client


def _invalid_client(basic: bool) -> RouteResponse:
    extra = (("WWW-Authenticate", 'Basic realm="token"'),) if basic else ()
    return oauth_error(401, "invalid_client", "client authentication failed", extra=extra)
