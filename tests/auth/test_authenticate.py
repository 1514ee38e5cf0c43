"""The transport seam: header parsing, exact challenges, scopes, and a JWT end to end."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.auth import (
    AccessToken,
    AuthConfig,
    AuthError,
    JWTVerifier,
    ProtectedResourceMetadata,
    authenticate,
    authorize,
)

from ._tokens import ISSUER, METADATA_URL, RESOURCE, SigningKey, claims, jwks

METADATA = ProtectedResourceMetadata(resource=RESOURCE, authorization_servers=[ISSUER])
TOKENS = {
    "reader-token": AccessToken("alice", frozenset({"mcp:read"})),
    "writer-token": AccessToken("bob", frozenset({"mcp:read", "files:write"})),
    "admin-token": AccessToken("carol", frozenset({"mcp:read", "files:admin"})),
    "padded+/_~-.token==": AccessToken("dave", frozenset({"mcp:read"})),
}
SEEN: list[str] = []


async def table_verifier(token: str) -> AccessToken | None:
    """A plain async function is a TokenVerifier; this one looks tokens up in a table."""
    SEEN.append(token)
    return TOKENS.get(token)


def config(**options: Any) -> AuthConfig:
    options.setdefault("verifier", table_verifier)
    options.setdefault("resource_metadata", METADATA)
    options.setdefault("required_scopes", frozenset({"mcp:read"}))
    options.setdefault("tool_scopes", {"write_file": frozenset({"files:write"})})
    return AuthConfig(**options)


async def refused(header: str | bytes | None, **kwargs: Any) -> AuthError:
    result = await authenticate(config(), header, **kwargs)
    assert isinstance(result, AuthError), result
    return result


# -- exact challenges ---------------------------------------------------------------------------


async def test_no_token_gets_401_without_error_code() -> None:
    error = await refused(None)
    assert error.status == 401 and error.error is None
    assert error.www_authenticate == (
        f'Bearer resource_metadata="{METADATA_URL}", scope="mcp:read"'
    )
    assert json.loads(error.body)["error"] == "unauthorized"


async def test_invalid_token_gets_401_invalid_token() -> None:
    error = await refused("Bearer not-a-known-token")
    assert error.status == 401 and error.error == "invalid_token"
    assert error.www_authenticate == (
        'Bearer error="invalid_token", '
        'error_description="the access token is invalid or expired", '
        f'resource_metadata="{METADATA_URL}", scope="mcp:read"'
    )
    assert json.loads(error.body) == {
        "error": "invalid_token",
        "error_description": "the access token is invalid or expired",
    }


async def test_per_tool_scope_gets_403_with_every_needed_scope() -> None:
    error = await refused("Bearer reader-token", tool="write_file")
    assert error.status == 403 and error.error == "insufficient_scope"
    assert error.www_authenticate == (
        'Bearer error="insufficient_scope", '
        'error_description="the access token lacks a required scope", '
        f'resource_metadata="{METADATA_URL}", scope="files:write mcp:read"'
    )


async def test_base_scope_missing_gets_403() -> None:
    error = await authenticate(
        config(required_scopes=frozenset({"mcp:read", "mcp:use"})), "Bearer reader-token"
    )
    assert isinstance(error, AuthError) and error.status == 403
    assert error.www_authenticate is not None
    assert error.www_authenticate.endswith('scope="mcp:read mcp:use"')


async def test_no_scope_parameter_when_nothing_is_required() -> None:
    result = await authenticate(config(required_scopes=frozenset()), None)
    assert isinstance(result, AuthError)
    assert result.www_authenticate == f'Bearer resource_metadata="{METADATA_URL}"'


async def test_a_401_for_a_tool_names_the_tool_scopes_too() -> None:
    error = await refused(None, tool="write_file")
    assert error.www_authenticate == (
        f'Bearer resource_metadata="{METADATA_URL}", scope="files:write mcp:read"'
    )


async def test_headers_are_ready_for_the_http_layer() -> None:
    error = await refused(None)
    assert error.reason == "Unauthorized"
    assert error.headers == [
        ("content-type", "application/json"),
        ("cache-control", "no-store"),
        ("www-authenticate", error.www_authenticate),
    ]


# -- accepted and scopes ------------------------------------------------------------------------


async def test_valid_token_returns_the_principal() -> None:
    assert await authenticate(config(), "Bearer reader-token") is TOKENS["reader-token"]
    assert (
        await authenticate(config(), "Bearer writer-token", tool="write_file")
        is (TOKENS["writer-token"])
    )
    # A tool without extra scopes needs only the base set.
    assert isinstance(await authenticate(config(), "Bearer reader-token", tool="echo"), AccessToken)


async def test_scope_hierarchy_is_honoured() -> None:
    hierarchy = config(
        scope_implies={"files:admin": {"files:write"}, "files:write": {"files:read"}}
    )
    assert isinstance(
        await authenticate(hierarchy, "Bearer admin-token", tool="write_file"), AccessToken
    )
    assert authorize(hierarchy, TOKENS["admin-token"], tool="write_file") is None
    assert hierarchy.granted({"files:admin"}) == {"files:admin", "files:write", "files:read"}
    refusal = authorize(config(), TOKENS["admin-token"], tool="write_file")
    assert refusal is not None and refusal.status == 403


# -- header parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    ["Bearer reader-token", "bearer reader-token", "BEARER reader-token", b"Bearer reader-token"],
)
async def test_scheme_is_case_insensitive(header: str | bytes) -> None:
    assert await authenticate(config(), header) is TOKENS["reader-token"]


async def test_the_whole_token68_charset_is_accepted() -> None:
    assert (
        await authenticate(config(), "Bearer padded+/_~-.token==") is TOKENS["padded+/_~-.token=="]
    )


@pytest.mark.parametrize(
    "header",
    [
        "",
        "Bearer",
        "Bearer ",
        "Bearer  reader-token",
        "Bearer reader-token ",
        " Bearer reader-token",
        "Bearer\treader-token",
        "Bearer reader token",
        "Bearer reader-token, Bearer writer-token",
        'Bearer "reader-token"',
        "Bearer a=b",
        "Bearer =abc",
        "Bearer réader",
        b"Bearer r\xe9ader",
    ],
    ids=repr,
)
async def test_malformed_bearer_credentials_get_400_invalid_request(header: str | bytes) -> None:
    SEEN.clear()
    error = await refused(header)
    assert error.status == 400 and error.error == "invalid_request"
    assert error.www_authenticate is not None
    assert error.www_authenticate.startswith('Bearer error="invalid_request", ')
    assert SEEN == []  # the verifier never saw it


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Negotiate", "DPoP reader-token"])
async def test_other_schemes_are_treated_as_no_credentials(header: str) -> None:
    error = await refused(header)
    assert error.status == 401 and error.error is None


@pytest.mark.parametrize(
    "query",
    ["access_token=reader-token", "a=1&access_token=x", "?access%5Ftoken=", b"access_token"],
)
async def test_tokens_in_the_query_are_refused(query: str | bytes) -> None:
    error = await refused("Bearer reader-token", query=query)
    assert error.status == 400 and error.error == "invalid_request"


async def test_an_unrelated_query_is_fine() -> None:
    result = await authenticate(config(), "Bearer reader-token", query="session=1&token=x")
    assert result is TOKENS["reader-token"]


async def test_oversized_token_never_reaches_the_verifier() -> None:
    SEEN.clear()
    result = await authenticate(config(max_token_length=10), "Bearer reader-token")
    assert isinstance(result, AuthError) and result.error == "invalid_token"
    assert SEEN == []


async def test_a_failing_verifier_gives_503_not_401() -> None:
    async def broken(token: str) -> AccessToken | None:
        raise ConnectionError("introspection endpoint down")

    result = await authenticate(config(verifier=broken), "Bearer reader-token")
    assert isinstance(result, AuthError)
    assert (result.status, result.www_authenticate) == (503, None)
    assert result.reason == "Service Unavailable"
    assert all(name != "www-authenticate" for name, _ in result.headers)


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"required_scopes": "mcp:read"},
        {"required_scopes": frozenset({'a"b'})},
        {"required_scopes": frozenset({"offline_access"})},
        {"tool_scopes": {"t": frozenset({"has space"})}},
        {"scope_implies": {"a b": frozenset({"c"})}},
        {"max_token_length": 0},
    ],
    ids=repr,
)
def test_config_refuses_bad_scopes(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        config(**options)


# -- end to end with a real JWT -----------------------------------------------------------------


async def test_jwt_verifier_behind_authenticate(rsa_key: SigningKey) -> None:
    jwt_config = config(verifier=JWTVerifier(jwks=jwks(rsa_key), issuer=ISSUER, audience=RESOURCE))
    token = rsa_key.sign(claims(scope="mcp:read files:write"))
    principal = await authenticate(jwt_config, f"Bearer {token}", tool="write_file")
    assert isinstance(principal, AccessToken) and principal.subject == "user-42"
    narrow = rsa_key.sign(claims(scope="mcp:read"))
    refusal = await authenticate(jwt_config, f"Bearer {narrow}", tool="write_file")
    assert isinstance(refusal, AuthError) and refusal.status == 403
    foreign = rsa_key.sign(claims(aud="https://other.example.com/mcp"))
    refusal = await authenticate(jwt_config, f"Bearer {foreign}")
    assert isinstance(refusal, AuthError) and refusal.error == "invalid_token"
