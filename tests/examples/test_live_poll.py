"""examples/live_poll.py over a real WebSocket, as examples/web/poll.html speaks it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import live_poll
import pytest
import trio
from trio_websocket import ConnectionRejected, WebSocketConnection, open_websocket_url

from tests.transports.app import serving

PAGE = "http://127.0.0.1:8080"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    yield
    for option in live_poll.VOTES:
        live_poll.VOTES[option] = 0


async def rpc(ws: WebSocketConnection, request_id: int, method: str, **params: Any) -> Any:
    await ws.send_message(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                      "params": params}))  # fmt: skip
    while True:  # notifications may arrive before the answer
        message = json.loads(await ws.get_message())
        if message.get("id") == request_id:
            return message["result"]


async def open_page(ws: WebSocketConnection) -> None:
    """What poll.html does on open."""
    await rpc(ws, 1, "initialize", protocolVersion="2025-11-25", capabilities={},
              clientInfo={"name": "poll.html", "version": "1.0.0"})  # fmt: skip
    await ws.send_message('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    await rpc(ws, 2, "resources/subscribe", uri=live_poll.RESULTS)


async def test_two_pages_see_each_others_votes() -> None:
    origin = [(b"Origin", PAGE.encode())]
    with trio.fail_after(10):
        async with serving(live_poll.app, "ws", allowed_origins=[PAGE]) as (host, port):
            url = f"ws://{host}:{port}/mcp"
            async with (
                open_websocket_url(url, subprotocols=["mcp"], extra_headers=origin) as one,
                open_websocket_url(url, subprotocols=["mcp"], extra_headers=origin) as two,
            ):
                await open_page(one)
                await open_page(two)
                voted = await rpc(one, 3, "tools/call", name="vote", arguments={"option": "trio"})
                assert voted["structuredContent"]["votes"]["trio"] == 1
                update = json.loads(await two.get_message())
                assert update == {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": "poll://results"},
                }
                read = await rpc(two, 3, "resources/read", uri=live_poll.RESULTS)
                poll = json.loads(read["contents"][0]["text"])
                assert poll == {"question": live_poll.QUESTION, "total": 1,
                                "votes": {"trio": 1, "asyncio": 0, "threads": 0}}  # fmt: skip
                bad = await rpc(two, 4, "tools/call", name="vote", arguments={"option": "gevent"})
                assert bad["isError"] and "not an option" in bad["content"][0]["text"]


async def test_another_sites_page_is_refused() -> None:
    with trio.fail_after(10):
        async with serving(live_poll.app, "ws", allowed_origins=[PAGE]) as (host, port):
            with pytest.raises(ConnectionRejected) as rejected:
                async with open_websocket_url(
                    f"ws://{host}:{port}/mcp",
                    subprotocols=["mcp"],
                    extra_headers=[(b"Origin", b"https://evil.example")],
                ):
                    pass
    assert rejected.value.status_code == 403


def test_the_page_speaks_the_same_protocol() -> None:
    page = (Path(live_poll.__file__).parent / "web" / "poll.html").read_text()
    needles = (
        'new WebSocket("ws://127.0.0.1:8000/mcp", "mcp")',
        "resources/subscribe",
        "notifications/resources/updated",
        '"poll://results"',
        'name: "vote"',
    )
    for needle in needles:
        assert needle in page
    assert PAGE in live_poll.PAGE_ORIGINS


def _node_with_ws() -> tuple[str, dict[str, str]] | None:
    """``node`` and a NODE_PATH holding the ``ws`` package (.ci/run installs both), or None."""
    node = shutil.which("node")
    node_path = os.environ.get("NODE_PATH", str(ROOT / ".ci" / "node" / "node_modules"))
    if node is None or not (Path(node_path) / "ws").is_dir():
        return None
    return node, {**os.environ, "NODE_PATH": node_path}


async def test_the_browser_page_votes_and_redraws() -> None:
    """examples/web/poll.html's own script, run by Node against the served example."""
    found = _node_with_ws()
    if found is None:
        assert not os.environ.get("CI"), "CI installs node and the ws package (.ci/run)"
        pytest.skip("node with the ws package is not installed (see .ci/run)")
    node, env = found
    page = ROOT / "examples" / "web" / "poll.html"
    with trio.fail_after(20):
        async with serving(live_poll.app, "ws", allowed_origins=[PAGE]) as (host, port):
            result = await trio.run_process(
                [
                    node,
                    str(Path(__file__).with_name("poll_page.js")),
                    str(page),
                    f"ws://{host}:{port}/mcp",
                    PAGE,
                ],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=env,
            )
    assert result.returncode == 0, result.stderr.decode()
    shown = json.loads(result.stdout)
    assert shown == {
        "question": live_poll.QUESTION,
        "total": "1 votes",
        "buttons": ["trio (1)", "asyncio (0)", "threads (0)"],
    }
    assert live_poll.VOTES["trio"] == 1
