"""A read-only SQLite explorer whose long queries run as tasks.

``query`` may run as a task (MCP 2025-11-25 server/tasks; the 2026-07-28 tasks extension): the
client gets a task id at once, polls it, and can cancel it. sqlite3 blocks, so each query runs
in a worker thread on its own read-only connection; cancelling the call (a task cancelled, a
request cancelled, a timeout) interrupts the query inside SQLite instead of leaving it running.

Run it:  SQLITE_EXPLORER_DB=shop.sqlite3 mcp-runtime serve examples/sqlite_explorer.py
(without the variable it creates and serves a small demo database in a temporary directory)
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import msgspec
import trio

from runtime import Server, ToolError

#: Rows returned at most per query (the rest is counted, not sent).
MAX_ROWS = 500


class Column(msgspec.Struct):
    name: str
    type: str


class Table(msgspec.Struct):
    name: str
    columns: list[Column]


class QueryResult(msgspec.Struct):
    columns: list[str]
    rows: list[list[str | int | float | None]]
    truncated: bool


def demo_database() -> str:
    """A small shop database, created once per temporary directory."""
    path = Path(tempfile.gettempdir()) / "mcp-runtime-sqlite-explorer-demo.sqlite3"
    if not path.exists():
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
            db.executemany(
                "INSERT INTO products (name, price) VALUES (?, ?)",
                [("kettle", 24.5), ("teapot", 31.0), ("mug", 6.25)],
            )
    return str(path)


def create_app(database: str) -> Server:
    app = Server("sqlite-explorer", "1.0.0", instructions="Explore a SQLite database (read-only).")

    def connect() -> sqlite3.Connection:
        # mode=ro: the file cannot be written through this connection, whatever the SQL says.
        uri = f"{Path(database).resolve().as_uri()}?mode=ro"
        return sqlite3.connect(uri, uri=True, check_same_thread=False)

    async def run(sql: str, limit: int) -> QueryResult:
        db = connect()

        def work() -> QueryResult:
            try:
                cursor = db.execute(sql)
                rows = cursor.fetchmany(limit + 1)
                columns = [d[0] for d in cursor.description or []]
                return QueryResult(columns, [list(r) for r in rows[:limit]], len(rows) > limit)
            finally:
                db.close()

        try:
            return await trio.to_thread.run_sync(work, abandon_on_cancel=True)
        except trio.Cancelled:
            db.interrupt()  # the abandoned thread's query stops at SQLite's next step
            raise
        except sqlite3.Error as exc:
            raise ToolError(f"SQLite error: {exc}") from None

    @app.tool(annotations={"readOnlyHint": True})
    async def tables() -> list[Table]:
        """The database's tables and their columns."""
        names = await run("SELECT name FROM sqlite_master WHERE type = 'table'", MAX_ROWS)
        out = []
        for (name,) in names.rows:
            info = await run(f"PRAGMA table_info({str(name)!r})", MAX_ROWS)
            out.append(Table(str(name), [Column(str(r[1]), str(r[2])) for r in info.rows]))
        return out

    @app.tool(task="optional", annotations={"readOnlyHint": True})
    async def query(sql: str, limit: int = 100) -> QueryResult:
        """Run one read-only SQL statement. Long queries can run as a task and be cancelled.

        Args:
            sql: A SELECT (or other read-only) statement.
            limit: Rows to return at most (up to 500).
        """
        return await run(sql, max(1, min(limit, MAX_ROWS)))

    return app


app = create_app(os.environ.get("SQLITE_EXPLORER_DB") or demo_database())

if __name__ == "__main__":
    app.run()
