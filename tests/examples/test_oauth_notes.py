"""examples/oauth_notes.py over real HTTP, with keys the runtime fetches from a loopback
JWKS endpoint (and refetches when the authorization server rotates them)."""

from __future__ import annotations

from typing import Any

import trio
from oauth_notes import app, auth_config

from tests.auth._tokens import ISSUER, RESOURCE, SigningKey, claims, jwks, make_ec
from tests.auth.jwks_server import JWKSEndpoint, serve_jwks
from tests.transports.app import modern, modern_headers, serving
from tests.transports.http_client import Response, request


async def call(address: Any, key: SigningKey | None, tool: str, **arguments: Any) -> Response:
    headers = modern_headers("tools/call", tool)
    if key is not None:
        scope = arguments.pop("scope", "notes:read")
        headers["authorization"] = f"Bearer {key.sign(claims(scope=scope))}"
    body = modern(1, "tools/call", {"name": tool, "arguments": arguments})
    return await request(address, "POST", headers=headers, body=body)


async def test_tokens_scopes_and_key_rotation() -> None:
    first, rotated = make_ec("as-key-1"), make_ec("as-key-2")
    with trio.fail_after(15):
        async with serve_jwks(JWKSEndpoint(jwks(first), "max-age=600")) as jwks_server:
            config = auth_config(
                issuer=ISSUER, jwks_uri=jwks_server.uri, resource=RESOURCE, key_refresh_interval=0.2
            )
            async with serving(app, auth=config) as address:
                anonymous = await call(address, None, "whoami")
                assert anonymous.status == 401
                assert "resource_metadata=" in anonymous.headers["www-authenticate"]

                me = await call(address, first, "whoami")
                assert me.status == 200, me.body
                assert me.json()["result"]["structuredContent"] == {
                    "subject": "user-42",
                    "client_id": "client-7",
                    "scopes": ["notes:read"],
                }
                refused = await call(address, first, "write_note", name="plan", text="ship it")
                assert refused.status == 403
                assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
                written = await call(
                    address, first, "write_note", name="plan", text="ship it",
                    scope="notes:read notes:write",
                )  # fmt: skip
                assert written.json()["result"]["content"][0]["text"] == "saved plan"
                read = await call(address, first, "read_note", name="plan")
                assert read.json()["result"]["content"][0]["text"] == "ship it\n-- user-42"
                assert len(jwks_server.requests) == 1  # fetched once, then cached

                # Later, the authorization server rotates its signing key.
                await trio.sleep(0.25)
                jwks_server.document = jwks(first, rotated)
                renewed = await call(address, rotated, "whoami")
                assert renewed.status == 200
                assert len(jwks_server.requests) == 2  # the unknown kid triggered one refetch

                metadata = await request(
                    address, "GET", "/.well-known/oauth-protected-resource/mcp"
                )
                assert metadata.json()["authorization_servers"] == [ISSUER]
