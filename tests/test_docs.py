"""The documentation's code runs: the servers it shows are served and called, the official
SDK's side of the migration page registers with the installed SDK, and mkdocs.yml lists every
page in docs/."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import trio
import yaml

from runtime import JSONRPCError, Server
from runtime.testing import open_client

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def blocks(page: str) -> list[str]:
    """The python code blocks of a page, dedented (tabbed blocks are indented by four)."""
    text = (DOCS / page).read_text()
    found = re.findall(r"^( *)```python\n(.*?)^\1```", text, flags=re.S | re.M)
    return ["\n".join(line[len(indent) :] for line in body.splitlines()) for indent, body in found]


def load(code: str, name: str) -> dict[str, Any]:
    module = types.ModuleType(name)
    exec(compile(code, f"<docs:{name}>", "exec"), module.__dict__)
    return module.__dict__


async def test_migration_page_runtime_server_works() -> None:
    runtime_block, sdk_block, _fastmcp_block = blocks("migrating.md")[:3]
    assert "from runtime import" in runtime_block and "MCPServer" in sdk_block
    app = load(runtime_block, "library")["app"]
    with trio.fail_after(10):
        async with open_client(app) as client:
            found = await client.call_tool("search", {"query": {"text": "dune"}})
            too_many = await client.call_tool("search", {"query": {"text": "x", "limit": 99}})
            reserved = await client.call_tool("reserve", {"book": "dune"})
            missing = await client.call_tool("reserve", {"book": "nope"})
            stats = await client.read_resource("library://stats")
            book = await client.read_resource("books://dune")
            prompt = await client.get_prompt("recommend", {"genre": "sci-fi"})
            tools = {tool.name: tool for tool in await client.list_tools()}
            try:
                await client.read_resource("books://nope")
                raise AssertionError("an unknown book must be -32002")
            except JSONRPCError as exc:
                assert exc.code == -32002
    assert found.text == "Dune, Frank Herbert"
    assert too_many.is_error and "limit: Input should be less than or equal to 50" in too_many.text
    assert reserved.text == "reserved Dune, Frank Herbert"
    assert missing.is_error and missing.text == "no book nope"
    assert stats.text == '{"books":1}' and book.text == "Dune, Frank Herbert"
    assert prompt.messages[0]["content"]["text"] == "Recommend a sci-fi book from the catalogue."
    assert tools["reserve"].input_schema["properties"]["book"]["description"] == "A book id"


def test_migration_page_sdk_server_registers_with_the_installed_sdk() -> None:
    sdk_block = blocks("migrating.md")[1]
    namespace = load(sdk_block, "library_sdk")
    assert type(namespace["mcp"]).__name__ == "MCPServer"


async def test_getting_started_server_and_test() -> None:
    server_code, test_code = (b for b in blocks("getting-started.md") if "def " in b)
    app: Server = load(server_code, "server")["app"]
    with trio.fail_after(10):
        async with open_client(app) as client:
            result = await client.call_tool("divide", {"numerator": 5, "denominator": 2})
            refused = await client.call_tool("divide", {"numerator": 1, "denominator": 0})
            tools = {tool.name: tool for tool in await client.list_tools()}
    assert result.structured == {"result": 2.5}
    assert refused.is_error and refused.text == "cannot divide by zero"
    schema = tools["divide"].input_schema
    assert schema["properties"]["denominator"]["description"] == "What to divide by (not zero)."
    assert "async def test_divide(mcp_client: TestClient)" in test_code


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = set(_nav_pages(config["nav"]))
    on_disk = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert listed == on_disk
    assert {"architecture.md", "protocol.md", "migrating.md", "clients.md"} <= listed
