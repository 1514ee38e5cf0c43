"""The OAuth flow against a scripted authorization server and resource (raw HTTP on
loopback): the order of discovery, the checks the specification requires (resource,
issuer, PKCE, RFC 9207), the 2025-03-26 fallbacks, the SSRF bounds and the retry limits.
Every refusal is checked on the wire too: after it, no request went where it must not."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import urllib.parse

import pytest
import trio

from runtime.client import AuthorizationFailed, OAuth, open_client
from runtime.client._auth import MAX_AUTH_RETRIES

from .fake_servers import FakeAuth, Request, ScriptedLogin, fake_auth, json_reply


def query(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


async def refused(oauth: OAuth, url: str) -> str:
    with pytest.raises(AuthorizationFailed) as caught:
        await oauth.login_to(url)
    return str(caught.value)


async def test_discovery_order_pkce_resource_and_registration(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            origin = fake.origin
            # Path-aware PRM missing: the root one; RFC 8414 missing: OpenID Connect.
            prm = fake.routes.pop("/.well-known/oauth-protected-resource/mcp")
            fake.routes["/.well-known/oauth-protected-resource"] = lambda r: json_reply(
                {**json.loads(prm(r)[2]), "scopes_supported": ["a", "b"]}
            )
            fake.routes["/.well-known/openid-configuration"] = fake.routes.pop(
                "/.well-known/oauth-authorization-server"
            )
            login = ScriptedLogin(iss=origin)
            oauth = OAuth(login=login)
            await oauth.login_to(f"{origin}/mcp")
            assert fake.paths() == [
                "GET /.well-known/oauth-protected-resource/mcp",
                "GET /.well-known/oauth-protected-resource",
                "GET /.well-known/oauth-authorization-server",
                "GET /.well-known/openid-configuration",
                "POST /register",
                "POST /token",
            ]
            registration = json.loads(fake.seen[4].body)
            assert registration["application_type"] == "native"
            assert registration["redirect_uris"] == [login.uri]
            assert registration["token_endpoint_auth_method"] == "none"
            asked = query(login.urls[0])
            assert login.urls[0].startswith(f"{origin}/authorize?")
            assert asked["resource"] == f"{origin}/mcp"
            assert asked["scope"] == "a b"  # scopes_supported, no challenge
            assert asked["code_challenge_method"] == "S256"
            assert asked["client_id"] == "registered-1"
            form = fake.seen[5].form()
            assert form["grant_type"] == "authorization_code"
            assert form["resource"] == f"{origin}/mcp"
            assert form["redirect_uri"] == login.uri
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            assert (
                base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == (asked["code_challenge"])
            )
            assert oauth.tokens is not None and oauth.tokens.access_token == "token-1"
    for secret in ("token-1", "refresh-1", "the-code", form["code_verifier"]):
        assert secret not in caplog.text
        assert secret not in repr(oauth) and secret not in repr(oauth.tokens)


async def test_the_challenge_names_the_metadata_and_the_scope() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            fake.routes["/custom/prm"] = fake.routes["/.well-known/oauth-protected-resource/mcp"]
            login = ScriptedLogin(iss=fake.origin)
            oauth = OAuth(login=login)
            url = f"{fake.origin}/mcp"
            assert await oauth.headers("POST", url) == ()
            header = (
                f'Bearer error="invalid_token", resource_metadata="{fake.origin}/custom/prm", '
                'scope="x y"'
            )
            await oauth.challenged(401, {"www-authenticate": header}, ())
            assert fake.paths()[0] == "GET /custom/prm"
            assert query(login.urls[0])["scope"] == "x y"
            assert await oauth.headers("POST", url) == (("Authorization", "Bearer token-1"),)


async def test_metadata_for_another_resource_is_refused() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(resource="https://elsewhere.example/mcp")
            message = await refused(OAuth(login=ScriptedLogin()), f"{fake.origin}/mcp")
            assert "RFC 9728" in message and "elsewhere.example" in message
            assert fake.paths() == ["GET /.well-known/oauth-protected-resource/mcp"]


async def test_a_sibling_path_is_another_resource() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(resource="PLACEHOLDER")
            fake.routes["/.well-known/oauth-protected-resource/mcp"] = lambda r: json_reply(
                {"resource": f"{fake.origin}/mc", "authorization_servers": [fake.origin]}
            )
            await refused(OAuth(login=ScriptedLogin()), f"{fake.origin}/mcp")
            assert len(fake.seen) == 1


async def test_metadata_with_another_issuer_is_refused() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(issuer="https://impostor.example")
            message = await refused(OAuth(login=ScriptedLogin()), f"{fake.origin}/mcp")
            assert "RFC 8414" in message
            assert not any(p.startswith("POST") for p in fake.paths())


async def test_without_s256_the_client_does_not_proceed() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(code_challenge_methods_supported=["plain"])
            login = ScriptedLogin(iss=fake.origin)
            message = await refused(OAuth(login=login), f"{fake.origin}/mcp")
            assert "S256" in message
            assert login.urls == [] and not any(p.startswith("POST") for p in fake.paths())


async def test_the_2025_03_26_fallbacks() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.routes["/register"] = lambda r: json_reply({"client_id": "legacy-1"}, 201)
            fake.routes["/token"] = fake.token
            login = ScriptedLogin()
            oauth = OAuth(login=login)
            await oauth.login_to(f"{fake.origin}/mcp")
            assert fake.paths() == [
                "GET /.well-known/oauth-protected-resource/mcp",
                "GET /.well-known/oauth-protected-resource",
                "GET /.well-known/oauth-authorization-server",
                "GET /.well-known/openid-configuration",
                "POST /register",
                "POST /token",
            ]
            assert login.urls[0].startswith(f"{fake.origin}/authorize?")


async def test_an_authorization_response_from_another_issuer_is_ignored() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            login = ScriptedLogin(
                iss="https://attacker.example",
                extra={"error": "access_denied", "error_description": "call +1-555-SCAM"},
            )
            message = await refused(OAuth(login=login), f"{fake.origin}/mcp")
            assert "RFC 9207" in message
            assert "SCAM" not in message  # a mismatched response's error is not shown
            assert "POST /token" not in fake.paths()


async def test_a_promised_iss_that_is_missing_is_refused() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(authorization_response_iss_parameter_supported=True)
            message = await refused(OAuth(login=ScriptedLogin(iss=None)), f"{fake.origin}/mcp")
            assert "no iss" in message
            assert "POST /token" not in fake.paths()


async def test_a_state_that_is_not_ours_is_refused() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            login = ScriptedLogin(iss=fake.origin, extra={"state": "forged"})
            assert "state" in await refused(OAuth(login=login), f"{fake.origin}/mcp")
            assert "POST /token" not in fake.paths()


async def test_metadata_urls_outside_the_bounds_are_not_followed() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            oauth = OAuth(login=ScriptedLogin(), fetch_timeout=0.5, max_metadata_bytes=4096)
            url = f"{fake.origin}/mcp"
            await oauth.headers("POST", url)
            # Plain http to a host that is not loopback: refused before any connection.
            for bad in ("http://192.0.2.1/prm", "file:///etc/passwd", "ftp://x/prm"):
                header = f'Bearer resource_metadata="{bad}"'
                with pytest.raises(AuthorizationFailed, match=r"https|not an http"):
                    await oauth.challenged(401, {"www-authenticate": header}, ())
            assert fake.seen == []
            # Too big: refused naming the limit.
            fake.routes["/big"] = lambda r: json_reply({"resource": "x" * 10_000})
            header = f'Bearer resource_metadata="{fake.origin}/big"'
            with pytest.raises(AuthorizationFailed, match=r"larger than 4096 bytes"):
                await oauth.challenged(401, {"www-authenticate": header}, ())
            # Never answering: refused after fetch_timeout.
            fake.routes["/slow"] = lambda r: (0, {}, b"")
            header = f'Bearer resource_metadata="{fake.origin}/slow"'
            with pytest.raises(AuthorizationFailed, match=r"within 0\.5 s"):
                await oauth.challenged(401, {"www-authenticate": header}, ())
            # A redirect is not followed.
            fake.routes["/moved"] = lambda r: (302, {"location": "http://192.0.2.1/"}, b"")
            fake.routes.pop("/.well-known/oauth-protected-resource/mcp")
            header = f'Bearer resource_metadata="{fake.origin}/moved"'
            await oauth.challenged(401, {"www-authenticate": header}, ())  # 2025-03-26 path
            assert "GET /moved" in fake.paths()


def refusing_mcp(fake: FakeAuth, status_with_token: int) -> None:
    """POST /mcp: 401 without a token; with one, ``status_with_token`` (a challenge)."""

    def mcp(request: Request) -> tuple[int, dict[str, str], bytes]:
        if "authorization" not in request.headers:
            return 401, {"www-authenticate": 'Bearer scope="read"'}, b""
        if status_with_token == 403:
            challenge = 'Bearer error="insufficient_scope", scope="write"'
            return 403, {"www-authenticate": challenge}, b""
        return 401, {"www-authenticate": 'Bearer error="invalid_token"'}, b""

    fake.routes["/mcp"] = mcp


async def test_a_server_that_refuses_every_token_stops_the_client() -> None:
    with trio.fail_after(20):
        async with fake_auth() as fake:
            fake.standard()
            refusing_mcp(fake, 401)
            oauth = OAuth(login=ScriptedLogin(iss=fake.origin))
            with pytest.raises(AuthorizationFailed, match="still refuses"):
                async with open_client(f"{fake.origin}/mcp", auth=oauth, era="modern"):
                    pass
            posts = [r for r in fake.seen if r.path == "/mcp"]
            assert len(posts) == MAX_AUTH_RETRIES + 1
            # One login, then a refresh for each refused token (never a login per request).
            assert oauth.logins == 1 and oauth.refreshes == MAX_AUTH_RETRIES - 1


async def test_step_up_asks_for_the_union_and_stops_at_its_limit() -> None:
    with trio.fail_after(20):
        async with fake_auth() as fake:
            fake.standard()
            refusing_mcp(fake, 403)
            login = ScriptedLogin(iss=fake.origin)
            oauth = OAuth(login=login, max_step_ups=1)
            with pytest.raises(AuthorizationFailed, match=r"after 1 step-up") as caught:
                async with open_client(f"{fake.origin}/mcp", auth=oauth, era="modern"):
                    pass
            assert caught.value.status == 403
            assert [query(u)["scope"] for u in login.urls] == ["read", "read write"]


async def test_one_oauth_never_shows_its_token_to_another_origin() -> None:
    oauth = OAuth()
    assert await oauth.headers("POST", "http://127.0.0.1:1/mcp") == ()
    assert await oauth.headers("POST", "http://127.0.0.1:1/messages?session=x") == ()
    with pytest.raises(AuthorizationFailed, match="one OAuth per server"):
        await oauth.headers("POST", "http://127.0.0.1:2/mcp")


async def test_a_new_authorization_server_means_a_new_registration() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard()
            origin = fake.origin
            oauth = OAuth(login=ScriptedLogin(iss=origin))
            url = f"{origin}/mcp"
            await oauth.login_to(url)
            assert fake.paths().count("POST /register") == 1
            # The resource moves to another authorization server (an issuer with a path).
            tenant = f"{origin}/tenant2"
            fake.routes["/.well-known/oauth-protected-resource/mcp"] = lambda r: json_reply(
                {"resource": url, "authorization_servers": [tenant]}
            )
            fake.routes["/.well-known/oauth-authorization-server/tenant2"] = lambda r: json_reply(
                {
                    "issuer": tenant,
                    "authorization_endpoint": f"{tenant}/authorize",
                    "token_endpoint": f"{origin}/token",
                    "registration_endpoint": f"{tenant}/register",
                    "code_challenge_methods_supported": ["S256"],
                }
            )
            fake.routes["/tenant2/register"] = lambda r: json_reply({"client_id": "tenant2-1"})
            oauth.login = login = ScriptedLogin(iss=tenant)
            await oauth.login_to(url)
            assert "POST /tenant2/register" in fake.paths()
            assert query(login.urls[0])["client_id"] == "tenant2-1"
            entry = await oauth.store.load(url)
            assert entry is not None and entry.client is not None
            assert (entry.issuer, entry.client.issuer) == (tenant, tenant)


async def test_a_refresh_asks_for_the_resource_the_login_asked_for() -> None:
    with trio.fail_after(10):
        async with fake_auth() as fake:
            fake.standard(resource="PLACEHOLDER")
            origin = fake.origin
            fake.routes["/.well-known/oauth-protected-resource/mcp"] = lambda r: json_reply(
                {"resource": origin, "authorization_servers": [origin]}  # a parent path
            )
            oauth = OAuth(login=ScriptedLogin(iss=origin))
            url = f"{origin}/mcp"
            await oauth.login_to(url)
            assert fake.seen[-1].form()["resource"] == origin
            # The token is refused (expired early): a refresh, for the same resource.
            header = {"www-authenticate": 'Bearer error="invalid_token"'}
            await oauth.challenged(401, header, [("Authorization", "Bearer token-1")])
            refresh = fake.seen[-1].form()
            assert refresh["grant_type"] == "refresh_token"
            assert refresh["refresh_token"] == "refresh-1"
            assert refresh["resource"] == origin
            assert oauth.refreshes == 1 and oauth.logins == 1
