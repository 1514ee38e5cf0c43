"""The OAuth requests as data, and their answers read (sans-IO).

- The authorization request (OAuth 2.1 4.1.1): ``response_type=code``, PKCE S256, ``state``,
  the ``resource`` (RFC 8707 2.1; MCP requires it on both the authorization and the token
  request) and the scope when there is one.
- The authorization response (4.1.2): ``state`` must be ours; ``iss`` is checked against
  the issuer recorded before the redirect (RFC 9207 2.4, as MCP profiles it: a present
  ``iss`` is always compared, an absent one refused only when the metadata promised it).
  On a mismatch the response's ``error`` fields are not shown: they came from someone else.
- Token requests: the authorization code (4.1.3), the refresh token (4.3.1) and client
  credentials (4.2.1) grants, each with ``resource``; the answer (3.2.3) must be a JSON object
  with an ``access_token`` and a ``token_type`` of Bearer; an error answer (3.2.4) becomes
  :class:`GrantError` with its ``error`` code.
- The JWT bearer grant (RFC 7523 2.1): an assertion the client was given (a workload
  identity token) or obtained (enterprise-managed authorization: an Identity Assertion JWT
  Authorization Grant, "ID-JAG", from the enterprise IdP by RFC 8693 token exchange).
- Client authentication at the token endpoint (OAuth 2.1 2.4; RFC 7523 2.2 for
  ``private_key_jwt``): ``none`` (a public client names itself with ``client_id``),
  ``client_secret_basic`` (the credentials form-encoded, then Basic, RFC 6749 2.3.1),
  ``client_secret_post``, ``private_key_jwt`` (a short-lived JWT signed with the client's key,
  made by PyJWT: never hand-rolled crypto).
"""

from __future__ import annotations

import base64
import dataclasses
import secrets
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from ._oauth_pkce import Pkce
from ._oauth_store import ClientRegistration, Tokens

__all__ = [
    "AUTH_METHODS",
    "CallbackError",
    "GrantError",
    "TokenRequest",
    "authorization_code_request",
    "authorization_url",
    "choose_auth_method",
    "client_credentials_request",
    "code_from_callback",
    "id_jag_exchange_request",
    "jwt_bearer_request",
    "read_exchanged_token",
    "read_token_response",
    "refresh_request",
    "revocation_request",
]

AUTH_METHODS: Final = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")
_JWT_BEARER_ASSERTION: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: RFC 7523 2.1: the grant type of an assertion used as an authorization grant.
JWT_BEARER_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: RFC 8693 2.1 and 3: token exchange, and the token types enterprise-managed
#: authorization exchanges (an OpenID Connect ID token for an ID-JAG).
TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE: Final = "urn:ietf:params:oauth:token-type:id-jag"
#: Lifetime of a ``private_key_jwt`` assertion, seconds: long enough for clock skew, short
#: enough that a captured one is useless soon (RFC 7523 3 leaves it to the client).
_ASSERTION_LIFETIME: Final = 60
#: Longest ``error_description`` repeated in an error message.
_MAX_DESCRIPTION: Final = 300


class GrantError(Exception):
    """The authorization server refused a token request (``error``: its RFC 6749 5.2 code)."""

    def __init__(self, error: str, description: str | None = None, status: int = 0) -> None:
        detail = f": {description[:_MAX_DESCRIPTION]}" if description else ""
        super().__init__(f"{error}{detail}")
        self.error = error
        self.status = status


class CallbackError(Exception):
    """The authorization response cannot be used (wrong state or issuer, or an error)."""


@dataclasses.dataclass(frozen=True, slots=True)
class TokenRequest:
    """One POST to the token endpoint: ``form`` (form-encoded) and extra ``headers``."""

    url: str
    form: dict[str, str]
    headers: tuple[tuple[str, str], ...] = ()

    def body(self) -> bytes:
        return urllib.parse.urlencode(self.form).encode("ascii")

    def __repr__(self) -> str:  # the form holds codes, verifiers, secrets
        return f"TokenRequest(url={self.url!r}, grant_type={self.form.get('grant_type')!r})"


def authorization_url(
    endpoint: str,
    *,
    client_id: str,
    redirect_uri: str,
    pkce: Pkce,
    state: str,
    resource: str,
    scope: str | None,
) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": pkce.challenge,
        "code_challenge_method": pkce.method,
        "state": state,
        "resource": resource,
    }
    if scope:
        params["scope"] = scope
    separator = "&" if urllib.parse.urlsplit(endpoint).query else "?"
    return endpoint + separator + urllib.parse.urlencode(params)


