"""Serving a protected MCP server with the runtime's authorization server, on loopback, and
an MCP client's side of the OAuth dance (registration, PKCE, the token requests), raw."""

from __future__ import annotations

import functools
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import msgspec
import trio

from runtime import Context, Server
from runtime.auth import AccessToken
from runtime.authserver import AuthorizationServer, AuthServerSettings, Upstream
from runtime.authserver._pkce import make_pair
from tests.transports.http_client import Response, request

from .browser import Browser

REDIRECT = (
    "http://127.0.0.1:9/callback"  # the client's loopback listener (nobody needs to be there)
)


def make_app() -> Server:
    app = Server("protected")

    @app.tool
    def whoami(ctx: Context) -> str:
        """Who is calling."""
        assert isinstance(ctx.principal, AccessToken)
        return ctx.principal.subject

    return app


def bound_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@dataclass
class Served:
    address: tuple[str, int]
    base: str
    login: AuthorizationServer

    @property
    def port(self) -> int:
        return self.address[1]


@asynccontextmanager
async def serve_protected(
    upstream: Callable[[str], Upstream],
    *,
    settings: AuthServerSettings | None = None,
    scopes: tuple[str, ...] = ("notes:read",),
    sock: socket.socket | None = None,
) -> AsyncIterator[Served]:
    """The ``whoami`` server behind an AuthorizationServer whose issuer is its own origin
    (on ``sock``, a bound socket, when given: its port must be known beforehand)."""
    sock = sock or bound_socket()
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    login = AuthorizationServer(
        issuer=base,
        resource=f"{base}/mcp",
        upstream=upstream(base),
        scopes=scopes,
        settings=settings,
    )
    app = make_app()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(
            functools.partial(app.serve_http, sock=sock, auth=login.auth_config())
        )
        yield Served(tuple(address[:2]), base, login)
        nursery.cancel_scope.cancel()


async def register(served: Served, **metadata: Any) -> dict[str, Any]:
    document = {
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "client_name": "Test Client",
        **metadata,
    }
    response = await request(served.address, "POST", "/register", body=document)
    assert response.status == 201, response
    return dict(response.json())


def authorize_url(served: Served, client_id: str, challenge: str, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": f"{served.base}/mcp",
        **extra,
    }
    params = {k: v for k, v in params.items() if v != ""}
    return f"{served.base}/authorize?{urlencode(params)}"


async def form_post(
    served: Served, path: str, fields: dict[str, str], headers: dict[str, str] | None = None
) -> Response:
    return await request(
        served.address,
        "POST",
        path,
        headers={"content-type": "application/x-www-form-urlencoded", **(headers or {})},
        body=urlencode(fields).encode(),
    )


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def dev_login(served: Served, browser: Browser, url: str, user: str = "alice") -> str:
    """Consent, then pick ``user`` on the development login page; the URL the browser was
    sent back to (the client's redirect URI with code, state and iss)."""
    where, page = await browser.go(url)
    assert page is not None and page.status == 200, page
    where, page = await browser.submit(where, page, ("decision", "approve"))
    assert page is not None and page.status == 200, page  # the development login page
    where, page = await browser.submit(where, page, ("user", user))
    assert page is None, page
    return where


async def full_login(
    served: Served, browser: Browser, client_id: str, user: str = "alice"
) -> tuple[str, str, dict[str, str]]:
    """(verifier, code, callback parameters) of a whole development login."""
    verifier, challenge = make_pair()
    back = await dev_login(served, browser, authorize_url(served, client_id, challenge), user)
    params = query_of(back)
    return verifier, params["code"], params


async def redeem(
    served: Served, client_id: str, code: str, verifier: str, **extra: str
) -> Response:
    fields = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": f"{served.base}/mcp",
        **extra,
    }
    return await form_post(served, "/token", {k: v for k, v in fields.items() if v != ""})


INITIALIZE = msgspec.json.encode(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
)


async def mcp_status(served: Served, token: str | None) -> Response:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    return await request(served.address, "POST", "/mcp", headers=headers, body=INITIALIZE)
