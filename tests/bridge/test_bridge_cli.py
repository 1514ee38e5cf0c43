"""``mcp-runtime serve URL --upstream-*``: the proxy's reconnection policy from the command
line, tested by killing the remote (SIGKILL, its own process) and starting it again on the
same port while our client keeps its session with the proxy."""

from __future__ import annotations

import pytest
import trio

from runtime.client import PeerError, open_client

from ..peers import ROOT, cli
from .test_bridge_sdk import background, free_port, proxy_cli, refused

UPSTREAM = ROOT / "tests" / "bridge" / "own_upstream.py"


def remote(port: int) -> list[str]:
    return cli("serve", str(UPSTREAM), "--transport", "tcp", "--port", str(port))


async def test_the_proxy_reconnects_with_the_backoff_the_flags_give() -> None:
    port, proxy_port = free_port(), free_port()
    proxy = proxy_cli(
        f"tcp://127.0.0.1:{port}",
        str(proxy_port),
        "--upstream-era",
        "handshake",
        "--upstream-retries",
        "50",
        "--upstream-backoff-max",
        "0.2",
        "--upstream-retry-for",
        "20",
    )
    with trio.fail_after(60):
        async with (
            background(remote(port), port) as first,
            background(proxy, proxy_port),
            open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="handshake") as client,
        ):
            assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"
            first.kill()
            await first.wait()
            # Down for 3 s (past the default policy's 1.6 s ceiling of its fifth wait);
            # at most 0.2 s between attempts, the proxy is back within 2 s of the restart.
            await trio.sleep(3)
            async with background(remote(port), port):
                await trio.sleep(1)
                with trio.fail_after(2):
                    assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"


async def test_no_retries_the_upstream_session_fails_then_a_new_one_opens() -> None:
    """``--upstream-retries 0``: a lost remote is not reconnected; the downstream request
    gets a JSON-RPC error at once (no hang), and the proxy and its session live on."""
    port, proxy_port = free_port(), free_port()
    proxy = proxy_cli(
        f"tcp://127.0.0.1:{port}",
        str(proxy_port),
        "--upstream-era",
        "handshake",
        "--upstream-retries",
        "0",
    )
    with trio.fail_after(60):
        async with (
            background(remote(port), port) as first,
            background(proxy, proxy_port) as proxied,
            open_client(f"http://127.0.0.1:{proxy_port}/mcp", era="handshake") as client,
        ):
            assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"
            first.kill()
            await first.wait()
            await trio.sleep(0.5)
            with trio.fail_after(5), pytest.raises(PeerError) as raised:
                await client.call_tool("add", {"a": 2, "b": 3})
            assert raised.value.code == -32603
            assert raised.value.message.startswith("the remote MCP server is unreachable")
            assert proxied.returncode is None  # the proxy lives on
            async with background(remote(port), port):
                # The session's next request opens a new upstream session.
                assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"


def test_upstream_flags_refused_for_a_file_target() -> None:
    stderr = refused("serve", str(UPSTREAM), "--upstream-retries", "3")
    assert "--upstream-retries applies only to a remote TARGET" in stderr
    assert "--upstream-retries" in refused("serve", "tcp://127.0.0.1:9", "--upstream-retries", "-1")
