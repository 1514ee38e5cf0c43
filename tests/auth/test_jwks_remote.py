"""``JWTVerifier(jwks_uri=...)``: the runtime fetches the JWKS itself, over real loopback
HTTP, caches it by Cache-Control max-age, and picks up rotated keys (rate-limited)."""

from __future__ import annotations

import pytest
import trio

from runtime.auth import JWKSFetchError, JWTVerifier, RemoteJWKS

from ._tokens import ISSUER, RESOURCE, SigningKey, claims, jwks, make_rsa
from .jwks_server import JWKSEndpoint, serve_jwks


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("chunked", [False, True])
async def test_fetched_once_and_cached_by_max_age(rsa_key: SigningKey, chunked: bool) -> None:
    clock = Clock()
    with trio.fail_after(10):
        async with serve_jwks(JWKSEndpoint(jwks(rsa_key), "public, max-age=120", chunked)) as end:
            check = JWTVerifier(jwks_uri=end.uri, issuer=ISSUER, audience=RESOURCE, clock=clock)
            for _ in range(3):
                principal = await check(rsa_key.sign(claims()))
                assert principal is not None and principal.subject == "user-42"
            assert end.requests == ["GET /.well-known/jwks.json HTTP/1.1"]
            clock.now += 119
            assert await check(rsa_key.sign(claims())) is not None
            assert len(end.requests) == 1  # still fresh
            clock.now += 2
            assert await check(rsa_key.sign(claims())) is not None
            assert len(end.requests) == 2  # past max-age: refetched


async def test_rotation_picks_up_a_new_kid_and_drops_a_removed_one(
    rsa_key: SigningKey, rsa_key_2: SigningKey
) -> None:
    clock = Clock()
    with trio.fail_after(10):
        async with serve_jwks(JWKSEndpoint(jwks(rsa_key), "max-age=3600")) as end:
            check = JWTVerifier(
                jwks_uri=end.uri,
                issuer=ISSUER,
                audience=RESOURCE,
                clock=clock,
                jwks_refresh_interval=60,
            )
            assert await check(rsa_key.sign(claims())) is not None
            # Later, the authorization server rotates: rsa-2 added, rsa-1 retired.
            clock.now += 61
            end.document = jwks(rsa_key_2)
            assert await check(rsa_key_2.sign(claims())) is not None  # unknown kid: refetch
            assert len(end.requests) == 2
            assert await check(rsa_key.sign(claims())) is None  # the retired key is gone
            # Forged kids cannot make us hammer the server: one fetch per interval.
            stranger = make_rsa("rsa-9")
            for _ in range(5):
                assert await check(stranger.sign(claims())) is None
            assert len(end.requests) == 2
            clock.now += 61
            assert await check(stranger.sign(claims())) is None
            assert len(end.requests) == 3


async def test_no_cache_is_floored_and_failures_keep_the_old_keys(rsa_key: SigningKey) -> None:
    clock = Clock()
    with trio.fail_after(10):
        async with serve_jwks(JWKSEndpoint(jwks(rsa_key), "no-store")) as end:
            check = JWTVerifier(jwks_uri=end.uri, audience=RESOURCE, clock=clock)
            assert await check(rsa_key.sign(claims())) is not None
            clock.now += 29
            assert await check(rsa_key.sign(claims())) is not None
            assert len(end.requests) == 1  # no-store still cached min_max_age (30 s)
            end.status = 503
            clock.now += 40
            assert await check(rsa_key.sign(claims())) is not None  # stale keys keep working
            assert len(end.requests) == 2
            assert await check(rsa_key.sign(claims())) is not None
            assert len(end.requests) == 2  # the failure is rate-limited too


async def test_remote_jwks_errors_name_the_uri() -> None:
    with trio.fail_after(10):
        async with serve_jwks(JWKSEndpoint({"not": "a jwks"})) as end:
            fetch = RemoteJWKS(end.uri)
            with pytest.raises(JWKSFetchError, match=r"not a JWK Set"):
                await fetch()
            end.status = 302
            with pytest.raises(JWKSFetchError, match=r"HTTP 302 \(redirects are not followed\)"):
                await fetch()
            end.status, end.document = 200, {"keys": ["x" * 4000]}
            small = RemoteJWKS(end.uri, max_bytes=1000)
            with pytest.raises(JWKSFetchError, match="larger than 1000 bytes"):
                await small()


async def test_a_server_that_keeps_the_connection_open(rsa_key: SigningKey) -> None:
    with trio.fail_after(5):
        async with serve_jwks(JWKSEndpoint(jwks(rsa_key), linger=True)) as end:
            document = await RemoteJWKS(end.uri, timeout=2)()
    assert document == jwks(rsa_key)


def test_remote_jwks_requires_https_off_loopback() -> None:
    with pytest.raises(ValueError, match="must use https"):
        RemoteJWKS("http://auth.example.com/jwks.json")
    with pytest.raises(ValueError, match="absolute https URL"):
        RemoteJWKS("/jwks.json")
    RemoteJWKS("https://auth.example.com/jwks.json")
    RemoteJWKS("http://[::1]:8080/jwks.json")
    with pytest.raises(ValueError, match="not both"):
        JWTVerifier(
            audience=RESOURCE,
            jwks_uri="https://a.example/j",
            jwks_fetcher=RemoteJWKS("https://b.example/j"),
        )
