"""The sans-IO parts: PKCE, redirect-URI rules, registration checks, keys and tokens on a
clock of the test's own (rotation with tokens in flight, clock skew)."""

from __future__ import annotations

import pytest
import trio

from runtime.authserver import DevStaticUsers, RegistrationLimits
from runtime.authserver._authserver import AuthorizationServer
from runtime.authserver._clients import (
    RegistrationError,
    redirect_matches,
    valid_redirect_uri,
    validate_registration,
)
from runtime.authserver._pkce import is_challenge, make_pair, s256, verifies
from runtime.authserver._settings import AuthServerSettings


def test_pkce_s256_vector_of_rfc_7636_appendix_b() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert s256(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    assert verifies(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
    assert not verifies(verifier[:-1] + "Y", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
    assert not verifies("short", s256("short"))  # under 43 characters: not a verifier
    verifier, challenge = make_pair()
    assert is_challenge(challenge) and verifies(verifier, challenge)


@pytest.mark.parametrize(
    ("uri", "ok"),
    [
        ("https://app.example/cb", True),
        ("http://127.0.0.1/cb", True),
        ("http://[::1]:8080/cb", True),
        ("http://localhost:3000/cb", True),
        ("http://app.example/cb", False),
        ("https://app.example/cb#x", False),
        ("https://user@app.example/cb", False),
        ("javascript:alert(1)", False),
        ("/relative", False),
        ("https://app.example/c b", False),
    ],
)
def test_what_may_be_registered(uri: str, ok: bool) -> None:
    assert (valid_redirect_uri(uri) is None) is ok


def test_matching_is_exact_but_any_port_on_loopback() -> None:
    assert redirect_matches(["http://127.0.0.1/cb"], "http://127.0.0.1:53211/cb")
    assert redirect_matches(["http://127.0.0.1:9/cb"], "http://127.0.0.1:53211/cb")
    assert not redirect_matches(["http://127.0.0.1:9/cb"], "http://127.0.0.1:9/cb2")
    assert not redirect_matches(["http://127.0.0.1:9/cb"], "http://localhost:9/cb")
    assert not redirect_matches(["http://127.0.0.1:9/cb"], "http://127.0.0.1:9/cb?x=1")
    assert not redirect_matches(["https://app.example/cb"], "https://app.example:444/cb")
    assert not redirect_matches(["https://app.example/cb"], "https://app.example/cb/")


def test_registration_limits_are_named() -> None:
    limits = RegistrationLimits(max_redirect_uris=2)
    with pytest.raises(RegistrationError, match="max_redirect_uris=2"):
        validate_registration(
            {
                "redirect_uris": [
                    "https://a.example/1",
                    "https://a.example/2",
                    "https://a.example/3",
                ]
            },
            limits,
            frozenset(),
        )
    with pytest.raises(RegistrationError, match="response_types"):
        validate_registration(
            {"redirect_uris": ["https://a.example/1"], "response_types": ["token"]},
            limits,
            frozenset(),
        )
    with pytest.raises(RegistrationError, match="unknown scope"):
        validate_registration(
            {"redirect_uris": ["https://a.example/1"], "scope": "admin"}, limits, frozenset()
        )


def test_settings_refuse_a_rotation_shorter_than_a_token() -> None:
    with pytest.raises(ValueError, match="key_rotation"):
        AuthServerSettings(access_token_ttl=3600, key_rotation=60)


@pytest.mark.trio
async def test_key_rotation_with_tokens_in_flight_and_clock_skew() -> None:
    now = [1_000_050.0]  # mid-period
    settings = AuthServerSettings(access_token_ttl=100, key_rotation=100, leeway=10)
    server = AuthorizationServer(
        issuer="http://127.0.0.1:1",
        resource="http://127.0.0.1:1/mcp",
        upstream=DevStaticUsers(["a"]),
        settings=settings,
        clock=lambda: now[0],
    )
    with trio.fail_after(10):
        token = await server.tokens.issue(subject="a", client_id="c", scopes=[], family="f")
        first_kid = (await server.keys.jwks())["keys"][0]["kid"]
        now[0] += 99  # the next period: a new key signs, the old one still verifies
        fresh = await server.tokens.issue(subject="a", client_id="c", scopes=[], family="f")
        kids = [key["kid"] for key in (await server.keys.jwks())["keys"]]
        assert len(kids) == 2 and first_kid in kids
        assert await server.tokens(token) is not None
        assert await server.tokens(fresh) is not None
        now[0] += 10  # expired 9 s ago: within the leeway
        assert await server.tokens(token) is not None
        now[0] += 2  # past the leeway
        assert await server.tokens(token) is None
        # A token issued by a replica whose clock runs 5 s ahead (iat in our future).
        now[0] += 5
        ahead = await server.tokens.issue(subject="a", client_id="c", scopes=[], family="g")
        now[0] -= 5
        assert await server.tokens(ahead) is not None
        # One from a clock 20 s ahead, past the leeway: refused until our clock catches up.
        now[0] += 20
        far = await server.tokens.issue(subject="a", client_id="c", scopes=[], family="h")
        now[0] -= 20
        assert await server.tokens(far) is None
        now[0] += 15
        assert await server.tokens(far) is not None
        # Two periods on: the first key is gone from the set.
        now[0] += 200
        assert first_kid not in [key["kid"] for key in (await server.keys.jwks())["keys"]]
