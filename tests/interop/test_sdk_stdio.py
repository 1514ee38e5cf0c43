"""Issue 2 acceptance: the official MCP SDK client (2025-11-25, stdio) against the quickstart,
served by the README's command (mcp-runtime serve examples/quickstart.py)."""

from __future__ import annotations

import json

from ..peers import cli, run_sdk_client

CLIENT = "interop/sdk_stdio_client.py"


async def test_official_sdk_client_uses_the_quickstart_over_stdio() -> None:
    # stderr is for logs only (no traceback); stdout carried nothing but protocol, else the
    # SDK client would have failed.
    seen = await run_sdk_client(
        CLIENT, "--", *cli("serve", "examples/quickstart.py"), forbid_traceback=True
    )

    init = seen["initialize"]
    assert init["protocolVersion"] == "2025-11-25"
    assert init["serverInfo"] == {"name": "quickstart", "version": "1.0.0"}
    assert set(init["capabilities"]) == {"logging", "tools", "resources", "prompts", "completions"}

    tools = {tool["name"]: tool for tool in seen["tools"]["tools"]}
    assert list(tools) == ["add", "countdown", "divide"]
    assert tools["add"]["inputSchema"] == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend."},
            "b": {"type": "integer", "description": "The second addend."},
        },
        "required": ["a", "b"],
    }
    assert tools["add"]["description"] == "Add two integers."
    assert tools["add"]["annotations"]["readOnlyHint"] is True

    assert seen["add"]["content"] == [{"type": "text", "text": "42"}]
    assert seen["add"]["isError"] is False
    assert seen["add_invalid"]["isError"] is True
    assert "Expected `int`, got `str`" in seen["add_invalid"]["content"][0]["text"]
    assert seen["divide_by_zero"]["isError"] is True
    assert "division by zero" in seen["divide_by_zero"]["content"][0]["text"]

    assert seen["countdown"]["content"][0]["text"] == "liftoff"
    assert [p[0] for p in seen["progress"]] == [1, 2, 3]

    assert [r["uri"] for r in seen["resources"]["resources"]] == ["config://app"]
    assert seen["templates"]["resourceTemplates"][0]["uriTemplate"] == "notes://{name}"
    config = seen["config"]["contents"][0]
    assert config["mimeType"] == "application/json"
    assert json.loads(config["text"]) == {"name": "quickstart", "version": "1.0.0", "notes": 2}
    assert seen["note"]["contents"] == [
        {"uri": "notes://welcome", "mimeType": "text/plain", "text": "Hello from mcp-runtime!"}
    ]
    assert seen["missing_note"]["code"] == -32002

    assert seen["prompts"]["prompts"][0]["name"] == "review"
    assert seen["prompts"]["prompts"][0]["arguments"] == [
        {"name": "code", "description": "The code to review.", "required": True},
        {"name": "language", "description": "Its programming language.", "required": False},
    ]
    message = seen["review"]["messages"][0]
    assert message["role"] == "user"
    assert message["content"]["text"].endswith("x = 1")
    assert seen["ping"] == {}
