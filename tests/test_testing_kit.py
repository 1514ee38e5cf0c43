"""runtime.testing as a user meets it: typed results, pagination, progress, server-to-client
handlers in both eras, plain assertion errors, and the pytest plugin (issue 20, item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime import Context, Server
from runtime.testing import (
    Page,
    PromptResult,
    ReadResult,
    Tool,
    ToolResult,
    accept,
    decline,
    open_client,
    sampled,
)

ROOT = Path(__file__).resolve().parent.parent


def make_app(page_size: int | None = None) -> Server:
    app = Server("kit", page_size=page_size)

    @app.tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @app.tool
    async def work(steps: int, ctx: Context) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return "done"

    @app.tool
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        if answer.get("action") != "accept":
            return "no"
        return f"hi {answer['content']['name']}"

    @app.tool
    async def summarize(text: str, ctx: Context) -> str:
        roots = await ctx.list_roots()
        reply = await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": text}}], max_tokens=10
        )
        return f"{reply['content']['text']} ({len(roots)} roots)"

    for index in range(5):
        app.tool(name=f"extra{index}")(_noop)

    @app.resource("mem://hello")
    def hello() -> str:
        return "hello"

    @app.prompt
    def ask(topic: str) -> str:
        return f"Tell me about {topic}"

    return app


async def _noop() -> None:
    return None


async def test_typed_results_and_wire_form() -> None:
    with trio.fail_after(10):
        async with open_client(make_app()) as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
            bad = await client.call_tool("add", {"a": "x", "b": 3})
            read = await client.read_resource("mem://hello")
            prompt = await client.get_prompt("ask", {"topic": "trio"})
    assert isinstance(result, ToolResult)
    assert result.text == "5" and result.structured == {"result": 5} and not result.is_error
    # The same object is the wire JSON, as a mapping.
    assert result == {
        "content": [{"type": "text", "text": "5"}],
        "structuredContent": {"result": 5},
        "isError": False,
    }
    assert bad.is_error and "Expected `int`, got `str`" in bad.text
    assert isinstance(read, ReadResult) and read.text == "hello"
    assert read.contents[0]["uri"] == "mem://hello"
    assert isinstance(prompt, PromptResult)
    assert prompt.messages[0]["content"]["text"] == "Tell me about trio"


async def test_lists_follow_pagination_and_pages_do_not() -> None:
    with trio.fail_after(10):
        async with open_client(make_app(page_size=3)) as client:
            tools = await client.list_tools()
            first = await client.list_tools_page()
            assert first.next_cursor is not None
            second = await client.list_tools_page(first.next_cursor)
    assert [tool.name for tool in tools] == [
        "add", "work", "greet", "summarize", "extra0", "extra1", "extra2", "extra3", "extra4"
    ]  # fmt: skip
    assert all(isinstance(tool, Tool) for tool in tools)
    assert tools[0].description == "Add two numbers."
    assert tools[0].input_schema["required"] == ["a", "b"]
    assert isinstance(first, Page) and [t.name for t in first.items] == ["add", "work", "greet"]
    assert [t.name for t in second.items] == ["summarize", "extra0", "extra1"]


async def test_progress_callbacks_sync_and_async() -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    seen_async: list[float] = []

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def on_progress_async(progress: float, total: float | None, message: str | None) -> None:
        await trio.lowlevel.checkpoint()
        seen_async.append(progress)

    with trio.fail_after(10):
        async with open_client(make_app()) as client:
            assert (await client.call_tool("work", {"steps": 3}, progress=on_progress)).text == (
                "done"
            )
            await client.call_tool("work", {"steps": 2}, progress=on_progress_async)
            tokens = {
                n["params"]["progressToken"]
                for n in client.notifications
                if n["method"] == "notifications/progress"
            }
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert seen_async == [1, 2]
    assert len(tokens) == 2  # one token per call


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_server_to_client_handlers_in_both_eras(version: str) -> None:
    asked: list[dict[str, Any]] = []

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return accept({"name": "Ada"})

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        assert params["maxTokens"] == 10
        return sampled("short")

    with trio.fail_after(10):
        async with open_client(
            make_app(),
            protocol_version=version,
            elicitation=elicitation,
            sampling=sampling,
            roots=["file:///work", {"uri": "file:///home", "name": "home"}],
        ) as client:
            greeted = await client.call_tool("greet")
            summary = await client.call_tool("summarize", {"text": "long"})

        async def no(params: dict[str, Any]) -> dict[str, Any]:
            return decline()

        async with open_client(make_app(), protocol_version=version, elicitation=no) as client:
            declined = await client.call_tool("greet")
    assert greeted.text == "hi Ada" and asked[0]["message"] == "Name?"
    assert summary.text == "short (2 roots)"
    assert declined.text == "no"


async def test_modern_input_without_a_handler_is_returned_as_is() -> None:
    with trio.fail_after(10):
        async with open_client(
            make_app(), protocol_version="2026-07-28", capabilities={"elicitation": {}}
        ) as client:
            result = await client.call_tool("greet")
    assert result.input_required
    (request,) = result["inputRequests"].values()
    assert request["method"] == "elicitation/create"


async def test_a_tool_that_never_stops_asking_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import runtime.testing

    monkeypatch.setattr(runtime.testing, "MAX_INPUT_ROUNDS", 3)
    app = Server("asks")

    @app.tool
    async def nag(ctx: Context) -> str:
        for index in range(10):
            await ctx.elicit(f"again {index}?", {"type": "object", "properties": {}})
        return "done"

    async def yes(params: dict[str, Any]) -> dict[str, Any]:
        return accept({})

    with trio.fail_after(10), pytest.raises(AssertionError, match="asked for input 3 times"):
        async with open_client(app, protocol_version="2026-07-28", elicitation=yes) as client:
            await client.call_tool("nag")


async def test_a_failed_assertion_comes_out_plain() -> None:
    with trio.fail_after(10), pytest.raises(AssertionError) as info:
        async with open_client(make_app()) as client:
            result = await client.call_tool("add", {"a": 1, "b": 1})
            assert result.text == "3", "one plus one"
    assert type(info.value) is AssertionError
    assert "one plus one" in str(info.value)
    assert info.value.__suppress_context__


PLUGIN_TEST = """
import pytest
from runtime import Server

