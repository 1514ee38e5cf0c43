"""Tests for examples/quickstart.py: the complete test file the README shows."""

import pytest
import trio
from quickstart import app

from runtime import JSONRPCError, Server
from runtime.testing import TestClient


@pytest.fixture
def mcp_server() -> Server:
    return app


async def test_add(mcp_client: TestClient) -> None:
    result = await mcp_client.call_tool("add", {"a": 1, "b": 2})
    assert result.text == "3"
    assert result.structured == {"result": 3}


async def test_bad_arguments_are_a_tool_error(mcp_client: TestClient) -> None:
    result = await mcp_client.call_tool("add", {"a": "one", "b": 2})
    assert result.is_error
    assert "Expected `int`, got `str`" in result.text


async def test_countdown_reports_progress(mcp_client: TestClient) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with trio.fail_after(5):
        result = await mcp_client.call_tool("countdown", {"start": 2}, progress=on_progress)
    assert result.text == "liftoff"
    assert seen == [(1, 2, "2 left"), (2, 2, "1 left")]


async def test_tools_are_listed_with_schemas(mcp_client: TestClient) -> None:
    tools = {tool.name: tool for tool in await mcp_client.list_tools()}  # every page
    assert set(tools) == {"add", "countdown", "divide"}
    assert tools["add"].input_schema["properties"]["a"]["description"] == "The first addend."


async def test_resources_and_prompts(mcp_client: TestClient) -> None:
    note = await mcp_client.read_resource("notes://welcome")
    assert note.text == "Hello from mcp-runtime!"
    with pytest.raises(JSONRPCError) as missing:
        await mcp_client.read_resource("notes://nope")
    assert missing.value.code == -32002  # resource not found
    prompt = await mcp_client.get_prompt("review", {"code": "x = 1"})
    assert "x = 1" in prompt.messages[0]["content"]["text"]


@pytest.mark.mcp_client(protocol_version="2026-07-28")  # a stateless modern client
async def test_modern_client(mcp_client: TestClient) -> None:
    assert (await mcp_client.call_tool("add", {"a": 2, "b": 2})).text == "4"
