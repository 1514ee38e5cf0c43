"""GitHub as the place people log in: its OAuth apps, which are not OpenID Connect.

No discovery and no ID token: the endpoints are fixed (``github.com/login/oauth/authorize``
and ``/access_token``), the code is redeemed for a GitHub token (with our PKCE verifier:
GitHub supports S256), and who logged in is asked of the API (``GET /user``) with that token,
which is then dropped. The subject is ``github:<numeric id>``: the id never changes, a login
name can. The token endpoint answers errors with 200 and an ``error`` member, so the member
is what is checked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import quote, urlencode

from ..auth import Route
from ._fetch import check_upstream_url, fetch_json

__all__ = ["GitHubUpstream"]

log = logging.getLogger("mcp_runtime.authserver")


class GitHubUpstream:
    """A GitHub OAuth app (``client_id``, ``client_secret``) as the upstream. ``web`` and
    ``api`` are GitHub's (GitHub Enterprise Server: its own); every call is bounded by
    ``timeout`` seconds and ``max_bytes``."""

    name = "github"

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        scopes: tuple[str, ...] = ("read:user",),
        web: str = "https://github.com",
        api: str = "https://api.github.com",
        timeout: float = 10.0,
        max_bytes: int = 256 * 1024,
    ) -> None:
        if not client_id or not client_secret:
            raise ValueError("a GitHub OAuth app needs its client id and client secret")
        check_upstream_url(web, "the GitHub web URL")
        check_upstream_url(api, "the GitHub API URL")
        self.client_id = client_id
        self._secret = client_secret
        self.scopes = scopes
        self.web = web.rstrip("/")
        self.api = api.rstrip("/")
        self.timeout = timeout
        self.max_bytes = max_bytes

    def __repr__(self) -> str:  # never the secret
        return f"GitHubUpstream(client_id={self.client_id!r}, web={self.web!r})"

    def routes(self, base: str) -> Mapping[str, Route]:
        return {}

    async def authorization_url(
        self, *, state: str, nonce: str, code_challenge: str, redirect_uri: str
    ) -> str:
        query = urlencode(
            {
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.scopes),
                "state": state,
                "code_challenge": code_challenge,
                "code_challenge_method": "S256",
                "allow_signup": "false",
            },
            quote_via=quote,
        )
        return f"{self.web}/login/oauth/authorize?{query}"

    async def identify(
        self, *, code: str, code_verifier: str, redirect_uri: str, nonce: str
    ) -> str | None:
        status, answer = await fetch_json(
            f"{self.web}/login/oauth/access_token",
            form={
                "client_id": self.client_id,
                "client_secret": self._secret,
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": code_verifier,
            },
            timeout=self.timeout,
            max_bytes=self.max_bytes,
        )
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if status != 200 or not isinstance(token, str):
            error = answer.get("error") if isinstance(answer, dict) else None
            log.warning("authserver.upstream_refused status=%d error=%s", status, error)
            return None
        status, user = await fetch_json(
            f"{self.api}/user",
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
            },
            timeout=self.timeout,
            max_bytes=self.max_bytes,
        )
        user_id = user.get("id") if isinstance(user, dict) else None
        if status != 200 or not isinstance(user_id, int) or isinstance(user_id, bool):
            log.warning("authserver.upstream_user_unreadable status=%d", status)
            return None
        return f"github:{user_id}"
