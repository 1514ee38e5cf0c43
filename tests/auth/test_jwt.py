"""JWTVerifier: real keys, real signatures, every way a token must be refused."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
import trio

from runtime.auth import AccessToken, JWTVerifier

from ._tokens import ISSUER, RESOURCE, SigningKey, claims, forge, hmac_sha256, jwks, make_rsa

SECRET = b"k" * 32


def verifier(*keys: SigningKey, **options: Any) -> JWTVerifier:
    options.setdefault("issuer", ISSUER)
    options.setdefault("audience", RESOURCE)
    return JWTVerifier(jwks=jwks(*keys), **options)


# -- accepted -----------------------------------------------------------------------------------


async def test_valid_rs256_token_gives_the_principal(rsa_key: SigningKey) -> None:
    payload = claims()
    principal = await verifier(rsa_key)(rsa_key.sign(payload))
    assert principal == AccessToken(
        subject="user-42",
        scopes=frozenset({"mcp:read", "files:read"}),
        client_id="client-7",
        expires_at=float(payload["exp"]),
    )
    assert principal.claims["iss"] == ISSUER
    with pytest.raises(TypeError):
        principal.claims["sub"] = "someone-else"  # type: ignore[index]


async def test_kid_selects_the_key_in_a_mixed_set(rsa_key: SigningKey, ec_key: SigningKey) -> None:
    check = verifier(rsa_key, ec_key)
    assert await check(ec_key.sign(claims(sub="ec-user"))) is not None
    assert await check(rsa_key.sign(claims(sub="rsa-user"))) is not None


async def test_scp_list_is_read_when_scope_is_absent(rsa_key: SigningKey) -> None:
    principal = await verifier(rsa_key)(rsa_key.sign(claims(scope=None, scp=["a", "b"])))
    assert principal is not None and principal.scopes == {"a", "b"}


async def test_no_scope_claim_means_no_scopes(rsa_key: SigningKey) -> None:
    principal = await verifier(rsa_key)(rsa_key.sign(claims(scope=None)))
    assert principal is not None and principal.scopes == frozenset()


async def test_audience_list_in_token_and_in_config(rsa_key: SigningKey) -> None:
    token = rsa_key.sign(claims(aud=["https://other.example.com", RESOURCE]))
    assert await verifier(rsa_key)(token) is not None
    either = verifier(rsa_key, audience=["https://mcp.example.com", RESOURCE])
    assert await either(rsa_key.sign(claims(aud="https://mcp.example.com"))) is not None


async def test_subject_falls_back_to_client_id(rsa_key: SigningKey) -> None:
    principal = await verifier(rsa_key)(rsa_key.sign(claims(sub=None)))
    assert principal is not None and principal.subject == "client-7"
    assert await verifier(rsa_key)(rsa_key.sign(claims(sub=None, client_id=None))) is None


async def test_token_without_kid_only_against_a_single_key(
    rsa_key: SigningKey, ec_key: SigningKey
) -> None:
    token = rsa_key.sign(claims(), kid=None)
    assert await verifier(rsa_key)(token) is not None
    assert await verifier(rsa_key, ec_key)(token) is None


async def test_static_public_key_and_static_secret(rsa_key: SigningKey) -> None:
    pem = JWTVerifier(public_key=rsa_key.public_pem, issuer=ISSUER, audience=RESOURCE)
    assert await pem(rsa_key.sign(claims())) is not None
    hs = JWTVerifier(secret=SECRET, issuer=ISSUER, audience=RESOURCE)
    token = forge({"alg": "HS256", "typ": "JWT"}, claims(), hmac_sha256(SECRET))
    assert await hs(token) is not None


async def test_token_type_is_checked_when_configured(rsa_key: SigningKey) -> None:
    check = verifier(rsa_key, token_type="at+jwt")
    assert await check(rsa_key.sign(claims(), typ="at+jwt")) is not None
    assert await check(rsa_key.sign(claims(), typ="application/at+JWT")) is not None
    assert await check(rsa_key.sign(claims(), typ="JWT")) is None


# -- refused ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "valid"),
    [
        ({"exp": -30}, True),  # expired, but within the 60 s leeway
        ({"exp": -120}, False),  # expired beyond the leeway
        ({"nbf": 30}, True),  # not yet valid, within the leeway
        ({"nbf": 120}, False),  # not yet valid beyond it
        ({"iat": 120}, False),  # issued in the future beyond it
    ],
)
async def test_time_claims_honour_the_leeway(
    rsa_key: SigningKey, overrides: dict[str, int], valid: bool
) -> None:
    now = int(time.time())
    shifted = {name: now + delta for name, delta in overrides.items()}
    principal = await verifier(rsa_key)(rsa_key.sign(claims(**shifted)))
    assert (principal is not None) is valid


async def test_zero_leeway_refuses_a_just_expired_token(rsa_key: SigningKey) -> None:
    token = rsa_key.sign(claims(exp=int(time.time()) - 5))
    assert await verifier(rsa_key, leeway=0)(token) is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"iss": "https://evil.example.com"},
        {"iss": None},
        {"aud": "https://other.example.com"},
        {"aud": ["https://a.example.com", "https://b.example.com"]},
        {"aud": None},
        {"exp": None},
        # A future time as a string; its id is fixed so that every xdist worker collects
        # the same test ids.
        pytest.param({"exp": str(int(time.time()) + 600)}, id="{'exp': '<now + 600>'}"),
        {"scope": 42},
        {"scope": 'quote"inside'},
        {"client_id": 7},
        {"sub": ""},
    ],
    ids=repr,
)
async def test_bad_claims_are_invalid(rsa_key: SigningKey, overrides: dict[str, Any]) -> None:
    assert await verifier(rsa_key)(rsa_key.sign(claims(**overrides))) is None


async def test_unknown_kid_is_invalid(rsa_key: SigningKey, rsa_key_2: SigningKey) -> None:
    assert await verifier(rsa_key)(rsa_key_2.sign(claims())) is None


async def test_signature_by_another_key_under_a_known_kid(rsa_key: SigningKey) -> None:
    impostor = make_rsa(rsa_key.kid)
    assert await verifier(rsa_key)(impostor.sign(claims())) is None


async def test_alg_none_is_invalid(rsa_key: SigningKey) -> None:
    unsigned = forge({"alg": "none", "kid": rsa_key.kid}, claims(), lambda _: b"")
    assert await verifier(rsa_key)(unsigned) is None
    assert await verifier(rsa_key)(unsigned.rsplit(".", 1)[0] + ".") is None


async def test_hs256_signed_with_the_public_key_is_invalid(rsa_key: SigningKey) -> None:
    # The classic algorithm confusion: an HMAC "signed" with the RSA public key as the secret.
    for secret in (rsa_key.public_pem, rsa_key.jwk["n"].encode()):
        token = forge({"alg": "HS256", "kid": rsa_key.kid}, claims(), hmac_sha256(secret))
        assert await verifier(rsa_key)(token) is None
        assert await verifier(rsa_key, algorithms=["RS256", "ES256"])(token) is None


async def test_ec_algorithm_against_an_rsa_key_is_invalid(
    rsa_key: SigningKey, ec_key: SigningKey
) -> None:
    token = ec_key.sign(claims(), kid=rsa_key.kid)
    assert await verifier(rsa_key, ec_key)(token) is None


async def test_algorithm_outside_the_allow_list(rsa_key: SigningKey, ec_key: SigningKey) -> None:
    # A set where no key can verify an allowed algorithm is refused at construction.
    with pytest.raises(ValueError, match="no signing key"):
        verifier(ec_key, algorithms=["RS256"])
    assert await verifier(rsa_key, ec_key, algorithms=["RS256"])(ec_key.sign(claims())) is None


@pytest.mark.parametrize("garbage", ["", "abc", "a.b.c", "..", "e30.e30.e30", "x" * 20_000])
async def test_garbage_is_invalid(rsa_key: SigningKey, garbage: str) -> None:
    assert await verifier(rsa_key)(garbage) is None


async def test_unusable_jwks_entries_are_skipped(rsa_key: SigningKey, ec_key: SigningKey) -> None:
    document = {
        "keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "sym"},
            {**ec_key.jwk, "use": "enc"},
            {**rsa_key.jwk, "d": "private"},
            {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"},
            "not a key",
        ]
    }
    with pytest.raises(ValueError, match="no signing key"):
        JWTVerifier(jwks=document, audience=RESOURCE)
    document["keys"].append(rsa_key.jwk)
    check = JWTVerifier(jwks=document, audience=RESOURCE)
    assert await check(rsa_key.sign(claims())) is not None
    assert await check(ec_key.sign(claims())) is None


# -- construction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"leeway": 301}, "leeway"),
        ({"leeway": -1}, "leeway"),
        ({"algorithms": ["RS256", "none"]}, "none"),
        ({"algorithms": ["NONE"]}, "none"),
        ({"algorithms": ["HS256"]}, "HMAC"),
        ({"algorithms": []}, "empty"),
        ({"audience": ""}, "audience"),
        ({"audience": []}, "audience"),
        ({"jwks_refresh_interval": 0}, "positive"),
    ],
)
def test_construction_refuses_unsafe_settings(
    rsa_key: SigningKey, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        verifier(rsa_key, **options)


def test_exactly_one_key_source(rsa_key: SigningKey) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        JWTVerifier(audience=RESOURCE)
    with pytest.raises(ValueError, match="exactly one"):
        JWTVerifier(audience=RESOURCE, jwks=jwks(rsa_key), secret=SECRET)


def test_secret_rules() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        JWTVerifier(audience=RESOURCE, secret=b"short")
    with pytest.raises(ValueError, match="HMAC"):
        JWTVerifier(audience=RESOURCE, secret=SECRET, algorithms=["RS256"])
    with pytest.raises(ValueError, match="PEM"):
        JWTVerifier(audience=RESOURCE, public_key="not a pem")


# -- JWKS refresh -------------------------------------------------------------------------------


class CountingFetcher:
    """Our own JWKS source: serves a document and counts how often it was asked."""

    def __init__(self, document: Mapping[str, Any] | Exception) -> None:
        self.document = document
        self.calls = 0

    async def __call__(self) -> Mapping[str, Any]:
        self.calls += 1
        await trio.lowlevel.checkpoint()
        if isinstance(self.document, Exception):
            raise self.document
        return self.document


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_unknown_kid_refreshes_within_the_rate_limit(
    rsa_key: SigningKey, rsa_key_2: SigningKey
) -> None:
    fetcher, clock = CountingFetcher(jwks(rsa_key, rsa_key_2)), Clock()
    check = JWTVerifier(
        jwks=jwks(rsa_key),
        jwks_fetcher=fetcher,
        jwks_refresh_interval=60,
        clock=clock,
        issuer=ISSUER,
        audience=RESOURCE,
    )
    assert await check(rsa_key.sign(claims())) is not None
    assert fetcher.calls == 0  # known kid: no fetch
    assert await check(rsa_key_2.sign(claims())) is not None
    assert fetcher.calls == 1  # rotated key picked up
    stranger = make_rsa("rsa-3")
    for _ in range(5):
        assert await check(stranger.sign(claims())) is None
    assert fetcher.calls == 1  # within the interval: no more fetches
    clock.now += 61
    assert await check(stranger.sign(claims())) is None
    assert fetcher.calls == 2
    assert await check(rsa_key.sign(claims())) is not None  # old keys survived the refresh


async def test_fetcher_only_loads_on_first_use(rsa_key: SigningKey) -> None:
    fetcher = CountingFetcher(jwks(rsa_key))
    check = JWTVerifier(jwks_fetcher=fetcher, audience=RESOURCE)
    assert await check(rsa_key.sign(claims())) is not None
    assert await check(rsa_key.sign(claims())) is not None
    assert fetcher.calls == 1


async def test_concurrent_unknown_kids_share_one_fetch(rsa_key: SigningKey) -> None:
    fetcher = CountingFetcher(jwks(rsa_key))
    check = JWTVerifier(jwks_fetcher=fetcher, audience=RESOURCE)
    results: list[AccessToken | None] = []

    async def one() -> None:
        results.append(await check(rsa_key.sign(claims())))

    async with trio.open_nursery() as nursery:
        for _ in range(10):
            nursery.start_soon(one)
    assert fetcher.calls == 1
    assert len(results) == 10 and all(r is not None for r in results)


@pytest.mark.parametrize("failure", [OSError("boom"), {"keys": "nope"}, {"keys": []}], ids=repr)
async def test_a_failing_refresh_keeps_the_old_keys(
    rsa_key: SigningKey, rsa_key_2: SigningKey, failure: Any
) -> None:
    fetcher, clock = CountingFetcher(failure), Clock()
    check = JWTVerifier(jwks=jwks(rsa_key), jwks_fetcher=fetcher, clock=clock, audience=RESOURCE)
    assert await check(rsa_key_2.sign(claims())) is None
    assert await check(rsa_key_2.sign(claims())) is None
    assert fetcher.calls == 1
    assert await check(rsa_key.sign(claims())) is not None


async def test_an_alg_pinned_in_the_jwk_is_enforced(rsa_key: SigningKey) -> None:
    pinned = {"keys": [{**rsa_key.jwk, "alg": "RS256"}]}
    check = JWTVerifier(jwks=pinned, audience=RESOURCE, algorithms=["RS256", "PS256"])
    assert await check(rsa_key.sign(claims())) is not None
    ps256 = jwt.encode(claims(), rsa_key.private, algorithm="PS256", headers={"kid": rsa_key.kid})
    assert await check(ps256) is None
    unpinned = JWTVerifier(jwks=jwks(rsa_key), audience=RESOURCE, algorithms=["RS256", "PS256"])
    assert await unpinned(ps256) is not None
