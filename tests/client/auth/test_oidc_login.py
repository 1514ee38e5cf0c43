"""The OAuth client against a real OpenID provider (npm oidc-provider) protecting a real MCP
server (examples/oauth_notes.py), every byte over loopback sockets: discovery, Dynamic
Client Registration, the browser step (headless), PKCE, the resource parameter, RFC 9207,
refresh, step-up and revocation."""

from __future__ import annotations

import base64
import json
from typing import Any

import trio

from runtime.client import (
    AuthorizationFailed,
    LoopbackLogin,
    MemoryTokenStore,
    OAuth,
    open_client,
)

from .headless import HeadlessBrowser
from .oidc_provider import SERVICE_CLIENT, SERVICE_SECRET, protected_notes, revoke


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def text_of(result: Any) -> str:
    return result.content[0].text


async def test_login_discovery_registration_and_step_up() -> None:
    browser = HeadlessBrowser()
    store = MemoryTokenStore()
    with trio.fail_after(60):
        async with protected_notes() as (url, provider):
            oauth = OAuth(login=LoopbackLogin(open_browser=browser), store=store)
            async with open_client(url, auth=oauth) as client:
                me = await client.call_tool("whoami", {})
                assert me.structured_content["subject"] == "user-42"
                assert browser.visits == 1 and oauth.logins == 1
                tokens = oauth.tokens
                assert tokens is not None and tokens.refresh_token
                claims = claims_of(tokens.access_token)
                assert claims["aud"] == url  # the resource parameter (RFC 8707)
                assert claims["iss"] == provider.issuer
                assert "notes:read" in claims["scope"].split()
                assert "notes:write" not in claims["scope"].split()
                # Discovery: the metadata the server's challenge named, the provider's
                # RFC 8414 metadata, Dynamic Client Registration, the token endpoint.
                issuer = provider.issuer
                assert [u for _, u in oauth.requested] == [
                    url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"),
                    f"{issuer}/.well-known/oauth-authorization-server",
                    f"{issuer}/reg",
                    f"{issuer}/token",
                ]

                # A tool that needs notes:write: 403 insufficient_scope, a step-up login
                # asking for both scopes, the call sent again.
                saved = await client.call_tool("write_note", {"name": "plan", "text": "ship"})
                assert text_of(saved) == "saved plan"
                assert browser.visits == 2 and oauth.logins == 2
                assert oauth.tokens is not None
                scopes = claims_of(oauth.tokens.access_token)["scope"].split()
                assert {"notes:read", "notes:write"} <= set(scopes)
                # The same client registration was used for the step-up (bound to issuer).
                assert sum(1 for m, u in oauth.requested if u.startswith(f"{issuer}/reg")) == 1


async def test_without_a_login_a_needed_login_is_a_clear_failure() -> None:
    with trio.fail_after(30):
        async with protected_notes() as (url, _provider):
            oauth = OAuth()  # no login: stored tokens only, and there are none
            try:
                async with open_client(url, auth=oauth, timeout=20) as client:
                    await client.call_tool("whoami", {})
            except AuthorizationFailed as exc:
                assert "mcp-runtime login" in str(exc)
                assert exc.status == 401
            else:
                raise AssertionError("no AuthorizationFailed")


async def test_one_refresh_for_many_concurrent_calls() -> None:
    browser = HeadlessBrowser()
    with trio.fail_after(60):
        async with protected_notes(token_ttl=3) as (url, _provider):
            # A 3 s token refreshed in its last 2.5 s: stale half a second after the login.
            oauth = OAuth(login=LoopbackLogin(open_browser=browser), refresh_margin=2.5)
            async with open_client(url, auth=oauth) as client:
                await client.call_tool("whoami", {})
                first = oauth.tokens
                assert first is not None and oauth.refreshes == 0
                await trio.sleep(0.6)
                results: list[str] = []

                async def call() -> None:
                    result = await client.call_tool("whoami", {})
                    results.append(result.structured_content["subject"])

                async with trio.open_nursery() as nursery:
                    for _ in range(12):
                        nursery.start_soon(call)
                assert results == ["user-42"] * 12
                assert oauth.refreshes == 1  # one refresh, however many requests waited
                token_posts = [u for m, u in oauth.requested if u.endswith("/token")]
                assert len(token_posts) == 2  # the code, then the one refresh
                assert oauth.tokens is not None
                assert oauth.tokens.access_token != first.access_token
                assert oauth.tokens.refresh_token != first.refresh_token  # rotated
                assert browser.visits == 1


