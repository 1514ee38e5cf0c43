"""examples/sqlite_explorer.py: read-only queries, and long ones as cancellable tasks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio
from sqlite_explorer import create_app

from runtime import Server
from runtime.testing import open_client

#: Counts to ten billion: minutes of work, unless interrupted.
ENDLESS = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000000) "
    "SELECT count(*) FROM n"
)


@pytest.fixture
def app(tmp_path: Path) -> Server:
    path = tmp_path / "shop.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
        db.executemany(
            "INSERT INTO products (name, price) VALUES (?, ?)",
            [("kettle", 24.5), ("teapot", 31.0), ("mug", 6.25)],
        )
    return create_app(str(path))


async def test_tables_and_queries(app: Server) -> None:
    with trio.fail_after(10):
        async with open_client(app) as client:
            tables = await client.call_tool("tables")
            rows = await client.call_tool(
                "query", {"sql": "SELECT name, price FROM products ORDER BY price", "limit": 2}
            )
            write = await client.call_tool("query", {"sql": "DELETE FROM products"})
            still = await client.call_tool("query", {"sql": "SELECT count(*) FROM products"})
    assert tables.structured == {
        "result": [
            {
                "name": "products",
                "columns": [
                    {"name": "id", "type": "INTEGER"},
                    {"name": "name", "type": "TEXT"},
                    {"name": "price", "type": "REAL"},
                ],
            }
        ]
    }
    assert rows.structured == {
        "columns": ["name", "price"],
        "rows": [["mug", 6.25], ["kettle", 24.5]],
        "truncated": True,
    }
    assert write.is_error and "readonly database" in write.text
    assert still.structured["rows"] == [[3]]


async def test_long_query_as_a_task_is_cancelled_inside_sqlite(app: Server) -> None:
    with trio.fail_after(10):
        async with open_client(app) as client:
            created = await client.request(
                "tools/call",
                {"name": "query", "arguments": {"sql": ENDLESS}, "task": {"ttl": 60000}},
            )
            task_id = created["task"]["taskId"]
            await trio.sleep(0.2)
            assert (await client.request("tasks/get", {"taskId": task_id}))["status"] == "working"
            cancelled = await client.request("tasks/cancel", {"taskId": task_id})
            assert cancelled["status"] == "cancelled"
            with trio.fail_after(2):
                await query_threads_finish()
            # The server is free at once: a short query as a task completes.
            quick = await client.request(
                "tools/call",
                {"name": "query", "arguments": {"sql": "SELECT 42"}, "task": {}},
            )
            result = await client.request("tasks/result", {"taskId": quick["task"]["taskId"]})
    assert result["structuredContent"]["rows"] == [[42]]


async def query_threads_finish() -> None:
    """An abandoned worker thread holds its limiter token until it really ends: polling the
    token count tells an interrupted query from one still counting in the background."""
    limiter = trio.to_thread.current_default_thread_limiter()
    while limiter.borrowed_tokens:  # noqa: ASYNC110 (a limiter has no event to await)
        await trio.sleep(0.01)


async def test_a_cancelled_request_interrupts_the_query(app: Server) -> None:
    with trio.fail_after(10):
        async with open_client(app) as client:
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    await client.call_tool("query", {"sql": ENDLESS})

                nursery.start_soon(call)
                await trio.sleep(0.2)
                limiter = trio.to_thread.current_default_thread_limiter()
                assert limiter.borrowed_tokens == 1  # the query is running
                # The client gives up on the call (request 2; initialize was 1).
                await client.notify("notifications/cancelled", {"requestId": 2})
                with trio.fail_after(2):
                    await query_threads_finish()  # minutes of counting, stopped
                nursery.cancel_scope.cancel()
            result = await client.call_tool("query", {"sql": "SELECT 1"})
    assert result.structured["rows"] == [[1]]
