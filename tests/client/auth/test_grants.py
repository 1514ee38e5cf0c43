"""The grants without a user, on the wire, against a scripted authorization server: client
credentials, the JWT bearer grant with a workload identity token, and enterprise-managed
authorization (an ID token exchanged at the IdP for an ID-JAG, RFC 8693, then RFC 7523)."""

from __future__ import annotations

import base64

import pytest
import trio

from runtime.client import AuthorizationFailed, EnterpriseIdentity, OAuth

from .fake_servers import Request, fake_auth, json_reply

WORKLOAD_JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2ln"
ID_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2ln"
ID_JAG = "eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.eyJzdWIiOiJhbm4ifQ.c2ln"


async def test_workload_identity_jwt_bearer() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            reads = []

            async def fresh() -> str:
                reads.append(1)
                return WORKLOAD_JWT

            oauth = OAuth(grant="jwt_bearer", client_id="workload", assertion=fresh)
            await oauth.login_to(f"{fake.origin}/mcp")
            token = fake.seen[-1]
            assert token.path == "/token"
            assert token.form() == {
                "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                "assertion": WORKLOAD_JWT,
                "resource": f"{fake.origin}/mcp",
                "client_id": "workload",
            }
            assert reads == [1] and oauth.tokens is not None
            assert "/register" not in [r.path for r in fake.seen]


async def test_a_refused_assertion_is_not_retried_nor_another_grant_tried() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            fake.routes["/token"] = lambda r: json_reply(
                {"error": "invalid_grant", "error_description": "JWT assertion is expired"}, 400
            )
            oauth = OAuth(grant="jwt_bearer", client_id="workload", assertion=WORKLOAD_JWT)
            with pytest.raises(AuthorizationFailed, match="invalid_grant: JWT assertion is"):
                await oauth.login_to(f"{fake.origin}/mcp")
            assert [r.path for r in fake.seen].count("/token") == 1


async def test_enterprise_managed_authorization() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()

            def idp(request: Request) -> tuple[int, dict[str, str], bytes]:
                return json_reply(
                    {
                        "access_token": ID_JAG,
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                        "token_type": "N_A",
                    }
                )

            fake.routes["/idp/token"] = idp
            identity = EnterpriseIdentity(
                token_endpoint=f"{fake.origin}/idp/token", client_id="idp-client", id_token=ID_TOKEN
            )
            assert ID_TOKEN not in repr(identity)
            oauth = OAuth(
                grant="jwt_bearer",
                client_id="mcp-client",
                client_secret="mcp-secret",
                enterprise=identity,
                scope="notes:read",
            )
            await oauth.login_to(f"{fake.origin}/mcp")
            exchange, grant = [r for r in fake.seen if r.method == "POST"]
            assert exchange.path == "/idp/token"
            assert exchange.form() == {
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "subject_token": ID_TOKEN,
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "audience": fake.origin,
                "resource": f"{fake.origin}/mcp",
                "scope": "notes:read",
                "client_id": "idp-client",
            }
            assert grant.path == "/token"
            assert grant.form()["assertion"] == ID_JAG
            assert grant.form()["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
            basic = base64.b64decode(grant.headers["authorization"].removeprefix("Basic "))
            assert basic == b"mcp-client:mcp-secret"


async def test_client_credentials_with_private_key_jwt() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(token_endpoint_auth_methods_supported=["private_key_jwt"])
            oauth = OAuth(grant="client_credentials", client_id="svc", private_key=pem)
            await oauth.login_to(f"{fake.origin}/mcp")
            form = fake.seen[-1].form()
            assert form["grant_type"] == "client_credentials"
            import jwt

            claims = jwt.decode(
                form["client_assertion"], key.public_key(), algorithms=["RS256"],
                audience=fake.origin,
            )  # fmt: skip
            assert claims["sub"] == "svc"
            assert "PRIVATE KEY" not in repr(oauth)
