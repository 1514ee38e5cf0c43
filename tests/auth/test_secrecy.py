"""Tokens and secrets never show in reprs, str(), exception messages or log lines."""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

from runtime.auth import (
    AccessToken,
    AuthConfig,
    AuthError,
    JWTVerifier,
    ProtectedResourceMetadata,
    authenticate,
)

from ._tokens import ISSUER, RESOURCE, SigningKey, claims, jwks

ROOT = Path(__file__).resolve().parents[2]


def test_access_token_repr_leaves_out_claims() -> None:
    secret = "eyJhbGciOiJSUzI1NiJ9.secret-token-material.sig"
    principal = AccessToken(
        "alice",
        frozenset({"mcp:read"}),
        "client-7",
        1.0,
        MappingProxyType({"upstream_token": secret, "act": {"token": secret}}),
    )
    for text in (repr(principal), str(principal), f"{principal}", f"{principal!r}"):
        assert secret not in text and "upstream_token" not in text
        assert "alice" in text
    assert principal == AccessToken("alice", frozenset({"mcp:read"}), "client-7", 1.0)


async def test_no_token_in_any_log_line_or_result(
    rsa_key: SigningKey, rsa_key_2: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def failing_fetch() -> dict[str, object]:
        raise RuntimeError("fetch failed")

    verifier = JWTVerifier(
        jwks=jwks(rsa_key), jwks_fetcher=failing_fetch, issuer=ISSUER, audience=RESOURCE
    )
    config = AuthConfig(
        verifier=verifier,
        resource_metadata=ProtectedResourceMetadata(
            resource=RESOURCE, authorization_servers=[ISSUER]
        ),
        required_scopes=frozenset({"mcp:read"}),
        tool_scopes={"write": frozenset({"files:write"})},
    )
    tokens = [
        rsa_key.sign(claims(scope="mcp:read")),  # valid
        rsa_key.sign(claims(scope="mcp:read")),  # valid, but the tool needs more
        rsa_key.sign(claims(exp=1)),  # expired
        rsa_key.sign(claims(aud="https://other.example.com")),  # foreign
        rsa_key_2.sign(claims()),  # unknown kid, failing refresh
        rsa_key.sign(claims(scope="x", sub=None, client_id=None)),  # no subject
    ]
    results = [
        await authenticate(config, f"Bearer {tokens[0]}"),
        await authenticate(config, f"Bearer {tokens[1]}", tool="write"),
        *[await authenticate(config, f"Bearer {token}") for token in tokens[2:]],
        await authenticate(config, f"Bearer  {tokens[0]}"),  # malformed
        await authenticate(config, f"Bearer {tokens[0]}", query=f"access_token={tokens[0]}"),
    ]
    assert isinstance(results[0], AccessToken)
    assert all(isinstance(result, AuthError) for result in results[1:])
    assert "auth.jwks_refresh_failed" in caplog.text and "fetch failed" not in caplog.text
    for token in tokens:
        signature = token.rsplit(".", 1)[1]
        assert signature not in caplog.text
        for result in results:
            assert signature not in repr(result) and signature not in str(result)
            if isinstance(result, AuthError):
                assert signature.encode() not in result.body


async def test_a_verifier_exception_message_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)

    async def leaky(token: str) -> AccessToken | None:
        raise ValueError(f"could not introspect {token}")

    config = AuthConfig(
        verifier=leaky,
        resource_metadata=ProtectedResourceMetadata(
            resource=RESOURCE, authorization_servers=[ISSUER]
        ),
    )
    result = await authenticate(config, "Bearer leaky-token-value")
    assert isinstance(result, AuthError) and result.status == 503
    assert "leaky-token-value" not in caplog.text and "exc_type=ValueError" in caplog.text


def test_secrets_stay_out_of_reprs_and_errors(rsa_key: SigningKey) -> None:
    secret = "s3cr3t-" * 8
    verifier = JWTVerifier(secret=secret, audience=RESOURCE)
    assert secret not in repr(verifier) and "keys=secret" in repr(verifier)
    short = "tiny-secret"
    with pytest.raises(ValueError) as excinfo:
        JWTVerifier(secret=short, audience=RESOURCE)
    assert short not in str(excinfo.value)
    pem = rsa_key.public_pem.decode()
    assert pem not in repr(JWTVerifier(public_key=pem, audience=RESOURCE))
    assert "jwks(1 keys)" in repr(JWTVerifier(jwks=jwks(rsa_key), audience=RESOURCE))


def test_package_imports_nothing_else_of_the_runtime() -> None:
    # runtime.auth sits beside the transports and below them: it must not reach into core,
    # transports or handlers (DESIGN.md layering), so any transport can import it.
    for path in sorted((ROOT / "runtime" / "auth").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith(("runtime", "handlers")), f"{path.name}: {name}"


def test_pyjwt_loads_only_when_a_jwt_verifier_is_asked_for() -> None:
    code = (
        "import sys, runtime.auth as a; print('jwt' in sys.modules); "
        "a.JWTVerifier; print('jwt' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, text=True, cwd=ROOT
    )
    assert out.stdout.split() == ["False", "True"]
