"""``mcp-runtime serve --transport http --metrics [PATH] [--metrics-token TOKEN]`` over a
real subprocess and real sockets: 404 when off, 200 Prometheus text with the token, 401
without it or with a wrong one, and the flag's usage errors."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from ..peers import ROOT, cli
from ..transports.app import modern, modern_headers
from ..transports.http_client import request

SERVE_HTTP = ("serve", "tests/servers/wire.py", "--transport", "http", "--port", "0")


@asynccontextmanager
async def serving(*extra: str, env: dict[str, str] | None = None) -> AsyncIterator[tuple[str, int]]:
    process = await trio.lowlevel.open_process(
        cli(*SERVE_HTTP, *extra),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    assert process.stderr is not None
    try:
        seen = b""
        while (match := re.search(rb"on http://127\.0\.0\.1:(\d+)/mcp", seen)) is None:
            chunk = await process.stderr.receive_some(4096)
            assert chunk, seen.decode()
            seen += chunk
        yield ("127.0.0.1", int(match.group(1)))
    finally:
        process.terminate()
        with trio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _one_call(address: tuple[str, int]) -> None:
    body = modern(1, "tools/list")
    reply = await request(address, "POST", headers=modern_headers("tools/list"), body=body)
    assert reply.status == 200


async def test_metrics_off_by_default_is_404() -> None:
    with trio.fail_after(30):
        async with serving() as address:
            assert (await request(address, "GET", "/metrics")).status == 404


async def test_metrics_with_a_token() -> None:
    with trio.fail_after(30):
        async with serving("--metrics", "--metrics-token", "s3cret-token") as address:
            await _one_call(address)
            without = await request(address, "GET", "/metrics")
            wrong = await request(
                address, "GET", "/metrics", headers={"authorization": "Bearer nope"}
            )
            right = await request(
                address, "GET", "/metrics", headers={"authorization": "Bearer s3cret-token"}
            )
    assert without.status == 401
    assert without.headers["www-authenticate"] == 'Bearer realm="metrics"'
    assert b"mcp_server" not in without.body
    assert wrong.status == 401
    assert right.status == 200
    assert right.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert 'mcp_server_requests_total{method="tools/list",outcome="ok"} 1' in right.body.decode()


async def test_metrics_path_and_token_from_the_environment() -> None:
    env = {"MCP_RUNTIME_METRICS": "/internal/prom", "MCP_RUNTIME_METRICS_TOKEN": "t0k"}
    with trio.fail_after(30):
        async with serving(env=env) as address:
            assert (await request(address, "GET", "/metrics")).status == 404
            assert (await request(address, "GET", "/internal/prom")).status == 401
            ok = await request(
                address, "GET", "/internal/prom", headers={"authorization": "Bearer t0k"}
            )
    assert ok.status == 200
    assert "mcp_server_requests_in_flight 0" in ok.body.decode()


async def test_metrics_without_a_token_is_open() -> None:
    with trio.fail_after(30):
        async with serving("--metrics", "/m") as address:
            scraped = await request(address, "GET", "/m")
    assert scraped.status == 200


async def test_metrics_usage_errors() -> None:
    with trio.fail_after(30):
        token_alone = await trio.run_process(
            cli(*SERVE_HTTP, "--metrics-token", "x"), cwd=ROOT, capture_stderr=True, check=False
        )
        on_stdio = await trio.run_process(
            cli("serve", "tests/servers/wire.py", "--metrics"),
            cwd=ROOT,
            capture_stderr=True,
            check=False,
            stdin=b"",
        )
        bad_path = await trio.run_process(
            cli(*SERVE_HTTP, "--metrics", "metrics"), cwd=ROOT, capture_stderr=True, check=False
        )
    assert token_alone.returncode == 2
    assert b"--metrics-token needs --metrics" in token_alone.stderr
    assert on_stdio.returncode == 2
    assert b"--metrics does not apply to --transport stdio" in on_stdio.stderr
    assert bad_path.returncode == 2
    assert b"expected a path such as /metrics" in bad_path.stderr


async def test_metrics_token_scheme_is_case_insensitive() -> None:
    """RFC 9110 section 11.1: the scheme is case-insensitive, so ``bearer`` and ``BEARER``
    scrape as ``Bearer`` does; the token itself is still compared exactly, and a value the
    OAuth resource server would not read as a bearer token is refused here too."""
    token = "s3cret-token"
    with trio.fail_after(30):
        async with serving("--metrics", "--metrics-token", token) as address:
            answers = {}
            for value in (
                f"bearer {token}",
                f"BEARER {token}",
                f"bEaReR {token}",
                f"Bearer {token.upper()}",
                f"Bearer  {token}",
                f"Basic {token}",
                f"bearer {token}, Bearer {token}",
            ):
                scraped = await request(
                    address, "GET", "/metrics", headers={"authorization": value}
                )
                answers[value] = scraped.status
    assert answers == {
        f"bearer {token}": 200,
        f"BEARER {token}": 200,
        f"bEaReR {token}": 200,
        f"Bearer {token.upper()}": 401,
        f"Bearer  {token}": 401,
        f"Basic {token}": 401,
        f"bearer {token}, Bearer {token}": 401,
    }


async def test_a_metrics_token_no_client_could_send_is_a_usage_error() -> None:
    with trio.fail_after(30):
        spaced = await trio.run_process(
            cli(*SERVE_HTTP, "--metrics", "--metrics-token", "two words"),
            cwd=ROOT,
            capture_stderr=True,
            check=False,
        )
    assert spaced.returncode == 2
    assert b"--metrics-token: a bearer token is letters, digits" in spaced.stderr
    assert b"Traceback" not in spaced.stderr
