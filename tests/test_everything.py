"""``examples/everything.py``, the conformance fixture: what the suite's scenarios call is
there, as the scenarios expect it (the suite itself runs in CI: python -m tests.conformance).
"""

from __future__ import annotations

import trio

from runtime.cli import load_target
from runtime.testing import open_client

APP = load_target("examples/everything.py")

#: Names the suite's scenarios call (0.1.16 and 0.2.0-alpha.11 sources).
TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_progress",
    "test_tool_with_logging",
    "test_logging_tool",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_reconnection",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "test_custom_headers",
    "json_schema_2020_12_tool",
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
}


async def test_the_fixture_offers_what_the_scenarios_call() -> None:
    with trio.fail_after(10):
        async with open_client(APP, protocol_version="2026-07-28") as client:
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            prompts = {p["name"] for p in (await client.request("prompts/list"))["prompts"]}
    assert set(tools) >= TOOLS
    assert tools["failing_job"]["execution"] == {"taskSupport": "required"}
    assert tools["test_tool_with_task"]["execution"] == {"taskSupport": "required"}
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    assert "execution" not in tools["greet"]
    region = tools["test_custom_headers"]["inputSchema"]["properties"]["region"]
    assert region["x-mcp-header"] == "Region"
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    assert schema["$defs"]["address"]["$anchor"] == "addressDef" and "if" in schema
    assert {"test_simple_prompt", "test_input_required_result_prompt"} <= prompts


async def test_request_state_round_trip_says_state_ok() -> None:
    with trio.fail_after(10):
        async with open_client(
            APP, protocol_version="2026-07-28", capabilities={"elicitation": {}}
        ) as client:
            first = await client.call_tool("test_input_required_result_request_state")
            assert list(first["inputRequests"]) == ["confirm"]
            done = await client.request(
                "tools/call",
                {
                    "name": "test_input_required_result_request_state",
                    "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
                    "requestState": first["requestState"],
                },
            )
    assert done["content"][0]["text"] == "state-ok: confirmed=True"
