"""The upstream OpenID provider of the tests: npm ``oidc-provider`` (tests/oidc/upstream.mjs,
pinned by its package-lock.json) in a node subprocess on loopback. Under ``CI=true`` its
absence fails the test (``.ci/run`` installs it); elsewhere it is skipped with the command
that installs it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

HERE = Path(__file__).parents[1] / "oidc"
CLIENT_ID = "mcp-runtime-upstream"
CLIENT_SECRET = "upstream-secret-for-tests-only"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def node_or_skip() -> str:
    node = shutil.which("node")
    if node is None or not (HERE / "node_modules" / "oidc-provider").is_dir():
        message = "needs node and oidc-provider: cd tests/oidc && npm ci (.ci/run does this)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return node


@asynccontextmanager
async def open_provider(redirect_uri: str) -> AsyncIterator[str]:
    """A running provider whose one client (CLIENT_ID, CLIENT_SECRET) may redirect to
    ``redirect_uri``; yields its issuer URL."""
    node = node_or_skip()
    port = _free_port()
    process = await trio.lowlevel.open_process(
        [node, "upstream.mjs", str(port), redirect_uri, CLIENT_ID, CLIENT_SECRET],
        cwd=HERE,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    try:
        seen = b""
        with trio.fail_after(20):
            while b"listening " not in seen:
                chunk = await process.stdout.receive_some(4096)
                assert chunk, f"the provider exited: {seen!r}"
                seen += chunk
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        with trio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
