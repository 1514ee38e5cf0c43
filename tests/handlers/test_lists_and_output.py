"""Pagination cursors on every list, and structured tool output."""

from __future__ import annotations

import msgspec
import pytest

from runtime import JSONRPCError, Server
from runtime.features import CursorCodec
from runtime.testing import open_client


class Weather(msgspec.Struct):
    city: str
    celsius: float


def make_app(page_size: int | None) -> Server:
    app = Server("lists", page_size=page_size)
    for i in range(7):
        app.tool(name=f"tool{i}")(lambda: "x")
        app.resource(f"mem://r{i}")(lambda: "x")
        app.resource(f"tmpl{i}://{{id}}")(lambda id: id)
        app.prompt(name=f"prompt{i}")(lambda: "x")

    @app.tool
    async def weather(city: str) -> Weather:
        return Weather(city=city, celsius=21.5)

    @app.tool
    async def count(n: int) -> list[int]:
        return list(range(n))

    @app.tool(structured_output=False)
    async def plain(n: int) -> list[int]:
        return list(range(n))

    @app.tool(output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})
    async def custom() -> dict[str, bool]:
        return {"ok": True}

    return app


@pytest.mark.parametrize(
    ("method", "key", "total"),
    [
        ("tools/list", "tools", 11),
        ("resources/list", "resources", 7),
        ("resources/templates/list", "resourceTemplates", 7),
        ("prompts/list", "prompts", 7),
    ],
)
async def test_pages_walk_every_item_once(method: str, key: str, total: int) -> None:
    async with open_client(make_app(page_size=3)) as client:
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            result = await client.request(method, {"cursor": cursor} if cursor else {})
            seen.extend(
                item.get("uri") or item.get("uriTemplate") or item["name"] for item in result[key]
            )
            pages += 1
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == total
        assert pages == -(-total // 3)
        with pytest.raises(JSONRPCError) as info:
            await client.request(method, {"cursor": "not-a-cursor"})
        assert info.value.code == -32602


async def test_cursor_of_another_list_or_server_is_rejected() -> None:
    async with open_client(make_app(page_size=3)) as client:
        tools = await client.request("tools/list")
        with pytest.raises(JSONRPCError):
            await client.request("prompts/list", {"cursor": tools["nextCursor"]})
    other = CursorCodec(3).encode("tools", 3)
    async with open_client(make_app(page_size=3)) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/list", {"cursor": other})
        assert info.value.code == -32602


async def test_unpaginated_lists_have_no_cursor() -> None:
    async with open_client(make_app(page_size=None)) as client:
        result = await client.request("tools/list")
        assert "nextCursor" not in result and len(result["tools"]) == 11


async def test_structured_output() -> None:
    async with open_client(make_app(page_size=None)) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["weather"]["outputSchema"] == {
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
        }
        assert tools["count"]["outputSchema"] == {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
            "required": ["result"],
        }
        assert "outputSchema" not in tools["plain"] and "outputSchema" not in tools["tool0"]
        assert tools["custom"]["outputSchema"] == {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
        }
        weather = await client.call_tool("weather", {"city": "Oslo"})
        assert weather["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
        assert msgspec.json.decode(weather["content"][0]["text"]) == weather["structuredContent"]
        count = await client.call_tool("count", {"n": 3})
        assert count["structuredContent"] == {"result": [0, 1, 2]}
        assert count["content"][0]["text"] == "[0,1,2]"
        plain = await client.call_tool("plain", {"n": 2})
        assert "structuredContent" not in plain and plain["content"][0]["text"] == "[0,1]"
        custom = await client.call_tool("custom")
        assert custom["structuredContent"] == {"ok": True}


def test_structured_output_true_needs_a_data_annotation() -> None:
    app = Server("x")
    with pytest.raises(TypeError, match="structured_output=True"):

        @app.tool(structured_output=True)
        def text() -> str:
            return ""


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
async def test_a_non_finite_number_in_structured_output_is_an_error(
    bad: float, caplog: pytest.LogCaptureFixture
) -> None:
    """issue 16 item 6: JSON has no infinity; msgspec writes it as null, which the tool's own
    output schema (``number``) forbids. The author sees an error, the client an isError."""
    app = Server("nonfinite")

    @app.tool
    async def measure() -> Weather:
        return Weather(city="Oslo", celsius=bad)

    @app.tool
    async def ratio() -> float:
        return bad

    async with open_client(app) as client:
        for name, path in (("measure", "celsius"), ("ratio", "result")):
            result = await client.call_tool(name)
            assert result["isError"] is True, result
            assert "structuredContent" not in result
            text = result["content"][0]["text"]
            assert "non-finite" in text and f"`{path}`" in text, text
    assert "non-finite" in caplog.text
