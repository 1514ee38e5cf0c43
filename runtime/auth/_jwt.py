"""``JWTVerifier``: validates JWT access tokens locally (RFC 9068 profile, RFC 8725 practice).

The cryptography is PyJWT's (``pyjwt[crypto]``, the ``auth`` extra): signature checking and the
registered-claim checks are easy to get subtly wrong, and PyJWT does them carefully. This module
adds the policy an MCP resource server needs on top (MCP 2025-11-25 / 2026-07-28
basic/authorization "Token Handling"): the audience is always checked (RFC 8707 section 2: the
token must be issued for *this* server), algorithms are an explicit allow-list that never holds
``none`` and never mixes HMAC with public keys, each key only verifies the algorithms its type
allows (no algorithm confusion), and JWKS keys are chosen by ``kid``.

No network code lives here: a JWKS is handed in, or fetched through ``jwks_fetcher`` (or
``jwks_uri``: ``RemoteJWKS`` in ``_jwks.py``, cached by ``Cache-Control: max-age``) at most once
per ``jwks_refresh_interval`` seconds when a token names a key we do not hold (signing-key
rotation at the authorization server), and again whenever the fetcher's copy has expired.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import jwt
import trio
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from ._token import AccessToken, scopes_from_claims

__all__ = ["DEFAULT_ALGORITHMS", "MAX_LEEWAY", "JWKSFetcher", "JWTVerifier"]

log = logging.getLogger("mcp_runtime.auth")

#: The algorithms authorization servers sign access tokens with in practice (RFC 7518 section
#: 3.1 marks RS256 recommended and ES256 recommended+).
DEFAULT_ALGORITHMS: Final = ("RS256", "ES256")
#: Clock-skew allowance ceiling, seconds. Five minutes is the customary bound (Kerberos' default
#: skew); more than that stretches every token's lifetime noticeably.
MAX_LEEWAY: Final = 300.0
#: RFC 7518 section 3.2: an HMAC key must be at least as long as the hash output (HS256: 32 bytes).
_MIN_SECRET_BYTES: Final = 32
#: Tokens past this size are refused before any parsing; real access tokens are a few KiB.
_MAX_TOKEN_CHARS: Final = 16 * 1024

_RSA_ALGORITHMS: Final = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
_EC_ALGORITHM_BY_CURVE: Final = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
_EC_ALGORITHM_BY_CURVE_NAME: Final = {
    "secp256r1": "ES256",
    "secp384r1": "ES384",
    "secp521r1": "ES512",
}
_HMAC_ALGORITHMS: Final = frozenset({"HS256", "HS384", "HS512"})
_ASYMMETRIC_ALGORITHMS: Final = (
    _RSA_ALGORITHMS | frozenset(_EC_ALGORITHM_BY_CURVE.values()) | {"EdDSA"}
)

#: Returns the authorization server's JWKS document (the JSON at its ``jwks_uri``), parsed.
JWKSFetcher = Callable[[], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class _Key:
    key: Any  # a cryptography public key object, or the HMAC secret as bytes
    algorithms: frozenset[str]  # what this key may verify, already cut to the configured list


class JWTVerifier:
    """A ``TokenVerifier`` for JWT access tokens.

    Give exactly one key source: ``jwks`` (a JWKS document) and/or ``jwks_fetcher``; or
    ``public_key`` (PEM); or ``secret`` (an HMAC key of at least 32 bytes, for HS256/384/512
    only). Required claims: ``exp``, ``aud`` (must match ``audience``: the server's canonical
    resource URI, or any of a list of them), ``iss`` when ``issuer`` is set, plus
    ``required_claims``. ``exp``/``nbf``/``iat`` are checked with ``leeway`` seconds of skew
    (0..300). ``token_type``, when set (e.g. ``"at+jwt"``, RFC 9068 section 2.1), must match
    the ``typ`` header.

    The subject is ``sub``, else ``client_id`` (client-credentials tokens); a token with
    neither is invalid. The client is ``client_id`` (RFC 9068) or ``azp``.

    Construction errors are ``ValueError``/``TypeError`` and never quote key material. Calls
    return None for every invalid token and never raise for one; a failing ``jwks_fetcher``
    is logged (exception type only) and treated as "no new keys". Cancellation propagates.
    """

    def __init__(
        self,
        *,
        audience: str | Sequence[str],
        issuer: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        jwks_fetcher: JWKSFetcher | None = None,
        jwks_uri: str | None = None,
        public_key: str | bytes | None = None,
        secret: str | bytes | None = None,
        algorithms: Iterable[str] | None = None,
        leeway: float = 60.0,
        required_claims: Iterable[str] = (),
        token_type: str | None = None,
        jwks_refresh_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if jwks_uri is not None:
            if jwks_fetcher is not None:
                raise ValueError("give jwks_uri or jwks_fetcher, not both")
            from ._jwks import RemoteJWKS

            jwks_fetcher = RemoteJWKS(jwks_uri, clock=clock)
        sources = sum(
            (
                jwks is not None or jwks_fetcher is not None,
                public_key is not None,
                secret is not None,
            )
        )
        if sources != 1:
            raise ValueError("give exactly one key source: jwks/jwks_fetcher, public_key or secret")
        if isinstance(audience, str):
            audience = [audience]
        self._audience = tuple(audience)
        if not self._audience or not all(isinstance(a, str) and a for a in self._audience):
            raise ValueError("audience must be a non-empty string or list of non-empty strings")
        if issuer is not None and not issuer:
            raise ValueError("issuer must be a non-empty string or None")
        self._issuer = issuer
        if not 0 <= leeway <= MAX_LEEWAY:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY:g} seconds")
        self._leeway = float(leeway)
        if jwks_refresh_interval <= 0:
            raise ValueError("jwks_refresh_interval must be positive")
        self._refresh_interval = float(jwks_refresh_interval)
        self._token_type = token_type
        self._clock = clock

        if algorithms is None:
            algorithms = ("HS256",) if secret is not None else DEFAULT_ALGORITHMS
        self._algorithms = frozenset(algorithms)
        self._check_algorithms(symmetric=secret is not None)
        required = {"exp", "aud", *required_claims}
        if issuer is not None:
            required.add("iss")
        self._required = sorted(required)

        self._static: _Key | None = None
        self._by_kid: dict[str, _Key] = {}
        self._all: list[_Key] = []
        self._fetcher = jwks_fetcher
        self._last_fetch: float | None = None
        self._refresh_lock = trio.Lock()
        if secret is not None:
            self._static = self._secret_key(secret)
        elif public_key is not None:
            self._static = self._pem_key(public_key)
        elif jwks is not None:
            self._install(jwks)

    def __repr__(self) -> str:
        if self._static is not None:
            source = "secret" if isinstance(self._static.key, bytes) else "public_key"
        else:
            source = f"jwks({len(self._all)} keys{', fetcher' if self._fetcher else ''})"
        return (
            f"JWTVerifier(issuer={self._issuer!r}, audience={list(self._audience)!r}, "
            f"algorithms={sorted(self._algorithms)!r}, keys={source})"
        )

    async def __call__(self, token: str, /) -> AccessToken | None:
        if not isinstance(token, str) or not token or len(token) > _MAX_TOKEN_CHARS:
            return _reject("malformed")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return _reject("malformed")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            # Covers "none" and any HMAC/public-key swap: neither is ever in the allow-list
            # next to the other kind (see _check_algorithms).
            return _reject("algorithm_not_allowed")
        if self._token_type is not None and not _typ_matches(header.get("typ"), self._token_type):
            return _reject("wrong_typ")
        key = await self._select_key(header.get("kid"))
        if key is None:
            return _reject("unknown_key")
        if alg not in key.algorithms:
            return _reject("algorithm_key_mismatch")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=list(self._audience),
                issuer=self._issuer,
                leeway=self._leeway,
                options={"require": self._required},
            )
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            return _reject(_reason(exc))
        return _principal(claims)

    # -- keys ----------------------------------------------------------------------------------

    def _check_algorithms(self, *, symmetric: bool) -> None:
        if not self._algorithms:
            raise ValueError("algorithms must not be empty")
        if any(a.lower() == "none" for a in self._algorithms):
            raise ValueError('the "none" algorithm is never accepted')
        allowed = _HMAC_ALGORITHMS if symmetric else _ASYMMETRIC_ALGORITHMS
        unsupported = self._algorithms - allowed
        if unsupported:
            kind = "an HMAC secret" if symmetric else "public keys (HMAC needs a static secret)"
            raise ValueError(f"algorithms {sorted(unsupported)} cannot be used with {kind}")

    def _secret_key(self, secret: str | bytes) -> _Key:
        raw = secret.encode() if isinstance(secret, str) else bytes(secret)
        if len(raw) < _MIN_SECRET_BYTES:
            raise ValueError(f"an HMAC secret must be at least {_MIN_SECRET_BYTES} bytes")
        return _Key(raw, self._algorithms)

    def _pem_key(self, pem: str | bytes) -> _Key:
        try:
            key = load_pem_public_key(pem.encode() if isinstance(pem, str) else pem)
        except ValueError:
            raise ValueError("public_key is not a PEM-encoded public key") from None
        if isinstance(key, rsa.RSAPublicKey):
            kinds = _RSA_ALGORITHMS
        elif isinstance(key, ec.EllipticCurvePublicKey):
            curve_alg = _EC_ALGORITHM_BY_CURVE_NAME.get(key.curve.name)
            kinds = frozenset({curve_alg} if curve_alg else ())
        elif isinstance(key, ed25519.Ed25519PublicKey):
            kinds = frozenset({"EdDSA"})
        else:
            raise TypeError("public_key must be an RSA, EC (P-256/384/521) or Ed25519 key")
        usable = kinds & self._algorithms
        if not usable:
            raise ValueError("public_key cannot verify any of the configured algorithms")
        return _Key(key, usable)

    def _install(self, document: Mapping[str, Any]) -> None:
        """Replace the key set with ``document``'s usable signing keys (ValueError if none)."""
        entries = document.get("keys") if isinstance(document, Mapping) else None
        if not isinstance(entries, list):
            raise ValueError('a JWKS document must be an object with a "keys" list')
        by_kid: dict[str, _Key] = {}
        every: list[_Key] = []
        for entry in entries:
            key = self._jwk_key(entry)
            if key is None:
                continue
            every.append(key)
            kid = entry.get("kid")
            if isinstance(kid, str):
                by_kid.setdefault(kid, key)
        if not every:
            raise ValueError("the JWKS holds no signing key usable with the configured algorithms")
        self._by_kid, self._all = by_kid, every

    def _jwk_key(self, entry: Any) -> _Key | None:
        if not isinstance(entry, Mapping):
            return None
        # RFC 7517 section 4.2/4.3: only keys meant for signature verification; never a
        # symmetric ("oct") key or one carrying private material from a published set.
        if entry.get("use", "sig") != "sig" or "d" in entry or entry.get("kty") == "oct":
            return None
        ops = entry.get("key_ops")
        if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
            return None
        kty = entry.get("kty")
        if kty == "RSA":
            kinds = _RSA_ALGORITHMS
        elif kty == "EC":
            curve_alg = _EC_ALGORITHM_BY_CURVE.get(entry.get("crv", ""))
            kinds = frozenset({curve_alg} if curve_alg else ())
        elif kty == "OKP" and entry.get("crv") == "Ed25519":
            kinds = frozenset({"EdDSA"})
        else:
            return None
        pinned = entry.get("alg")
        if pinned is not None:
            kinds = kinds & {pinned}
        usable = kinds & self._algorithms
        if not usable:
            return None
        try:
            parsed = jwt.PyJWK(dict(entry), algorithm=min(usable))
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            log.warning("auth.jwks_key_skipped reason=unparsable kty=%s", kty)
            return None
        return _Key(parsed.key, usable)

    def _lookup(self, kid: str | None) -> _Key | None:
        if kid is None:
            # A token without "kid" is only unambiguous against a single-key set.
            return self._all[0] if len(self._all) == 1 else None
        return self._by_kid.get(kid)

    async def _select_key(self, kid: Any) -> _Key | None:
        if self._static is not None:
            return self._static
        if kid is not None and not isinstance(kid, str):
            return None
        key = self._lookup(kid)
        if self._fetcher is not None and (
            key is None or (_expired(self._fetcher) and self._may_fetch())
        ):
            await self._refresh(kid, forced=key is not None)
            key = self._lookup(kid)
        return key

    def _may_fetch(self) -> bool:
        last = self._last_fetch
        return last is None or self._clock() - last >= self._refresh_interval

    async def _refresh(self, kid: str | None, *, forced: bool = False) -> None:
        """Fetch the JWKS: for an unknown ``kid`` (rate-limited), or ``forced`` when the
        fetcher says its copy is past its max-age (``RemoteJWKS.expired``)."""
        async with self._refresh_lock:
            if forced and not _expired(self._fetcher):
                return  # another task refreshed it while we waited for the lock
            if not forced and self._lookup(kid) is not None:
                return  # another task fetched it while we waited for the lock
            now = self._clock()
            # Both kinds are rate-limited: an authorization server that is down costs one
            # fetch per interval, and the keys we hold keep verifying meanwhile.
            if not self._may_fetch():
                log.debug("auth.jwks_refresh_skipped reason=rate_limited")
                return
            self._last_fetch = now
            assert self._fetcher is not None
            try:
                document = await self._fetcher()
            except Exception as exc:
                log.warning("auth.jwks_refresh_failed exc_type=%s", type(exc).__name__)
                return
            try:
                self._install(document)
            except ValueError:
                log.warning("auth.jwks_refresh_failed reason=unusable_document")
                return
            log.info("auth.jwks_refreshed keys=%d", len(self._all))