app = Server("plugged")


@app.tool
async def add(a: int, b: int) -> int:
    return a + b


@pytest.fixture
def mcp_server():
    return app


async def test_add(mcp_client):
    assert (await mcp_client.call_tool("add", {"a": 1, "b": 2})).text == "3"


@pytest.mark.mcp_client(protocol_version="2026-07-28")
async def test_add_modern(mcp_client):
    assert mcp_client.modern_meta is not None
    assert (await mcp_client.call_tool("add", {"a": 2, "b": 2})).structured == {"result": 4}


async def test_fails(mcp_client):
    assert (await mcp_client.call_tool("add", {"a": 1, "b": 1})).text == "3"
"""


def test_pytest_plugin_fixture_and_marker(tmp_path: Path) -> None:
    (tmp_path / "test_plugged.py").write_text(textwrap.dedent(PLUGIN_TEST))
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert "1 failed, 2 passed" in out.stdout, out.stdout + out.stderr
    assert "FAILED test_plugged.py::test_fails - AssertionError" in out.stdout
    assert "ExceptionGroup" not in out.stdout


def test_plugin_without_mcp_server_fixture_says_what_to_define(tmp_path: Path) -> None:
    (tmp_path / "test_missing.py").write_text("async def test_x(mcp_client):\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert out.returncode != 0
    assert "needs a fixture named 'mcp_server'" in out.stdout + out.stderr


def test_readme_shows_the_complete_quickstart_test_file() -> None:
    readme = (ROOT / "README.md").read_text()
    test_file = (ROOT / "tests" / "examples" / "test_quickstart.py").read_text()
    assert f"```python\n{test_file}```" in readme