async def test_a_refresh_token_revoked_mid_session_means_a_new_login() -> None:
    browser = HeadlessBrowser()
    with trio.fail_after(60):
        async with protected_notes(token_ttl=2) as (url, provider):
            oauth = OAuth(login=LoopbackLogin(open_browser=browser), refresh_margin=0.5)
            async with open_client(url, auth=oauth) as client:
                await client.call_tool("whoami", {})
                tokens = oauth.tokens
                assert tokens is not None and tokens.refresh_token is not None
                entry = await oauth.store.load(url)
                assert entry is not None and entry.client is not None
                status = await trio.to_thread.run_sync(
                    revoke, provider, tokens.refresh_token, entry.client.client_id
                )
                assert status == 200
                await trio.sleep(1.6)  # the access token is now within its refresh margin
                me = await client.call_tool("whoami", {})
                assert me.structured_content["subject"] == "user-42"
                assert oauth.refreshes == 0  # the refresh was refused...
                assert browser.visits == 2  # ...so the user logged in again
                refused = [u for m, u in oauth.requested if u.endswith("/token")]
                assert len(refused) == 3  # code, the refused refresh, the new code


async def test_a_revoked_refresh_token_without_a_login_fails_clearly() -> None:
    browser = HeadlessBrowser()
    store = MemoryTokenStore()
    with trio.fail_after(60):
        async with protected_notes(token_ttl=2) as (url, provider):
            interactive = OAuth(login=LoopbackLogin(open_browser=browser), store=store)
            async with open_client(url, auth=interactive) as client:
                await client.call_tool("whoami", {})
            tokens = interactive.tokens
            assert tokens is not None and tokens.refresh_token is not None
            entry = await store.load(url)
            assert entry is not None and entry.client is not None
            await trio.to_thread.run_sync(
                revoke, provider, tokens.refresh_token, entry.client.client_id
            )
            await trio.sleep(2.1)  # expired
            stored_only = OAuth(store=store)  # a later process: stored tokens, no login
            try:
                async with open_client(url, auth=stored_only, timeout=20) as client:
                    await client.call_tool("whoami", {})
            except AuthorizationFailed as exc:
                assert "mcp-runtime login" in str(exc)
                assert tokens.access_token not in str(exc)
            else:
                raise AssertionError("no AuthorizationFailed")
            assert (await store.load(url)).tokens is None  # the dead tokens are forgotten


async def test_client_credentials_with_client_secret_basic() -> None:
    with trio.fail_after(30):
        async with protected_notes() as (url, _provider):
            oauth = OAuth(
                grant="client_credentials",
                client_id=SERVICE_CLIENT,
                client_secret=SERVICE_SECRET,
                scope="notes:read",
            )
            assert SERVICE_SECRET not in repr(oauth)
            async with open_client(url, auth=oauth) as client:
                me = await client.call_tool("whoami", {})
                assert me.structured_content["client_id"] == SERVICE_CLIENT
                assert oauth.logins == 1
                assert not any(u.endswith("/reg") for _, u in oauth.requested)


async def test_the_legacy_sse_transport_logs_in_too() -> None:
    browser = HeadlessBrowser()
    with trio.fail_after(60):
        async with protected_notes(transport="sse") as (url, _provider):
            assert url.endswith("/sse")
            oauth = OAuth(login=LoopbackLogin(open_browser=browser))
            async with open_client(url, auth=oauth) as client:
                me = await client.call_tool("whoami", {})
                assert me.structured_content["subject"] == "user-42"
            assert browser.visits == 1
            assert claims_of(oauth.tokens.access_token)["aud"] == url  # type: ignore[union-attr]
