"""The authorization server end to end with development users: metadata, registration,
consent, login, code, tokens, the MCP endpoint accepting them, refresh rotation."""

from __future__ import annotations

import msgspec
import pytest
import trio

from runtime.authserver import DevStaticUsers
from tests.transports.http_client import request

from .browser import Browser, text_of
from .helpers import full_login, mcp_status, redeem, register, serve_protected

pytestmark = pytest.mark.trio


def dev(base: str) -> DevStaticUsers:
    return DevStaticUsers(["alice", "bob"])


async def test_metadata_names_the_authorization_server() -> None:
    with trio.fail_after(20):
        async with serve_protected(dev) as served:
            prm = await request(served.address, "GET", "/.well-known/oauth-protected-resource/mcp")
            assert prm.status == 200
            assert prm.json()["authorization_servers"] == [served.base]
            meta = await request(served.address, "GET", "/.well-known/oauth-authorization-server")
            assert meta.status == 200
            document = meta.json()
            assert document["issuer"] == served.base
            assert document["code_challenge_methods_supported"] == ["S256"]
            assert document["authorization_response_iss_parameter_supported"] is True
            assert document["registration_endpoint"] == f"{served.base}/register"
            jwks = await request(served.address, "GET", "/jwks.json")
            assert [key["alg"] for key in jwks.json()["keys"]] == ["ES256"]
            # Health is unaffected, and unauthenticated MCP still gets the challenge.
            assert (await request(served.address, "GET", "/healthz")).status == 200
            challenge = await mcp_status(served, None)
            assert challenge.status == 401
            assert "resource_metadata=" in challenge.headers["www-authenticate"]


async def test_a_whole_login_gives_a_token_the_mcp_endpoint_takes() -> None:
    with trio.fail_after(30):
        async with serve_protected(dev) as served:
            client = await register(served)
            browser = Browser({served.port})
            verifier, code, params = await full_login(served, browser, client["client_id"])
            assert params["state"] == "st-1"
            assert params["iss"] == served.base  # RFC 9207
            answer = await redeem(served, client["client_id"], code, verifier)
            assert answer.status == 200, answer.body
            assert answer.headers["cache-control"] == "no-store"
            tokens = answer.json()
            assert tokens["token_type"] == "Bearer"
            assert tokens["scope"] == "notes:read"
            ok = await mcp_status(served, tokens["access_token"])
            assert ok.status == 200, ok.body
            claims = msgspec.json.decode(
                __import__("base64").urlsafe_b64decode(tokens["access_token"].split(".")[1] + "==")
            )
            assert claims["aud"] == f"{served.base}/mcp"
            assert claims["sub"] == "alice"
            # Refresh: a new pair; the old refresh token is spent.
            fields = {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client["client_id"],
            }
            from .helpers import form_post

            again = await form_post(served, "/token", fields)
            assert again.status == 200, again.body
            assert again.json()["refresh_token"] != tokens["refresh_token"]
            assert (await mcp_status(served, again.json()["access_token"])).status == 200


async def test_the_consent_page_names_client_scopes_and_destination() -> None:
    with trio.fail_after(20):
        async with serve_protected(dev) as served:
            client = await register(served, client_name="Notes <b>Desk</b>")
            from runtime.authserver._pkce import make_pair

            from .helpers import authorize_url

            browser = Browser({served.port})
            _, challenge = make_pair()
            _where, page = await browser.go(authorize_url(served, client["client_id"], challenge))
            assert page is not None and page.status == 200
            assert page.headers["content-type"].startswith("text/html")
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
            assert b"<script" not in page.body
            assert b"Notes &lt;b&gt;Desk&lt;/b&gt;" in page.body  # escaped, never markup
            text = text_of(page)
            assert "notes:read" in text and "127.0.0.1:9" in text