def _expired(fetcher: object) -> bool:
    """A fetcher that caches (``RemoteJWKS``) says when its copy is stale; others never are."""
    return bool(getattr(fetcher, "expired", False))


def _typ_matches(typ: Any, expected: str) -> bool:
    # RFC 7515 section 4.1.9: "application/" may be omitted, media types compare case-insensitively.
    if not isinstance(typ, str):
        return False
    given: str = typ.lower()
    return given in (expected.lower(), f"application/{expected.lower()}")


def _principal(claims: dict[str, Any]) -> AccessToken | None:
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        return _reject("bad_exp")  # RFC 7519 NumericDate is a JSON number, not a string
    scopes = scopes_from_claims(claims)
    if scopes is None:
        return _reject("bad_scope")
    client_id = claims.get("client_id", claims.get("azp"))
    if client_id is not None and not isinstance(client_id, str):
        return _reject("bad_client_id")
    subject = claims.get("sub")
    if subject is None:
        subject = client_id
    if not isinstance(subject, str) or not subject:
        return _reject("no_subject")
    return AccessToken(
        subject=subject,
        scopes=scopes,
        client_id=client_id,
        expires_at=float(exp),
        claims=MappingProxyType(claims),
    )


def _reason(exc: BaseException) -> str:
    # The exception's class names the failure; its message is never logged (some PyJWT
    # messages quote header or claim values, which are attacker-controlled).
    return type(exc).__name__


def _reject(reason: str) -> AccessToken | None:
    """Log why a token was refused (the reason only) and return the verifier's "invalid"."""
    log.debug("auth.token_invalid reason=%s", reason)
    return None