def code_from_callback(
    params: Mapping[str, str], *, state: str, issuer: str, iss_required: bool
) -> str:
    """The authorization code of a redirect's query ``params``, checked (module docstring)."""
    if params.get("state") != state:
        raise CallbackError("the authorization response's state is not ours")
    iss = params.get("iss")
    if iss is not None and iss != issuer:
        raise CallbackError(
            f"the authorization response came from issuer {iss[:200]!r}, not {issuer[:200]!r} "
            "(RFC 9207): ignored"
        )
    if iss is None and iss_required:
        raise CallbackError(
            "the authorization response has no iss, which the authorization server's "
            "metadata promises (RFC 9207)"
        )
    error = params.get("error")
    if error is not None:
        description = params.get("error_description")
        detail = f": {description[:_MAX_DESCRIPTION]}" if description else ""
        raise CallbackError(f"the authorization server refused: {error[:100]}{detail}")
    code = params.get("code")
    if not code:
        raise CallbackError("the authorization response has no code")
    return code


def choose_auth_method(
    client: ClientRegistration, supported: Sequence[str] | None, has_key: bool
) -> str:
    """How the client authenticates at the token endpoint: what its registration says, else
    ``private_key_jwt`` with a key, else the secret the way the server takes it (Basic unless
    it lists only POST; RFC 8414 2: the default is ``client_secret_basic``), else ``none``."""
    if client.token_endpoint_auth_method in AUTH_METHODS:
        return client.token_endpoint_auth_method
    offered = list(supported) if supported else ["client_secret_basic"]
    if has_key:
        return "private_key_jwt"
    if client.client_secret:
        if "client_secret_basic" in offered or "client_secret_post" not in offered:
            return "client_secret_basic"
        return "client_secret_post"
    return "none"


def _authenticate(
    form: dict[str, str],
    client: ClientRegistration,
    method: str,
    *,
    audience: str,
    private_key: Any = None,
    signing_alg: str | None = None,
) -> tuple[tuple[str, str], ...]:
    """Add the client's authentication to ``form``; the headers it needs."""
    if method == "client_secret_basic" and client.client_secret is not None:
        user = urllib.parse.quote(client.client_id, safe="")
        password = urllib.parse.quote(client.client_secret, safe="")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        return (("Authorization", f"Basic {token}"),)
    form["client_id"] = client.client_id
    if method == "client_secret_post" and client.client_secret is not None:
        form["client_secret"] = client.client_secret
    elif method == "private_key_jwt":
        form["client_assertion_type"] = _JWT_BEARER_ASSERTION
        form["client_assertion"] = client_assertion(
            client.client_id, audience, private_key, signing_alg
        )
    return ()


def client_assertion(client_id: str, audience: str, key: Any, alg: str | None = None) -> str:
    """RFC 7523 2.2 / 3: a JWT whose issuer and subject are the client, for ``audience``
    (the authorization server's issuer), signed with ``key`` (PEM text or a key object)."""
    import jwt  # the auth extra: PyJWT

    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + _ASSERTION_LIFETIME,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode(claims, key, algorithm=alg or _algorithm_for(key))


