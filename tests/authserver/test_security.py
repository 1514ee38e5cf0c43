"""The attacks an authorization server must refuse, each over real sockets."""

from __future__ import annotations

import pytest
import trio

from runtime.authserver import AuthServerSettings, DevStaticUsers
from runtime.authserver._pkce import make_pair
from tests.transports.http_client import request

from .browser import Browser
from .helpers import (
    REDIRECT,
    authorize_url,
    form_post,
    full_login,
    mcp_status,
    query_of,
    redeem,
    register,
    serve_protected,
)

pytestmark = pytest.mark.trio


def dev(base: str) -> DevStaticUsers:
    return DevStaticUsers(["alice"])


async def test_a_code_is_good_once_and_its_reuse_revokes_what_it_gave() -> None:
    with trio.fail_after(30):
        async with serve_protected(dev) as served:
            client = await register(served)
            verifier, code, _ = await full_login(
                served, Browser({served.port}), client["client_id"]
            )
            first = await redeem(served, client["client_id"], code, verifier)
            assert first.status == 200
            token = first.json()["access_token"]
            assert (await mcp_status(served, token)).status == 200
            second = await redeem(served, client["client_id"], code, verifier)
            assert second.status == 400
            assert second.json()["error"] == "invalid_grant"
            # RFC 6749 section 4.1.2: the tokens issued from the reused code are revoked.
            assert (await mcp_status(served, token)).status == 401
            refresh = await form_post(
                served,
                "/token",
                {
                    "grant_type": "refresh_token",
                    "refresh_token": first.json()["refresh_token"],
                    "client_id": client["client_id"],
                },
            )
            assert refresh.json()["error"] == "invalid_grant"


async def test_pkce_is_required_and_plain_is_refused() -> None:
    with trio.fail_after(30):
        async with serve_protected(dev) as served:
            client = await register(served)
            browser = Browser({served.port})
            for method, challenge in (("", ""), ("plain", "x" * 43), ("S256", "")):
                url = authorize_url(
                    served, client["client_id"], challenge, code_challenge_method=method
                )
                back, page = await browser.go(url)
                assert page is None
                params = query_of(back)
                assert params["error"] == "invalid_request", (method, params)
                assert params["state"] == "st-1" and params["iss"] == served.base
            # A wrong verifier spends the code.
            verifier, code, _ = await full_login(served, browser, client["client_id"])
            other, _ = make_pair()
            wrong = await redeem(served, client["client_id"], code, other)
            assert wrong.status == 400 and wrong.json()["error"] == "invalid_grant"
            assert (await redeem(served, client["client_id"], code, verifier)).status == 400
            # No verifier at all.
            verifier, code, _ = await full_login(served, browser, client["client_id"])
            missing = await redeem(served, client["client_id"], code, "")
            assert missing.json()["error"] == "invalid_grant"


@pytest.mark.parametrize(
    "redirect",
    [
        "http://127.0.0.1:9/callback/../evil",  # another path
        "http://127.0.0.1:9/callbackx",  # a prefix match is no match
        "http://127.0.0.1:9/callback#frag",  # a fragment
        "http://127.0.0.1.evil.example:9/callback",  # another host
        "https://evil.example/callback",  # an open redirect
    ],
)
async def test_an_unregistered_redirect_uri_is_shown_an_error_never_redirected(
    redirect: str,
) -> None:
    with trio.fail_after(20):
        async with serve_protected(dev) as served:
            client = await register(served)
            _, challenge = make_pair()
            url = authorize_url(served, client["client_id"], challenge, redirect_uri=redirect)
            _where, page = await Browser({served.port}).go(url)
            assert page is not None and page.status == 400
            assert "location" not in page.headers
            assert b"redirect URI is not registered" in page.body


async def test_other_port_only_for_loopback_and_token_redirect_must_match() -> None:
    with trio.fail_after(30):
        async with serve_protected(dev) as served:
            https_client = await register(served, redirect_uris=["https://app.example/cb"])
            _, challenge = make_pair()
            url = authorize_url(
                served,
                https_client["client_id"],
                challenge,
                redirect_uri="https://app.example:8443/cb",
            )
            _, page = await Browser({served.port}).go(url)
            assert page is not None and page.status == 400
            # Loopback: any port (RFC 8252 section 7.3).
            client = await register(served)
            other_port = REDIRECT.replace(":9/", ":5555/")
            url = authorize_url(served, client["client_id"], challenge, redirect_uri=other_port)
            browser = Browser({served.port})
            _where, page = await browser.go(url)
            assert page is not None and page.status == 200
            # At the token endpoint the redirect URI must be the authorize request's.
            verifier, code, _ = await full_login(served, browser, client["client_id"])
            bad = await redeem(served, client["client_id"], code, verifier, redirect_uri=other_port)
            assert bad.json()["error"] == "invalid_grant"


async def test_a_callback_state_is_good_once() -> None:
    with trio.fail_after(30):
        async with serve_protected(dev) as served:
            client = await register(served)
            browser = Browser({served.port})
            _verifier, challenge = make_pair()
            url = authorize_url(served, client["client_id"], challenge)
            where, page = await browser.go(url)
            assert page is not None
            where, page = await browser.submit(where, page, ("decision", "approve"))
            assert page is not None
            # Log in, but record the callback URL the login page redirects to.
            from .browser import forms

            form = forms(page.body)[0][0]
            login = await browser.fetch(
                "POST",
                f"{served.base}{form.action}",
                f"state={form.fields['state']}&user=alice".encode(),
            )
            callback = login.headers["location"]
            # Another browser that learnt the URL gets nothing, and spends nothing.
            stranger = await Browser({served.port}).fetch("GET", callback)
            assert stranger.status == 400
            first = await browser.fetch("GET", callback)
            assert first.status == 302 and "code=" in first.headers["location"]
            replay = await browser.fetch("GET", callback)
            assert replay.status == 400
            assert b"Unknown or used login" in replay.body


