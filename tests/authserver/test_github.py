"""The GitHub preset (OAuth apps are not OpenID Connect) against a loopback stand-in of
GitHub's endpoints: login, the subject from ``GET /user``, GitHub's token kept from clients."""

from __future__ import annotations

import base64

import msgspec
import pytest
import trio

from runtime.authserver import GitHubUpstream
from runtime.authserver._pkce import make_pair

from .browser import Browser
from .github_standin import CLIENT_ID, CLIENT_SECRET, GitHubStandIn
from .helpers import authorize_url, mcp_status, query_of, redeem, register, serve_protected

pytestmark = pytest.mark.trio


async def test_login_with_github() -> None:
    github = GitHubStandIn()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(github.serve)
            site = f"http://127.0.0.1:{port}"

            def upstream(base: str) -> GitHubUpstream:
                return GitHubUpstream(
                    client_id=CLIENT_ID, client_secret=CLIENT_SECRET, web=site, api=site
                )

            async with serve_protected(upstream) as served:
                client = await register(served)
                browser = Browser({served.port, port})
                verifier, challenge = make_pair()
                where, page = await browser.go(
                    authorize_url(served, client["client_id"], challenge)
                )
                assert page is not None
                back, page = await browser.submit(where, page, ("decision", "approve"))
                assert page is None, page
                params = query_of(back)
                tokens = (
                    await redeem(served, client["client_id"], params["code"], verifier)
                ).json()
                claims = msgspec.json.decode(
                    base64.urlsafe_b64decode(tokens["access_token"].split(".")[1] + "==")
                )
                assert claims["sub"] == "github:4242"
                assert not any(t.startswith("gho_") for t in map(str, tokens.values()))
                assert (await mcp_status(served, tokens["access_token"])).status == 200
                assert github.user_calls == 1
                # A code GitHub refuses (answered 200 with an error member): access_denied.
                verifier, challenge = make_pair()
                where, page = await browser.go(
                    authorize_url(served, client["client_id"], challenge)
                )
                assert page is not None
                github.codes.clear()  # GitHub forgot the code it is about to be given back
                original = github.answer

                def forgetful(*args: object) -> tuple[int, list[tuple[str, str]], bytes]:
                    status, headers, body = original(*args)  # type: ignore[arg-type]
                    github.codes.clear()
                    return status, headers, body

                github.answer = forgetful  # type: ignore[method-assign]
                back, page = await browser.submit(where, page, ("decision", "approve"))
                assert query_of(back)["error"] == "access_denied"
            nursery.cancel_scope.cancel()
