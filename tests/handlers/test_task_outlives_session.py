"""A 2025-11-25 task outlives the session that created it (basic/utilities/tasks: a task
runs on after its creating request was answered): its status changes after the session
ended go nowhere, and the server lives on (the status sender was cancelled with the
session's connection; the change must not raise into the server's task nursery)."""

from __future__ import annotations

import trio

from runtime import Server

from ..transports.app import init_body, serving, until
from ..transports.http_client import open_raw_session, request
from ..transports.http_client import session_headers as headers


async def test_a_task_finishing_after_its_session_ended_leaves_the_server_up() -> None:
    app = Server("tasks", "1.0.0")
    go = trio.Event()
    finished: list[str] = []

    @app.tool(task="optional")
    async def later() -> str:
        """Finish once the test says so."""
        await go.wait()
        finished.append("later")
        return "done"

    with trio.fail_after(10):
        async with serving(app) as address:
            session = await open_raw_session(address)
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "later", "arguments": {}, "task": {}},
            }
            created = await request(address, "POST", headers=headers(session), body=call)
            assert created.json()["result"]["task"]["status"] == "working"
            ended = await request(address, "DELETE", headers=headers(session))
            assert ended.status == 200
            await trio.sleep(0.1)  # the session's connection ends (its round, in the registry)
            go.set()
            await until(lambda: finished == ["later"])
            await trio.sleep(0.1)
            again = await request(address, "POST", body=init_body())
            assert again.status == 200, again
