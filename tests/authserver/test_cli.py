"""``mcp-runtime serve --auth ...`` and examples/oauth_server.py, as a user runs them: the
command in a subprocess, the official SDK's client logging in and calling a tool."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from tests.peers import ROOT, cli, run_sdk_client
from tests.transports.http_client import request

from .provider import CLIENT_ID, CLIENT_SECRET, _free_port, open_provider

pytestmark = pytest.mark.trio


@asynccontextmanager
async def serving(
    *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[int, list[bytes]]]:
    """``mcp-runtime serve ARGS`` until its start-up line; yields (port, stderr so far)."""
    port = _free_port()
    process = await trio.lowlevel.open_process(
        cli("serve", *args, "--port", str(port)),
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    seen = [b""]
    try:
        with trio.fail_after(30):
            while re.search(rb"serving .* on http://", seen[0]) is None:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, seen[0].decode()
                seen[0] += chunk
        yield port, seen
    finally:
        process.terminate()
        await process.wait()


async def test_the_example_starts_in_development_mode_and_the_sdk_logs_in() -> None:
    with trio.fail_after(90):
        async with serving("examples/oauth_server.py", "--transport", "http", "--metrics") as (
            port,
            stderr,
        ):
            assert b"DEVELOPMENT ONLY" in stderr[0]
            base = f"http://127.0.0.1:{port}"
            prm = await request(
                ("127.0.0.1", port), "GET", "/.well-known/oauth-protected-resource/mcp"
            )
            assert prm.json()["authorization_servers"] == [base]
            assert prm.json()["scopes_supported"] == ["notes:read", "notes:write"]
            # Health and metrics are unaffected (no token needed).
            assert (await request(("127.0.0.1", port), "GET", "/healthz")).status == 200
            assert (await request(("127.0.0.1", port), "GET", "/metrics")).status == 200
            seen = await run_sdk_client("authserver/sdk_oauth_client.py", f"{base}/mcp", "alice")
        text = seen["whoami"]["content"][0]["text"]
        assert '"subject":"alice"' in text.replace(" ", "")
        # The SDK asks for what the 401 challenge named (MCP "Scope Selection Strategy").
        assert seen["scope"] == "notes:read"


async def test_serve_auth_oidc_in_front_of_a_real_provider() -> None:
    with trio.fail_after(90):
        port = _free_port()
        async with open_provider(f"http://127.0.0.1:{port}/callback") as issuer:
            process = await trio.lowlevel.open_process(
                cli(
                    "serve",
                    "examples/oauth_server.py",
                    "--transport",
                    "http",
                    "--port",
                    str(port),
                    "--auth",
                    "oidc",
                    "--issuer",
                    issuer,
                    "--client-id",
                    CLIENT_ID,
                    "--client-secret-env",
                    "TEST_UPSTREAM_SECRET",
                ),
                cwd=ROOT,
                env={**os.environ, "TEST_UPSTREAM_SECRET": CLIENT_SECRET},
                stdin=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            assert process.stderr is not None
            try:
                seen = b""
                with trio.fail_after(30):
                    while b" on http://" not in seen:
                        chunk = await process.stderr.receive_some(4096)
                        assert chunk, seen.decode()
                        seen += chunk
                assert b"DEVELOPMENT ONLY" not in seen
                result = await run_sdk_client(
                    "authserver/sdk_oauth_client.py", f"http://127.0.0.1:{port}/mcp", "erin"
                )
            finally:
                process.terminate()
                await process.wait()
        assert '"subject":"erin"' in result["whoami"]["content"][0]["text"].replace(" ", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth", "oidc"], "--auth oidc needs --issuer URL and --client-id ID"),
        (["--issuer", "https://a.example"], "--issuer needs --auth oidc"),
        (
            [
                "--auth",
                "oidc",
                "--issuer",
                "https://a.example",
                "--client-id",
                "x",
                "--client-secret-env",
                "SURELY_NOT_SET_ANYWHERE",
            ],
            "SURELY_NOT_SET_ANYWHERE: that variable is not set",
        ),
        (["--auth", "dev", "--port", "0"], "--auth needs a fixed --port or --public-url"),
        (["--auth", "github", "--client-id", "x"], "--auth github needs --client-id ID"),
        (["--client-id", "x"], "--client-id needs --auth oidc or github"),
        (["--auth", "oidc", "--issuer", "http://a.example", "--client-id", "x"], "must use https"),
    ],
)
async def test_usage_errors_are_one_line(args: list[str], message: str) -> None:
    with trio.fail_after(30):
        done = await trio.run_process(
            cli("serve", "examples/oauth_server.py", "--transport", "http", *args),
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 2, done.stderr.decode()
    err = done.stderr.decode()
    assert message in err, err
    assert "Traceback" not in err