async def test_the_consent_needs_the_browser_that_saw_the_page() -> None:
    with trio.fail_after(20):
        async with serve_protected(dev) as served:
            client = await register(served)
            _, challenge = make_pair()
            victim = Browser({served.port})
            _where, page = await victim.go(authorize_url(served, client["client_id"], challenge))
            assert page is not None
            from .browser import forms

            form = forms(page.body)[0][0]
            # The same form, posted by another browser: refused without a cookie, and with
            # the cookie of a login of its own.
            other = Browser({served.port})
            forged = await other.go(
                f"{served.base}{form.action}",
                method="POST",
                fields={**form.fields, "decision": "approve"},
            )
            assert forged[1] is not None and forged[1].status == 400
            await other.go(authorize_url(served, client["client_id"], challenge))
            assert other.jar[served.port]
            forged = await other.go(
                f"{served.base}{form.action}",
                method="POST",
                fields={**form.fields, "decision": "approve"},
            )
            assert forged[1] is not None and forged[1].status == 400
            # The victim's own browser goes on.
            mine = await victim.go(
                f"{served.base}{form.action}",
                method="POST",
                fields={**form.fields, "decision": "approve"},
            )
            assert mine[1] is not None and mine[1].status == 200


async def test_a_registration_flood_stops_at_max_clients() -> None:
    settings = AuthServerSettings(max_clients=5)
    with trio.fail_after(30):
        async with serve_protected(dev, settings=settings) as served:
            for _ in range(5):
                await register(served)
            refused = await request(
                served.address,
                "POST",
                "/register",
                body={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
            )
            assert refused.status == 429
            assert "max_clients=5" in refused.json()["error_description"]
            bad = await request(
                served.address,
                "POST",
                "/register",
                body={"redirect_uris": ["http://evil.example/cb"]},
            )
            assert bad.status == 400 and bad.json()["error"] == "invalid_redirect_uri"


async def test_a_token_for_another_resource_is_refused() -> None:
    with trio.fail_after(40):
        async with serve_protected(dev) as one, serve_protected(dev) as two:
            client = await register(one)
            verifier, code, _ = await full_login(one, Browser({one.port}), client["client_id"])
            token = (await redeem(one, client["client_id"], code, verifier)).json()["access_token"]
            assert (await mcp_status(one, token)).status == 200
            refused = await mcp_status(two, token)
            assert refused.status == 401
            assert 'error="invalid_token"' in refused.headers["www-authenticate"]
            # Nor is a token for another resource asked for at all.
            _, challenge = make_pair()
            url = authorize_url(one, client["client_id"], challenge, resource=f"{two.base}/mcp")
            back, _ = await Browser({one.port}).go(url)
            assert query_of(back)["error"] == "invalid_target"


async def test_refresh_token_reuse_revokes_the_family_and_revocation_works() -> None:
    with trio.fail_after(30):
        async with serve_protected(dev) as served:
            client = await register(served)
            browser = Browser({served.port})
            verifier, code, _ = await full_login(served, browser, client["client_id"])
            tokens = (await redeem(served, client["client_id"], code, verifier)).json()
            fields = {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client["client_id"],
            }
            rotated = (await form_post(served, "/token", fields)).json()
            reused = await form_post(served, "/token", fields)
            assert reused.json()["error"] == "invalid_grant"
            assert (await mcp_status(served, rotated["access_token"])).status == 401
            again = {**fields, "refresh_token": rotated["refresh_token"]}
            assert (await form_post(served, "/token", again)).json()["error"] == "invalid_grant"
            # RFC 7009: a fresh login, then revoked by its client.
            verifier, code, _ = await full_login(served, browser, client["client_id"])
            tokens = (await redeem(served, client["client_id"], code, verifier)).json()
            done = await form_post(
                served,
                "/revoke",
                {"token": tokens["refresh_token"], "client_id": client["client_id"]},
            )
            assert done.status == 200
            assert (await mcp_status(served, tokens["access_token"])).status == 401
            unknown = await form_post(
                served, "/revoke", {"token": "nothing", "client_id": client["client_id"]}
            )
            assert unknown.status == 200


async def test_a_confidential_client_must_authenticate() -> None:
    with trio.fail_after(30):
        async with serve_protected(dev) as served:
            client = await register(served, token_endpoint_auth_method="client_secret_basic")
            assert client["client_secret"]
            browser = Browser({served.port})
            verifier, code, _ = await full_login(served, browser, client["client_id"])
            refused = await redeem(served, client["client_id"], code, verifier)
            assert refused.status == 401 and refused.json()["error"] == "invalid_client"
            verifier, code, _ = await full_login(served, browser, client["client_id"])
            import base64

            basic = base64.b64encode(
                f"{client['client_id']}:{client['client_secret']}".encode()
            ).decode()
            fields = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "code_verifier": verifier,
            }
            ok = await form_post(served, "/token", fields, {"authorization": f"Basic {basic}"})
            assert ok.status == 200, ok.body
