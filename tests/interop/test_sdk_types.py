"""Pydantic models as tool types, seen by the official SDK client over stdio."""

from __future__ import annotations

from ..peers import cli, run_sdk_client

CLIENT = "interop/sdk_types_client.py"


async def test_official_sdk_client_with_pydantic_tool_types() -> None:
    seen = await run_sdk_client(
        CLIENT, "--", *cli("serve", "tests/servers/pydantic_server.py"), forbid_traceback=True
    )
    (tool,) = seen["tools"]["tools"]
    schema = tool["inputSchema"]
    assert schema["properties"]["customer"]["$ref"] == "#/$defs/Customer"
    assert schema["properties"]["customer"]["description"] == "Who to store."
    assert schema["$defs"]["Customer"]["properties"]["age"] == {
        "maximum": 150, "minimum": 0, "title": "Age", "type": "integer"
    }  # fmt: skip
    assert "Address" in schema["$defs"]
    assert tool["outputSchema"]["properties"]["customer_id"] == {
        "title": "Customer Id", "type": "integer"
    }  # fmt: skip
    # The SDK validated structuredContent against outputSchema before handing it over.
    assert seen["ok"]["structuredContent"] == {
        "customer_id": 7, "greeting": "welcome Ada", "city": "London"
    }  # fmt: skip
    assert seen["ok"]["isError"] is False
    assert seen["bad"]["isError"] is True
    (block,) = seen["bad"]["content"]
    assert "age: Input should be greater than or equal to 0" in block["text"]
    assert "$.customer" in block["text"]
