"""``mcp-runtime list|call|read|inspect`` against our server: coercion and exit codes."""

from __future__ import annotations

import json

import pytest

from runtime.client import Tool
from runtime.client._cli import UsageError, coerce_arguments

from .targets import SERVER_FILE
from .test_sdk_peer import run_cli

TARGET = str(SERVER_FILE)


async def test_values_are_coerced_by_the_input_schema() -> None:
    code, out, err = await run_cli(
        "call", TARGET, "flags", "on=yes", "ratio=2", 'tags=["a","b"]', "note=null", "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    echoed = json.loads(result["content"][0]["text"])
    assert echoed == {"on": True, "ratio": 2.0, "tags": ["a", "b"], "note": None}
    code, out, err = await run_cli("call", TARGET, "add", "a=2", "b=40")
    assert (code, out) == (0, "42\n"), err


async def test_exit_codes() -> None:
    code, _out, err = await run_cli("call", TARGET, "fail", "message=boom")
    assert code == 1 and "boom" in err  # isError: the content goes to stderr
    code, _out, err = await run_cli("call", TARGET, "add", "a=two", "b=1")
    assert code == 2 and "argument a" in err and "not an integer" in err
    code, _out, err = await run_cli("call", TARGET, "add", "a")
    assert code == 2 and "KEY=VALUE" in err
    code, _out, err = await run_cli("list", TARGET, "widgets")
    assert code == 2
    code, _out, err = await run_cli("call", "tcp://127.0.0.1:9", "add", "--retry-for", "0.2")
    assert code == 3 and "TransportLost" in err
    code, _out, err = await run_cli("read", TARGET, "data://nowhere")
    assert code == 3 and "PeerError" in err


async def test_inspect_and_list_describe_everything() -> None:
    code, out, err = await run_cli("inspect", TARGET, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["serverInfo"]["name"] == "client-test"
    assert data["era"] == "modern" and data["protocolVersion"] == "2026-07-28"
    assert [t["name"] for t in data["tools"]][:2] == ["echo", "add"]
    assert data["resourceTemplates"][0]["uriTemplate"] == "greeting://{name}"
    assert data["prompts"][0]["name"] == "review"
    code, out, err = await run_cli("list", TARGET, "--era", "handshake")
    assert code == 0, err
    assert "tools:" in out and "  add(a: integer, b: integer)" in out
    assert "greeting://{name}" in out and "review(code, language?)" in out


def test_coercion_rules() -> None:
    tool = Tool(
        name="t",
        input_schema={
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "x": {"type": "number"},
                "s": {"type": "string"},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "maybe": {"type": ["integer", "null"]},
                "obj": {"type": "object"},
                "free": {},
            },
            "additionalProperties": False,
        },
    )
    got = coerce_arguments(
        tool, ["n=2", "x=2.5", "s=007", "either=007", "maybe=null", 'obj={"k":1}', "free=[1]"]
    )
    assert got == {
        "n": 2,
        "x": 2.5,
        "s": "007",
        "either": "007",
        "maybe": None,
        "obj": {"k": 1},
        "free": [1],
    }
    assert coerce_arguments(tool, ["n=4.0"]) == {"n": 4}
    for bad in ["n=4.5", "obj=[1]", "zzz=1", "maybe=x"]:
        with pytest.raises(UsageError):
            coerce_arguments(tool, [bad])
