"""serverInfo is made once per server (issue 22 target 1) and follows its fields when set."""

from __future__ import annotations

import trio

from runtime import Server
from runtime.testing import open_client

MODERN = "2026-07-28"
INFO = "io.modelcontextprotocol/serverInfo"


def make_app() -> Server:
    app = Server("info", "1.0.0")

    @app.tool
    async def echo(text: str) -> str:
        return text

    return app


async def test_modern_results_carry_server_info_that_follows_its_fields() -> None:
    app = make_app()
    with trio.fail_after(10):
        async with open_client(app, protocol_version=MODERN) as client:
            first = await client.call_tool("echo", {"text": "a"})
            assert first["_meta"][INFO] == {"name": "info", "version": "1.0.0"}
            made = app.server_info()
            assert app.server_info() is made  # made once, not per result
            app.title = "Info"
            app.version = "1.1.0"
            app.icons = [{"src": "https://example.com/i.png"}]
            app.website_url = "https://example.com"
            second = await client.call_tool("echo", {"text": "b"})
            assert second["_meta"][INFO] == {
                "name": "info",
                "version": "1.1.0",
                "title": "Info",
                "icons": [{"src": "https://example.com/i.png"}],
                "websiteUrl": "https://example.com",
            }
            app.name = "renamed"
            app.title = None
            app.icons = None
            app.website_url = None
            third = await client.request("tools/list")
            assert third["_meta"][INFO] == {"name": "renamed", "version": "1.1.0"}


async def test_initialize_reports_the_fields_as_set() -> None:
    app = make_app()
    app.server_info()  # made before the fields change
    app.title = "Later"
    with trio.fail_after(10):
        async with open_client(app) as client:
            result = client.initialize_result
    assert result is not None
    assert result["serverInfo"] == {"name": "info", "version": "1.0.0", "title": "Later"}
