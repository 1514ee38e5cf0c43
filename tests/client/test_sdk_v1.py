"""era="auto" over stdio against servers of the official SDK's 1.x line (FastMCP from
``mcp.server.fastmcp``, PyPI ``mcp<2``), which predate 2026-07-28: the ``server/discover``
probe is refused with an error, or the server exits in answer to it; either way the client
ends up in the handshake era (re-spawning the server once in the second case)."""

from __future__ import annotations

import logging
import os
import sys

import pytest
import trio

from runtime.client import TransportLost, open_client

from .targets import ROOT

V1_PYTHON = os.environ.get("MCP_V1_PYTHON", str(ROOT / ".ci" / "mcp1" / "bin" / "python"))
HERE = ROOT / "tests" / "client"

if not os.path.exists(V1_PYTHON):
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI makes the mcp<2 virtualenv (.ci/run); {V1_PYTHON} is missing")
    pytest.skip(f"no mcp<2 interpreter at {V1_PYTHON} (.ci/run makes it)", allow_module_level=True)


async def test_fastmcp_v1_refuses_discover_and_the_client_falls_back() -> None:
    with trio.fail_after(40):
        async with open_client([V1_PYTHON, str(HERE / "sdk_v1_server.py")]) as client:
            assert client.era == "handshake"
            assert client.description is not None
            assert client.description.server_info is not None
            assert client.description.server_info.name == "fastmcp-v1"
            assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
            assert [tool.name for tool in await client.all_tools()] == ["add"]


async def test_a_server_that_exits_at_discover_is_started_once_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "mcp_runtime.client")
    with trio.fail_after(40):
        async with open_client([V1_PYTHON, str(HERE / "exits_on_discover.py")]) as client:
            assert client.era == "handshake"
            assert client.description is not None
            assert client.description.server_info is not None
            assert client.description.server_info.name == "fastmcp-v1"
            assert (await client.call_tool("add", {"a": 20, "b": 22})).text == "42"
            assert (await client.read_resource("note://hello")).contents[0].text == (
                "hello from FastMCP 1.x"
            )
    assert "closed during the era probe" in caplog.text
    # The first process said why it exited; the client forwarded its stderr.
    assert "exiting on" in caplog.text


async def test_a_server_that_exits_again_at_initialize_is_an_error() -> None:
    with trio.fail_after(40), pytest.raises(TransportLost):
        async with open_client([V1_PYTHON, str(HERE / "exits_on_discover.py"), "always"]):
            pass  # pragma: no cover


async def test_a_pinned_modern_era_does_not_respawn() -> None:
    with trio.fail_after(40), pytest.raises(TransportLost):
        async with open_client([sys.executable, str(HERE / "exits_on_discover.py")], era="modern"):
            pass  # pragma: no cover
