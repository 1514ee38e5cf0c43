"""MCP features through the testing kit: schemas, calls, resources, templates, prompts."""

from __future__ import annotations

import base64
from typing import Annotated

import msgspec
import pytest
import trio

from runtime import (
    Context,
    ImageContent,
    JSONRPCError,
    PromptMessage,
    Server,
    TextContent,
    TextResourceContents,
    ToolError,
)
from runtime.testing import open_client


class Point(msgspec.Struct):
    x: float
    y: float


def make_app() -> Server:
    app = Server("features", "2.0.0", title="Feature test", instructions="Be nice.")

    @app.tool(name="distance", title="Distance", annotations={"readOnlyHint": True})
    def distance(a: Point, b: Point, scale: Annotated[float, msgspec.Meta(gt=0)] = 1.0) -> float:
        """Euclidean distance between two points."""
        return (((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5) * scale

    @app.tool
    async def image() -> ImageContent:
        return ImageContent(data=base64.b64encode(b"png").decode(), mime_type="image/png")

    @app.tool
    async def mixed() -> list[object]:
        return ["one", TextContent(text="two")]

    @app.tool
    async def refuse() -> str:
        raise ToolError("not today")

    @app.tool
    async def protocol_error() -> str:
        raise JSONRPCError(-32042, "custom", {"why": "test"})

    @app.tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    async def raw_schema(q: str = "") -> str:
        return q

    @app.tool
    async def who(ctx: Context) -> dict[str, object]:
        return {"version": ctx.protocol_version, "client": ctx.client_info, "id": ctx.request_id}

    @app.tool
    async def logs(ctx: Context) -> str:
        await ctx.debug("hidden unless debug")
        await ctx.warning({"msg": "careful"})
        return "ok"

    @app.resource("bin://blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\x01\x02"

    @app.resource("multi://x")
    def multi() -> list[TextResourceContents]:
        return [
            TextResourceContents(uri="multi://x#1", text="a"),
            TextResourceContents(uri="multi://x#2", text="b"),
        ]

    @app.resource("items://{item_id}/parts/{part}")
    def part(item_id: int, part: str) -> str:
        return f"{item_id}:{part}"

    @app.resource("file:///{+path}")
    def file(path: str) -> str:
        return path

    @app.prompt
    def plain(topic: str) -> str:
        return f"Tell me about {topic}"

    @app.prompt(name="chat", description="Several messages")
    def chat(turns: int = 2) -> list[PromptMessage]:
        return [
            PromptMessage(
                role="user" if i % 2 == 0 else "assistant", content=TextContent(text=str(i))
            )
            for i in range(turns)
        ]

    return app


async def test_initialize_reports_what_is_implemented() -> None:
    async with open_client(make_app()) as client:
        result = client.initialize_result
    assert result == {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "logging": {},
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
        },
        "serverInfo": {"name": "features", "version": "2.0.0", "title": "Feature test"},
        "instructions": "Be nice.",
    }


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
async def test_version_negotiation(requested: str, answered: str) -> None:
    async with open_client(make_app(), protocol_version=requested) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["protocolVersion"] == answered


async def test_second_initialize_is_refused() -> None:
    async with open_client(make_app()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.initialize()
        assert info.value.code == -32600


async def test_tool_schema_from_nested_types() -> None:
    async with open_client(make_app()) as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
    schema = tools["distance"]["inputSchema"]
    assert schema["required"] == ["a", "b"]
    assert schema["properties"]["a"] == {"$ref": "#/$defs/Point"}
    assert schema["properties"]["scale"] == {
        "type": "number",
        "exclusiveMinimum": 0,
        "default": 1.0,
    }
    assert schema["$defs"]["Point"]["required"] == ["x", "y"]
    assert tools["distance"]["title"] == "Distance"
    assert tools["distance"]["annotations"] == {"readOnlyHint": True}
    assert tools["raw_schema"]["inputSchema"] == {
        "type": "object",
        "properties": {"q": {"type": "string"}},
    }
    assert "who" in tools and "ctx" not in tools["who"]["inputSchema"]["properties"]


async def test_tool_calls_and_errors() -> None:
    async with open_client(make_app()) as client:
        result = await client.call_tool("distance", {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}})
        assert result == {
            "content": [{"type": "text", "text": "5.0"}],
            "structuredContent": {"result": 5.0},
            "isError": False,
        }
        bad = await client.call_tool("distance", {"a": {"x": 0}, "b": {"x": 3, "y": 4}})
        assert bad["isError"] is True
        assert "missing required field `y`" in bad["content"][0]["text"]
        neg = await client.call_tool(
            "distance", {"a": {"x": 0, "y": 0}, "b": {"x": 3, "y": 4}, "scale": -1}
        )
        assert neg["isError"] is True and "Expected `float` > 0" in neg["content"][0]["text"]
        assert (await client.call_tool("image"))["content"] == [
            {"type": "image", "data": "cG5n", "mimeType": "image/png"}
        ]
        assert (await client.call_tool("mixed"))["content"] == [
            {"type": "text", "text": "one"},
            {"type": "text", "text": "two"},
        ]
        assert await client.call_tool("refuse") == {
            "content": [{"type": "text", "text": "not today"}],
            "isError": True,
        }
        with pytest.raises(JSONRPCError) as info:
            await client.call_tool("protocol_error")
        assert (info.value.code, info.value.data) == (-32042, {"why": "test"})
        with pytest.raises(JSONRPCError) as info:
            await client.call_tool("no_such_tool")
        assert info.value.code == -32602 and "Unknown tool" in info.value.message
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/call", {"arguments": {}})
        assert info.value.code == -32602 and "name" in info.value.message


async def test_context_sees_the_session() -> None:
    async with open_client(make_app()) as client:
        result = await client.call_tool("who")
    data = msgspec.json.decode(result["content"][0]["text"])
    assert data["version"] == "2025-11-25"
    assert data["client"]["name"] == "runtime.testing"
    assert isinstance(data["id"], int)


async def test_logging_respects_set_level() -> None:
    async with open_client(make_app()) as client:
        await client.call_tool("logs")
        # No level set: the server's default ("debug") lets everything through.
        assert [n["params"]["level"] for n in client.notifications] == ["debug", "warning"]
        client.notifications.clear()
        await client.request("logging/setLevel", {"level": "info"})
        await client.call_tool("logs")
        note = await client.wait_for_notification("notifications/message")
        assert note["params"] == {"level": "warning", "data": {"msg": "careful"}}
        assert len(client.notifications) == 1  # debug was filtered out
        with pytest.raises(JSONRPCError) as info:
            await client.request("logging/setLevel", {"level": "loud"})
        assert info.value.code == -32602


async def test_resources_and_templates() -> None:
    async with open_client(make_app()) as client:
        assert [r["uri"] for r in await client.list_resources()] == ["bin://blob", "multi://x"]
        assert [t["uriTemplate"] for t in await client.list_resource_templates()] == [
            "items://{item_id}/parts/{part}",
            "file:///{+path}",
        ]
        assert (await client.read_resource("bin://blob"))["contents"] == [
            {"uri": "bin://blob", "blob": "AAEC", "mimeType": "application/octet-stream"}
        ]
        assert len((await client.read_resource("multi://x"))["contents"]) == 2
        part = await client.read_resource("items://42/parts/a%20b")
        assert part["contents"][0]["text"] == "42:a b"
        deep = await client.read_resource("file:///etc/hosts")
        assert deep["contents"][0]["text"] == "etc/hosts"
        with pytest.raises(JSONRPCError) as info:
            await client.read_resource("items://not-a-number/parts/a")
        assert info.value.code == -32602
        with pytest.raises(JSONRPCError) as info:
            await client.read_resource("nothing://here")
        assert (info.value.code, info.value.data) == (-32002, {"uri": "nothing://here"})


async def test_prompts() -> None:
    async with open_client(make_app()) as client:
        prompts = {p["name"]: p for p in await client.list_prompts()}
        assert prompts["plain"]["arguments"] == [{"name": "topic", "required": True}]
        assert prompts["chat"]["description"] == "Several messages"
        got = await client.get_prompt("plain", {"topic": "trio"})
        assert got["messages"] == [
            {"role": "user", "content": {"type": "text", "text": "Tell me about trio"}}
        ]
        chat = await client.get_prompt("chat", {"turns": "3"})
        assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user"]
        with pytest.raises(JSONRPCError) as info:
            await client.get_prompt("chat", {"turns": "many"})
        assert info.value.code == -32602 and info.value.data["path"] == "params.arguments.turns"
        with pytest.raises(JSONRPCError) as info:
            await client.get_prompt("plain")
        assert info.value.code == -32602 and "topic" in info.value.message
        with pytest.raises(JSONRPCError) as info:
            await client.get_prompt("nope")
        assert info.value.code == -32602


async def test_decorators_keep_functions_callable() -> None:
    app = Server("callable")

    @app.tool
    def double(x: int) -> int:
        return 2 * x

    assert double(4) == 8


def test_registration_errors() -> None:
    app = Server("errors")

    @app.tool
    def dup() -> None: ...

    with pytest.raises(ValueError, match="already registered"):
        app.tool(dup)
    with pytest.raises(TypeError, match="named parameter"):
        app.tool(lambda *args: None)
    with pytest.raises(TypeError, match="not variables"):
        app.resource("x://{a}")(lambda b: b)
    with pytest.raises(TypeError, match="static resource takes no arguments"):
        app.resource("x://fixed")(lambda b: b)


async def test_sync_tool_runs_in_a_thread_and_async_in_the_task() -> None:
    import threading

    app = Server("threads")
    main = threading.get_ident()

    @app.tool
    def sync_tool() -> bool:
        return threading.get_ident() != main

    @app.tool
    async def async_tool() -> bool:
        return threading.get_ident() == main

    with trio.fail_after(10):
        async with open_client(app) as client:
            assert (await client.call_tool("sync_tool"))["content"][0]["text"] == "true"
            assert (await client.call_tool("async_tool"))["content"][0]["text"] == "true"


async def test_progress_increases_and_stops_after_completion() -> None:
    app = Server("progress")
    kept: list[Context] = []

    @app.tool
    async def work(ctx: Context) -> str:
        for value in (1, 1, 0.5, 2):
            await ctx.report_progress(value, 2)
        kept.append(ctx)
        return "done"

    @app.tool
    async def late() -> str:
        await kept[0].report_progress(3, 3)
        return "late"

    with trio.fail_after(10):
        async with open_client(app) as client:
            await client.request(
                "tools/call", {"name": "work", "arguments": {}, "_meta": {"progressToken": "p1"}}
            )
            await client.call_tool("late")
            await client.ping()
    progress = [
        n["params"] for n in client.notifications if n["method"] == "notifications/progress"
    ]
    assert progress == [
        {"progressToken": "p1", "progress": 1, "total": 2},
        {"progressToken": "p1", "progress": 2, "total": 2},
    ]


async def test_icons_read_resource_and_cancelled_state() -> None:
    icon = {"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}
    app = Server("icons", icons=[icon], website_url="https://example.com")
    seen: list[bool] = []

    @app.resource("config://x", icons=[icon])
    def config() -> dict[str, int]:
        return {"x": 1}

    @app.resource("note://{name}")
    async def note(name: str, ctx: Context) -> str:
        return f"note {name} for {ctx.request_id}"

    @app.tool(icons=[icon])
    async def combined(ctx: Context) -> str:
        first = await ctx.read_resource("config://x")
        second = await ctx.read_resource("note://a")
        seen.append(ctx.cancelled)
        return f"{first[0].text} / {second[0].text}"

    @app.prompt(icons=[icon])
    def hello() -> str:
        return "hi"

    async with open_client(app) as client:
        info = client.initialize_result["serverInfo"]  # type: ignore[index]
        assert info["icons"] == [icon] and info["websiteUrl"] == "https://example.com"
        assert (await client.list_tools())[0]["icons"] == [icon]
        assert (await client.list_resources())[0]["icons"] == [icon]
        assert (await client.list_prompts())[0]["icons"] == [icon]
        result = await client.call_tool("combined")
        assert result["content"][0]["text"].startswith('{"x":1} / note a for ')
        with pytest.raises(JSONRPCError):
            await client.request("tools/call", {"name": "nope"})
    assert seen == [False]


async def test_cancelled_is_visible_to_cleanup_code() -> None:
    app = Server("cancel-state")
    states: list[bool] = []
    finished = trio.Event()

    @app.tool
    async def wait(ctx: Context) -> str:
        try:
            await trio.sleep(30)
        finally:
            states.append(ctx.cancelled)
            finished.set()
        return "never"

    with trio.fail_after(10):
        async with open_client(app) as client, trio.open_nursery() as nursery:
            nursery.start_soon(client.request, "tools/call", {"name": "wait", "arguments": {}})
            await trio.sleep(0.1)
            await client.notify("notifications/cancelled", {"requestId": 2})
            await finished.wait()
            nursery.cancel_scope.cancel()
    assert states == [True]


async def test_meta_that_is_not_an_object_is_invalid_params() -> None:
    """``_meta`` stays raw in the params structs and is decoded once where it is used; a
    handshake-era ``_meta`` that is not an object is still -32602 naming it."""
    with trio.fail_after(10):
        async with open_client(make_app()) as client:
            for method, params in (
                ("tools/call", {"name": "refuse", "_meta": "x"}),
                ("tools/call", {"name": "who", "_meta": [1]}),
                ("resources/read", {"uri": "bin://blob", "_meta": 3}),
                ("prompts/get", {"name": "plain", "arguments": {"topic": "t"}, "_meta": "x"}),
            ):
                with pytest.raises(JSONRPCError) as info:
                    await client.request(method, params)
                assert info.value.code == -32602, method
                assert info.value.data["path"] == "params._meta", method
            # null and an object are fine; the tool sees the object
            who = await client.request(
                "tools/call", {"name": "who", "_meta": {"progressToken": "p"}}
            )
            assert who["isError"] is False
            plain = await client.request("tools/call", {"name": "refuse", "_meta": None})
            assert plain["isError"] is True and plain["content"][0]["text"] == "not today"
