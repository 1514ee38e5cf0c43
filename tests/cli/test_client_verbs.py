"""``mcp-runtime list|call|read|inspect`` against our server: coercion and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runtime.cli._client_verbs import UsageError, coerce_arguments
from runtime.client import Tool

from ..client.targets import ROOT, SERVER_FILE
from ..client.test_sdk_peer import run_cli

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
    code, _out, err = await run_cli("call", TARGET)
    assert (code, err) == (
        2,
        "mcp-runtime call: error: the following arguments are required: TOOL\n",
    )
    code, _out, err = await run_cli("call", "tcp://127.0.0.1:9", "add", "--retry-for", "0.2")
    assert code == 3 and "cannot connect to tcp://127.0.0.1:9" in err
    code, _out, err = await run_cli("read", TARGET, "data://nowhere")
    assert (code, err) == (3, "mcp-runtime: error: Resource not found (code -32602)\n")


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


# -- a server file that cannot be loaded ---------------------------------------------------


@pytest.mark.parametrize(
    ("source", "command", "starts"),
    [
        (None, ("list",), 0),  # a misspelt path: no such file
        ("x = 1 +\n", ("inspect",), 0),  # a syntax error: nothing of it runs
        ("raise RuntimeError('boom')\n", ("call", "add", "a=1"), 1),  # fails at import
        ("value = 1\n", ("list", "tools"), 1),  # no Server in it
    ],
)
async def test_a_server_file_that_cannot_load_gives_serves_one_line_and_exit_2(
    tmp_path: Path, source: str | None, command: tuple[str, ...], starts: int
) -> None:
    """The client verbs print the one line ``serve`` prints for the same file, exit 2, and
    start the file once (its import counts itself)."""
    counter = tmp_path / "starts"
    target = tmp_path / "server.py"
    if source is not None:
        target.write_text(f"open({str(counter)!r}, 'a').write('started\\n')\n{source}")
    served = await run_cli("serve", str(target))
    assert served[0] == 2 and len(served[2].splitlines()) == 1, served
    counter.unlink(missing_ok=True)
    code, out, err = await run_cli(command[0], str(target), *command[1:])
    assert (code, out, err) == (2, "", served[2])
    # Once: not again for the handshake after the era probe.
    assert (counter.read_text() if counter.exists() else "") == "started\n" * starts


# -- arguments -----------------------------------------------------------------------------


async def test_a_missing_required_argument_is_a_usage_error() -> None:
    code, out, err = await run_cli("call", TARGET, "add", "a=1")
    assert (code, out) == (2, ""), err
    assert err == (
        "mcp-runtime: error: add: missing required argument b (add takes a: integer, b: integer)\n"
    )
    code, _out, err = await run_cli("call", TARGET, "add", "--json", "{}")
    assert code == 2 and "missing required arguments a, b" in err


async def test_an_unknown_argument_is_refused_naming_the_parameters() -> None:
    code, out, err = await run_cli("call", TARGET, "add", "a=1", "b=2", "c=3")
    assert (code, out) == (2, ""), err
    assert (
        err == "mcp-runtime: error: add has no parameter 'c' (add takes a: integer, b: integer)\n"
    )
    code, _out, err = await run_cli("call", TARGET, "add", "--json", '{"a": 1, "b": 2, "bb": 3}')
    assert code == 2 and "add has no parameter 'bb'" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("call", TARGET, "add", "--json", "a=2", "b=40"),
        ("call", TARGET, "add", "a=2", "--json", "b=40"),
        ("call", "--json", TARGET, "add", "a=2", "b=40"),
        ("call", TARGET, "--timeout", "30", "add", "a=2", "--era", "modern", "b=40", "--json"),
    ],
)
async def test_flags_may_come_before_or_after_the_tool(argv: tuple[str, ...]) -> None:
    code, out, err = await run_cli(*argv)
    assert code == 0, err
    assert json.loads(out)["structuredContent"] == {"result": 42}


PYDANTIC = str(ROOT / "tests" / "servers" / "pydantic_server.py")
CUSTOMER = (
    "customer: Customer{name: string, age: integer, emailAddress: string, "
    "address?: Address|null}, vip?: boolean"
)


async def test_a_pydantic_parameter_shows_its_model() -> None:
    code, out, err = await run_cli("list", PYDANTIC, "tools")
    assert code == 0, err
    assert out == f"add_customer({CUSTOMER})  Store a customer.\n"
    code, out, err = await run_cli("inspect", PYDANTIC)
    assert code == 0, err
    assert f"  add_customer({CUSTOMER})  Store a customer.\n" in out
    customer = '{"name": "Ann", "age": 30, "emailAddress": "ann@example.com"}'
    code, out, err = await run_cli("call", PYDANTIC, "add_customer", f"customer={customer}")
    assert code == 0, err
    assert json.loads(out)["greeting"] == "welcome Ann"
    code, out, err = await run_cli("call", PYDANTIC, "add_customer", "customer=[1]")
    assert code == 2 and "argument customer" in err and "is not an object" in err


def test_schemas_as_text() -> None:
    from runtime.cli._client_verbs import check_arguments, signature

    defs = {
        "Node": {
            "title": "Node",
            "type": "object",
            "properties": {"value": {"type": "integer"}, "children": {"type": "array"}},
        },
        "Color": {"enum": ["red", "green"]},
    }
    schema = {
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "nodes": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            "color": {"$ref": "#/$defs/Color"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            "point": {"type": "object", "properties": {"x": {"type": "number"}}},
            "mode": {"const": "fast"},
            "old": {"allOf": [{"$ref": "#/definitions/Gone"}]},
            "free": {},
            "odd": "not a schema",
            "many": {"type": ["integer", "string"]},
        },
        "required": ["tree"],
        "$defs": defs,
    }
    assert signature(Tool(name="t", input_schema=schema)) == (
        "tree: Node{value?: integer, children?: array}, "
        "nodes?: array[Node{value?: integer, children?: array}], "
        'color?: "red"|"green", maybe?: integer|string|null, point?: {x?: number}, '
        'mode?: "fast", old?: Gone, free?: any, odd?: any, many?: integer|string'
    )
    # A schema that refers to itself, or is not what a schema should be: still a line.
    looping = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}
    looping["$defs"] = {"A": {"$ref": "#/$defs/A"}}
    assert signature(Tool(name="t", input_schema=looping)) == "a?: A"
    for hostile in ({"properties": []}, {"properties": {"a": {"type": {}}}}, {"required": "a"}):
        signature(Tool(name="t", input_schema=hostile))
        check_arguments(Tool(name="t", input_schema=hostile), {"a": 1})


def test_docs_cli_md_is_the_reference() -> None:
    """docs/cli.md names every flag of the client commands and their exit statuses."""
    from runtime.cli import _client_verbs as _cli

    text = (ROOT / "docs" / "cli.md").read_text()
    section = text[text.index("## Client commands") :]
    for command in _cli.COMMANDS:
        assert f"mcp-runtime {command} " in section
        for action in _cli.command_parser(command)._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help", "--args"):  # --args: what --json '{...}' is
                    assert f"`{option}" in section, (command, option)
    statuses = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section, flags=re.M))
    assert set(statuses) == {"0", "1", "2", "3", "4", "141"}
    assert (_cli.EXIT_OK, _cli.EXIT_TOOL_ERROR, _cli.EXIT_USAGE, _cli.EXIT_FAILED) == (0, 1, 2, 3)
    assert "isError" in statuses["1"] and "usage error" in statuses["2"]
    assert "could not be reached" in statuses["3"]
    assert _cli.EXIT_AUTH == 4 and "authorization failed" in statuses["4"]