def _algorithm_for(key: Any) -> str:
    """The JWS algorithm for the key's type (RFC 7518 3.1): RS256 for RSA, ES256/384/512 by
    the curve, EdDSA for Ed25519."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, (str, bytes)):
        data = key.encode() if isinstance(key, str) else key
        key = serialization.load_pem_private_key(data, password=None)
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {"secp384r1": "ES384", "secp521r1": "ES512"}.get(key.curve.name, "ES256")
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    return "RS256"


def authorization_code_request(
    token_endpoint: str,
    *,
    code: str,
    redirect_uri: str,
    pkce: Pkce,
    resource: str,
    client: ClientRegistration,
    method: str,
    audience: str,
    private_key: Any = None,
) -> TokenRequest:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": pkce.verifier,
        "resource": resource,
    }
    headers = _authenticate(form, client, method, audience=audience, private_key=private_key)
    return TokenRequest(token_endpoint, form, headers)


def refresh_request(
    token_endpoint: str,
    *,
    refresh_token: str,
    resource: str,
    scope: str | None,
    client: ClientRegistration,
    method: str,
    audience: str,
    private_key: Any = None,
) -> TokenRequest:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token, "resource": resource}
    if scope:
        form["scope"] = scope
    headers = _authenticate(form, client, method, audience=audience, private_key=private_key)
    return TokenRequest(token_endpoint, form, headers)


def client_credentials_request(
    token_endpoint: str,
    *,
    resource: str,
    scope: str | None,
    client: ClientRegistration,
    method: str,
    audience: str,
    private_key: Any = None,
) -> TokenRequest:
    form = {"grant_type": "client_credentials", "resource": resource}
    if scope:
        form["scope"] = scope
    headers = _authenticate(form, client, method, audience=audience, private_key=private_key)
    return TokenRequest(token_endpoint, form, headers)


def jwt_bearer_request(
    token_endpoint: str,
    *,
    assertion: str,
    resource: str,
    scope: str | None,
    client: ClientRegistration,
    method: str,
    audience: str,
    private_key: Any = None,
) -> TokenRequest:
    form = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion, "resource": resource}
    if scope:
        form["scope"] = scope
    headers = _authenticate(form, client, method, audience=audience, private_key=private_key)
    return TokenRequest(token_endpoint, form, headers)


def revocation_request(
    revocation_endpoint: str,
    *,
    token: str,
    hint: str,
    client: ClientRegistration,
    method: str,
    audience: str,
    private_key: Any = None,
) -> TokenRequest:
    """RFC 7009 2.1: revoke ``token`` (``hint``: ``refresh_token`` or ``access_token``),
    the client authenticated as at the token endpoint."""
    form = {"token": token, "token_type_hint": hint}
    headers = _authenticate(form, client, method, audience=audience, private_key=private_key)
    return TokenRequest(revocation_endpoint, form, headers)


def id_jag_exchange_request(
    idp_token_endpoint: str,
    *,
    id_token: str,
    audience: str,
    resource: str,
    scope: str | None,
    client: ClientRegistration,
) -> TokenRequest:
    """RFC 8693 2.1 at the enterprise IdP: the user's ID token for an ID-JAG whose audience
    is the authorization server's issuer and whose resource is the MCP server."""
    form = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "requested_token_type": ID_JAG_TYPE,
        "audience": audience,
        "resource": resource,
    }
    if scope:
        form["scope"] = scope
    method = "client_secret_basic" if client.client_secret else "none"
    headers = _authenticate(form, client, method, audience=audience)
    return TokenRequest(idp_token_endpoint, form, headers)


def read_exchanged_token(status: int, body: bytes) -> str:
    """The ID-JAG of an RFC 8693 2.2.1 answer; :class:`GrantError` otherwise."""
    try:
        document = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        document = None
    if not isinstance(document, dict):
        raise GrantError("invalid_response", f"HTTP {status}, not a JSON object", status)
    if status >= 300 or "error" in document:
        error, description = document.get("error"), document.get("error_description")
        raise GrantError(
            error if isinstance(error, str) else f"HTTP {status}",
            description if isinstance(description, str) else None,
            status,
        )
    token = document.get("access_token")
    if not isinstance(token, str) or not token:
        raise GrantError("invalid_response", "no access_token", status)
    if document.get("issued_token_type") != ID_JAG_TYPE:
        raise GrantError("invalid_response", "the issued token is not an ID-JAG", status)
    return token


def read_token_response(
    status: int, body: bytes, *, now: float, previous: Tokens | None = None
) -> Tokens:
    """The tokens of a token endpoint's answer; :class:`GrantError` for a refusal or an
    answer that is not one. A refresh answer without a new refresh token keeps ``previous``'s
    (OAuth 2.1 4.3.3: the server may keep the old one valid)."""
    try:
        document = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        document = None
    if not isinstance(document, dict):
        raise GrantError("invalid_response", f"HTTP {status}, not a JSON object", status)
    if status >= 300 or "error" in document:
        error = document.get("error")
        description = document.get("error_description")
        raise GrantError(
            error if isinstance(error, str) else f"HTTP {status}",
            description if isinstance(description, str) else None,
            status,
        )
    access = document.get("access_token")
    token_type = document.get("token_type")
    if not isinstance(access, str) or not access:
        raise GrantError("invalid_response", "no access_token", status)
    if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop"):
        raise GrantError("invalid_response", f"token_type {str(token_type)[:40]!r}", status)
    expires_in = document.get("expires_in")
    expires_at = None
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
        expires_at = now + max(0.0, float(expires_in))
    refresh = document.get("refresh_token")
    if not isinstance(refresh, str) or not refresh:
        refresh = previous.refresh_token if previous is not None else None
    scope = document.get("scope")
    if not isinstance(scope, str):
        scope = previous.scope if previous is not None else None
    return Tokens(
        access_token=access,
        token_type="DPoP" if token_type.lower() == "dpop" else "Bearer",
        expires_at=expires_at,
        refresh_token=refresh,
        scope=scope,
    )
