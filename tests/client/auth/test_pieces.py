"""The sans-IO pieces of the OAuth client, byte by byte: the challenge parser, the metadata
URLs, the resource check, client authentication, PKCE, and the file token store."""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from pathlib import Path

import jwt
import pytest
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from runtime.client import ClientRegistration, FileTokenStore, StoredLogin, Tokens
from runtime.client._oauth_challenge import parse_challenge
from runtime.client._oauth_grants import (
    authorization_code_request,
    choose_auth_method,
    read_token_response,
)
from runtime.client._oauth_metadata import (
    auth_server_metadata_urls,
    resource_allowed,
    resource_metadata_urls,
)
from runtime.client._oauth_pkce import Pkce


def test_the_bearer_challenge_among_others() -> None:
    header = (
        'Basic realm="x", DPoPx, Bearer realm="mcp", error="insufficient_scope", '
        'scope="files:read  files:write", resource_metadata="https://h/.well-known/x", '
        'error_description="needs \\"write\\""'
    )
    challenge = parse_challenge(header)
    assert challenge.error == "insufficient_scope"
    assert challenge.scopes == ("files:read", "files:write")
    assert challenge.resource_metadata == "https://h/.well-known/x"
    assert challenge.error_description == 'needs "write"'
    assert parse_challenge("bearer scope=a").scope == "a"  # case-insensitive, bare token
    assert parse_challenge("Basic realm=x") == parse_challenge(None)
    assert parse_challenge("Bearer").error is None


@given(st.text(max_size=300))
def test_any_header_parses_or_is_ignored(header: str) -> None:
    parse_challenge(header)  # never raises


def test_well_known_urls_in_the_specified_order() -> None:
    assert resource_metadata_urls("https://H.example/a/mcp/") == [
        "https://h.example/.well-known/oauth-protected-resource/a/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls("https://h.example") == [
        "https://h.example/.well-known/oauth-protected-resource"
    ]
    assert auth_server_metadata_urls("https://a.example/tenant1") == [
        "https://a.example/.well-known/oauth-authorization-server/tenant1",
        "https://a.example/.well-known/openid-configuration/tenant1",
        "https://a.example/tenant1/.well-known/openid-configuration",
    ]
    assert auth_server_metadata_urls("https://a.example/") == [
        "https://a.example/.well-known/oauth-authorization-server",
        "https://a.example/.well-known/openid-configuration",
    ]


def test_which_resources_stand_for_a_server() -> None:
    server = "https://h.example/mcp"
    assert resource_allowed(server, "https://h.example/mcp")
    assert resource_allowed(server, "https://H.EXAMPLE/mcp/")
    assert resource_allowed(server, "https://h.example")
    assert not resource_allowed(server, "https://h.example/mc")
    assert not resource_allowed(server, "https://h.example/mcp/sub")
    assert not resource_allowed(server, "http://h.example/mcp")
    assert not resource_allowed(server, "https://h.example:8443/mcp")
    assert not resource_allowed(server, "https://evil.example/mcp")


def test_pkce_s256() -> None:
    pkce = Pkce.new()
    assert len(pkce.verifier) == 43 and pkce.method == "S256"
    digest = hashlib.sha256(pkce.verifier.encode()).digest()
    assert pkce.challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert pkce.verifier not in repr(pkce)
    assert Pkce.new().verifier != pkce.verifier


def request_for(client: ClientRegistration, method: str, key: object = None) -> tuple:
    request = authorization_code_request(
        "https://as/token",
        code="c",
        redirect_uri="http://127.0.0.1:1/cb",
        pkce=Pkce.new(),
        resource="https://h/mcp",
        client=client,
        method=method,
        audience="https://as",
        private_key=key,
    )
    assert "c" not in repr(request).replace("code", "")  # the form is not in the repr
    return request.form, dict(request.headers)


def test_token_endpoint_authentication_methods() -> None:
    secret = ClientRegistration(client_id="a:b", client_secret="p@ss word")
    assert choose_auth_method(secret, None, False) == "client_secret_basic"
    assert choose_auth_method(secret, ["client_secret_post"], False) == "client_secret_post"
    assert choose_auth_method(ClientRegistration(client_id="x"), None, False) == "none"
    assert choose_auth_method(ClientRegistration(client_id="x"), None, True) == "private_key_jwt"

    form, headers = request_for(secret, "client_secret_basic")
    assert "client_secret" not in form and "client_id" not in form
    decoded = base64.b64decode(headers["Authorization"].removeprefix("Basic ")).decode()
    assert decoded == "a%3Ab:p%40ss%20word"  # RFC 6749 2.3.1: form-encoded first

    form, headers = request_for(secret, "client_secret_post")
    assert form["client_id"] == "a:b" and form["client_secret"] == "p@ss word" and not headers

    form, headers = request_for(ClientRegistration(client_id="pub"), "none")
    assert form["client_id"] == "pub" and "client_secret" not in form and not headers


def test_private_key_jwt_is_verifiable_with_the_clients_public_key() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    form, _ = request_for(ClientRegistration(client_id="svc"), "private_key_jwt", pem)
    assert form["client_assertion_type"] == (
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    )
    claims = jwt.decode(
        form["client_assertion"], key.public_key(), algorithms=["ES256"], audience="https://as"
    )
    assert claims["iss"] == claims["sub"] == "svc" and claims["exp"] - claims["iat"] == 60


def test_token_answers() -> None:
    tokens = read_token_response(
        200, b'{"access_token":"A","token_type":"bearer","expires_in":60}', now=1000.0
    )
    assert tokens.expires_at == 1060.0 and tokens.token_type == "Bearer"
    kept = read_token_response(
        200,
        b'{"access_token":"B","token_type":"Bearer"}',
        now=0.0,
        previous=Tokens(access_token="A", refresh_token="R"),
    )
    assert kept.refresh_token == "R"  # OAuth 2.1 4.3.3: the old one stays valid
    for status, body in (
        (400, b'{"error":"invalid_grant","error_description":"revoked"}'),
        (200, b'{"token_type":"Bearer"}'),
        (200, b'{"access_token":"A","token_type":"mac"}'),
        (200, b"[1]"),
        (502, b"<html>"),
    ):
        with pytest.raises(Exception) as caught:
            read_token_response(status, body, now=0.0)
        assert type(caught.value).__name__ == "GrantError"


async def test_the_file_store(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "oauth")
    entry = StoredLogin(
        resource="https://h/mcp",
        issuer="https://as",
        client=ClientRegistration(client_id="c", client_secret="S3CRET"),
        tokens=Tokens(access_token="ACCESS", refresh_token="REFRESH", expires_at=5.0),
    )
    await store.save("https://h/mcp", entry)
    path = store.path_for("https://h/mcp")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert "h/mcp" not in path.name  # the URL is not in a directory listing
    assert await store.load("https://h/mcp") == entry
    assert os.listdir(path.parent) == [path.name]  # no temporary file left
    for secret in ("ACCESS", "REFRESH", "S3CRET"):
        assert secret not in repr(entry) and secret not in repr(store)
    path.write_bytes(b"{not json")
    assert await store.load("https://h/mcp") is None  # corrupt: a login to do again
    await store.delete("https://h/mcp")
    await store.delete("https://h/mcp")
    assert await store.load("https://h/mcp") is None
    await trio.lowlevel.checkpoint()
