"""A real OpenID provider (npm ``oidc-provider``, pinned in ``tests/oidc/package-lock.json``) on
loopback, and a protected MCP server that trusts it (examples/oauth_notes.py's tools and
``auth_config``), for the OAuth client tests.

``.ci/run`` installs the provider (``npm ci`` in ``tests/oidc/``); under ``CI=true`` its absence
(no node, no ``node_modules``) fails the test, elsewhere it is a skip saying how to install it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

HERE = Path(__file__).parents[2] / "oidc"
EXAMPLES = Path(__file__).parents[3] / "examples"
#: The pre-registered confidential client the provider knows (client credentials grant).
SERVICE_CLIENT = "service"
SERVICE_SECRET = "service-secret-for-tests-only"


def _need_provider() -> str:
    node = shutil.which("node")
    if node is None or not (HERE / "node_modules" / "oidc-provider").is_dir():
        message = "oidc-provider is not installed: run `npm ci` in tests/oidc (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return node


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass
class Provider:
    issuer: str
    jwks_uri: str
    process: trio.Process


@asynccontextmanager
async def run_provider(resource: str, *, token_ttl: int = 300) -> AsyncIterator[Provider]:
    """Start the provider for ``resource``; stopped (stdin closed, then killed) on exit."""
    node = _need_provider()
    process = await trio.lowlevel.open_process(
        [node, str(HERE / "resource.mjs"), resource, str(token_ttl), SERVICE_SECRET],
        stdin=-1,
        stdout=-1,
        stderr=-3,  # DEVNULL: its development-mode warnings are not ours to show
        cwd=str(HERE),
    )
    try:
        assert process.stdout is not None
        line = b""
        with trio.fail_after(20):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(4096)
                if not chunk:
                    raise RuntimeError("oidc-provider exited before it listened")
                line += chunk
        started = json.loads(line)
        yield Provider(started["issuer"], started["jwks_uri"], process)
    finally:
        with trio.CancelScope(shield=True):
            if process.stdin is not None:
                await process.stdin.aclose()
            with trio.move_on_after(3):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


@asynccontextmanager
async def protected_notes(
    *, token_ttl: int = 300, transport: str = "http"
) -> AsyncIterator[tuple[str, Provider]]:
    """The provider, and examples/oauth_notes.py served behind it over Streamable HTTP
    (``transport="http"``) or the legacy HTTP+SSE transport (``"sse"``): yields the MCP URL
    and the provider."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    from oauth_notes import app, auth_config

    port = free_port()
    url = f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    async with run_provider(url, token_ttl=token_ttl) as provider:
        config = auth_config(issuer=provider.issuer, jwks_uri=provider.jwks_uri, resource=url)
        async with trio.open_nursery() as nursery:
            serve = app.serve_http if transport == "http" else app.serve_sse
            await nursery.start(functools.partial(serve, port, auth=config))
            yield url, provider
            app.shutdown()
            nursery.cancel_scope.deadline = trio.current_time() + 5


def revoke(provider: Provider, token: str, client_id: str) -> Any:
    """RFC 7009: revoke ``token`` at the provider (a blocking call: run it in a thread)."""
    import urllib.parse
    import urllib.request

    body = urllib.parse.urlencode({"token": token, "client_id": client_id}).encode()
    request = urllib.request.Request(f"{provider.issuer}/token/revocation", data=body)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def refresh_status(provider: Provider, refresh_token: str, client_id: str) -> int:
    """The HTTP status of a refresh grant with ``refresh_token`` (blocking: run it in a
    thread): 200 while it is valid, 400 (``invalid_grant``) once revoked."""
    import urllib.error
    import urllib.parse
    import urllib.request

    body = urllib.parse.urlencode(
        {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    ).encode()
    request = urllib.request.Request(f"{provider.issuer}/token", data=body)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
