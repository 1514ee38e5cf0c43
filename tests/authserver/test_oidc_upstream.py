"""The authorization server in front of a real OpenID provider (npm oidc-provider): a person
logs in there; the MCP client gets our token, never the provider's."""

from __future__ import annotations

import base64

import msgspec
import pytest
import trio

from runtime.authserver import OIDCUpstream
from runtime.authserver._pkce import make_pair

from .browser import Browser
from .helpers import (
    authorize_url,
    bound_socket,
    mcp_status,
    query_of,
    redeem,
    register,
    serve_protected,
)
from .provider import CLIENT_ID, CLIENT_SECRET, open_provider

pytestmark = pytest.mark.trio


async def provider_login(browser: Browser, url: str, login: str) -> str:
    """Consent at ours, log in and confirm at the provider; where the browser ends."""
    where, page = await browser.go(url)
    assert page is not None and page.status == 200, page
    where, page = await browser.submit(where, page, ("decision", "approve"))
    assert page is not None and page.status == 200, page  # the provider's login page
    where, page = await browser.submit(where, page, login=login, password="any")
    if page is not None:  # the provider's own consent page
        where, page = await browser.submit(where, page)
    assert page is None, page.body[:2000] if page else None
    return where


async def test_login_at_a_real_openid_provider() -> None:
    with trio.fail_after(60):
        sock = bound_socket()
        port = sock.getsockname()[1]
        async with open_provider(f"http://127.0.0.1:{port}/callback") as issuer:
            provider_port = int(issuer.rsplit(":", 1)[1])

            def upstream(base: str) -> OIDCUpstream:
                return OIDCUpstream(issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)

            async with serve_protected(upstream, sock=sock) as served:
                client = await register(served)
                browser = Browser({served.port, provider_port})
                verifier, challenge = make_pair()
                back = await provider_login(
                    browser, authorize_url(served, client["client_id"], challenge), "carol"
                )
                params = query_of(back)
                assert params["iss"] == served.base and params["state"] == "st-1"
                answer = await redeem(served, client["client_id"], params["code"], verifier)
                assert answer.status == 200, answer.body
                tokens = answer.json()
                payload = tokens["access_token"].split(".")[1]
                claims = msgspec.json.decode(base64.urlsafe_b64decode(payload + "=="))
                # Our token: our issuer, the resource, the provider's subject.
                assert claims["iss"] == served.base
                assert claims["aud"] == f"{served.base}/mcp"
                assert claims["sub"] == "carol"
                assert "id_token" not in tokens
                assert (await mcp_status(served, tokens["access_token"])).status == 200


async def test_the_provider_down_is_temporarily_unavailable_not_a_crash() -> None:
    with trio.fail_after(30):
        from .provider import _free_port

        dead = f"http://127.0.0.1:{_free_port()}"

        def upstream(base: str) -> OIDCUpstream:
            return OIDCUpstream(dead, client_id="x", client_secret="y", timeout=2)

        async with serve_protected(upstream) as served:
            client = await register(served)
            browser = Browser({served.port})
            _, challenge = make_pair()
            where, page = await browser.go(authorize_url(served, client["client_id"], challenge))
            assert page is not None
            back, page = await browser.submit(where, page, ("decision", "approve"))
            assert page is None
            params = query_of(back)
            assert params["error"] == "temporarily_unavailable"
            assert params["state"] == "st-1"
            # The server lives on.
            assert (await mcp_status(served, None)).status == 401


async def test_the_official_sdk_client_logs_in_through_the_provider_and_calls_a_tool() -> None:
    from tests.peers import run_sdk_client

    with trio.fail_after(90):
        sock = bound_socket()
        port = sock.getsockname()[1]
        async with open_provider(f"http://127.0.0.1:{port}/callback") as issuer:

            def upstream(base: str) -> OIDCUpstream:
                return OIDCUpstream(issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)

            async with serve_protected(upstream, sock=sock) as served:
                seen = await run_sdk_client(
                    "authserver/sdk_oauth_client.py", f"{served.base}/mcp", "dana"
                )
        assert seen["whoami"]["content"][0]["text"] == "dana"
        assert seen["whoami"].get("isError") is not True
        assert seen["logins"] == 1
        assert seen["scope"] == "notes:read"
        assert seen["has_refresh"] is True


async def test_a_provider_that_never_answers_is_cut_at_its_timeout() -> None:
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections (the kernel's backlog), never answers
    try:
        where_silent = f"http://127.0.0.1:{silent.getsockname()[1]}"

        def upstream(base: str) -> OIDCUpstream:
            return OIDCUpstream(where_silent, client_id="x", client_secret="y", timeout=1)

        with trio.fail_after(30):
            async with serve_protected(upstream) as served:
                client = await register(served)
                browser = Browser({served.port})
                _, challenge = make_pair()
                where, page = await browser.go(
                    authorize_url(served, client["client_id"], challenge)
                )
                assert page is not None
                started = trio.current_time()
                back, page = await browser.submit(where, page, ("decision", "approve"))
                assert page is None
                assert query_of(back)["error"] == "temporarily_unavailable"
                assert trio.current_time() - started < 10
    finally:
        silent.close()
