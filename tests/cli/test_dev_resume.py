"""A handshake-era session's GET stream resumed with ``Last-Event-ID`` across a reload of
``mcp-runtime dev``: the events the old version sent (kept in the supervisor's held store,
runtime/stores/_unix.py) that the client had not seen are replayed by the new version, none
twice, and live events follow (2025-11-25 basic/transports, "Resumability and
Redelivery"). A real dev process, a real edit of the served file, raw HTTP on 127.0.0.1."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import trio

from ..peers import ROOT, cli
from ..transports.app import call, init_body
from ..transports.http_client import HttpConn, connect, request, sse_messages

VERSION = "2025-11-25"
SERVED = ROOT / "tests" / "cli" / "dev_events.py"


async def _wait_for(err: Path, text: str, after: int = 0) -> str:
    """dev's stderr once it says ``text`` past offset ``after`` (polled: no event for it)."""
    while True:
        seen = await trio.Path(err).read_text()
        if text in seen[after:]:
            return seen
        await trio.sleep(0.05)


def headers(session: str, **extra: str) -> dict[str, str]:
    return {"mcp-session-id": session, "mcp-protocol-version": VERSION, **extra}


async def tick(address: tuple[str, int], session: str, request_id: int, times: int) -> str:
    response = await request(
        address, "POST", headers=headers(session), body=call(request_id, "tick", times=times)
    )
    assert response.status == 200, response
    found = response.json() if response.body[:1] == b"{" else sse_messages(response.body)[-1]
    return str(found["result"]["content"][0]["text"])


async def listen(address: tuple[str, int], session: str, last: str | None = None) -> HttpConn:
    """The session's GET stream (resumed after ``last``), past its priming event."""
    extra = {"accept": "text/event-stream"}
    if last is not None:
        extra["last-event-id"] = last
    conn = await connect(address)
    await conn.send("GET", "/mcp", headers=headers(session, **extra))
    head = await conn.head()
    assert head.status == 200, head
    return conn


async def events(conn: HttpConn, count: int) -> list[tuple[str, str]]:
    """The next ``count`` events' (method, id), skipping priming."""
    got: list[tuple[str, str]] = []
    while len(got) < count:
        event = await conn.next_event()
        assert event is not None, "the GET stream ended"
        if event.data:
            message: Any = msgspec.json.decode(event.data)
            assert event.id, event
            got.append((message["method"], event.id))
    return got


async def read(conn: HttpConn, count: int, into: list[str]) -> None:
    """Read ``count`` prompts list-changed events into ``into`` (their ids)."""
    for method, event_id in await events(conn, count):
        assert method == "notifications/prompts/list_changed", method
        into.append(event_id)


async def test_get_stream_resumes_across_a_reload_with_last_event_id(tmp_path: Path) -> None:
    served = tmp_path / "server.py"
    shutil.copy(SERVED, served)
    err = tmp_path / "dev.stderr"
    with err.open("wb") as err_file:
        dev = await trio.lowlevel.open_process(
            cli("dev", str(served), "--port", "0", "--poll"),
            stdin=subprocess.DEVNULL,
            stderr=err_file,
            cwd=ROOT,
        )
    try:
        with trio.fail_after(60):
            found = re.search(
                r"serving http://127\.0\.0\.1:(\d+)/mcp \(reloads",
                await _wait_for(err, "loaded dev-events"),
            )
            assert found is not None
            address = ("127.0.0.1", int(found[1]))
            opened = await request(address, "POST", body=init_body(VERSION))
            assert opened.status == 200, opened
            session = opened.headers["mcp-session-id"]
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            done = await request(address, "POST", headers=headers(session), body=note)
            assert done.status == 202, done

            # The first version: five events on the GET stream; the client sees two of
            # them (the rest, say, lost with its connection).
            get = await listen(address, session)
            sent: list[str] = []
            assert await tick(address, session, 10, 5) == "ticked 5 on one"
            await read(get, 5, sent)
            await get.aclose()
            seen = sent[:2]

            # The edit: a new version serves (the old one drained and exited).
            size = len(err.read_text())
            served.write_text(served.read_text().replace('VERSION = "one"', 'VERSION = "two"'))
            await _wait_for(err, "reloaded:", after=size)

            # Resumed on the new version after the last event seen: the three missed are
            # replayed, in order, none twice; the new version tells the session that its
            # tool and prompt lists changed (they may have: it is new code); then the new
            # version's live events follow.
            resumed = await listen(address, session, last=seen[-1])
            after = await events(resumed, 5)
            replayed = [i for m, i in after if i in sent]
            assert replayed == sent[2:], (after, sent)
            notices = sorted(m for m, i in after if i not in sent)
            assert notices == [
                "notifications/prompts/list_changed",
                "notifications/tools/list_changed",
            ], after
            assert await tick(address, session, 11, 2) == "ticked 2 on two"
            live: list[str] = []
            with trio.move_on_after(10):
                await read(resumed, 2, live)
            # (Before the fix, none came: the adopted session had no subscriber, the
            # version that saw notifications/initialized having exited.)
            assert len(live) == 2, f"live events on the new version: {live}"
            await resumed.aclose()
            every = seen + [i for _, i in after] + live
            assert len(set(every)) == len(every) == 9, every
    finally:
        with trio.CancelScope(shield=True):
            dev.terminate()
            with trio.move_on_after(15):
                await dev.wait()
            if dev.returncode is None:
                dev.kill()
                await dev.wait()
    assert "Traceback" not in err.read_text()
