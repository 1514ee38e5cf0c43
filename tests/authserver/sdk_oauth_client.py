"""The official SDK's client logs in to a server protected by the runtime's authorization
server and calls a tool. Usage: python sdk_oauth_client.py MCP_URL LOGIN

Its OAuth client provider does discovery (Protected Resource Metadata, RFC 8414), Dynamic
Client Registration, PKCE and the token exchange; the person's part (our consent page, the
provider's login and consent, or the development login) is played by an HTTP client that
submits the pages' forms, as a browser without script would. Prints what it saw as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class FirstForm(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.method = "get"
        self.fields: dict[str, str] = {}
        self.button: tuple[str, str] | None = None
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if self.done:
            return
        if tag == "form" and self.action is None:
            self.action, self.method = a.get("action", ""), a.get("method", "get").lower()
        elif tag == "input" and self.action is not None and "name" in a:
            self.fields[a["name"]] = a.get("value", "")
        elif tag == "button" and self.action is not None and self.button is None:
            self.button = (a.get("name", ""), a.get("value", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.action is not None:
            self.done = True


async def browse(url: str, login: str) -> str:
    """Follow the login from ``url`` until a redirect to REDIRECT; return that URL."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=20) as browser:
        method, data = "GET", None
        for _ in range(30):
            if url.startswith(REDIRECT):
                return url
            response = await browser.request(method, url, data=data)
            if response.status_code in (301, 302, 303, 307, 308):
                url = urljoin(url, response.headers["location"])
                method, data = "GET", None
                continue
            assert response.status_code == 200, (response.status_code, response.text[:500])
            form = FirstForm()
            form.feed(response.text)
            assert form.action is not None, response.text[:1000]
            fields = dict(form.fields)
            if "login" in fields or "password" in fields:
                fields.update(login=login, password="any")
            if form.button and form.button[0]:
                name, value = form.button
                if name == "user":
                    value = login
                fields[name] = value
            url, method, data = urljoin(url, form.action), form.method.upper(), fields
        raise AssertionError("the login did not end")


async def main(url: str, login: str) -> None:
    landed: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        landed.append(await browse(authorization_url, login))

    async def callback_handler() -> AuthorizationCodeResult:
        params = {k: v[0] for k, v in parse_qs(urlsplit(landed[-1]).query).items()}
        return AuthorizationCodeResult(
            code=params["code"], state=params.get("state"), iss=params.get("iss")
        )

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="official SDK",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    out: dict[str, Any] = {}
    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("whoami", {})
        out["whoami"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    out["logins"] = len(landed)
    out["scope"] = storage.tokens.scope if storage.tokens else None
    out["has_refresh"] = bool(storage.tokens and storage.tokens.refresh_token)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
