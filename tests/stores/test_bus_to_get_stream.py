"""Messages another replica routes through the bus to a handshake session's GET stream
(MCP 2025-11-25 basic/transports, "Listening for Messages from the Server"; replicas share
a session through ``runtime.stores``): none is lost while the stream is being opened.

Two in-process replicas share one real redis-server. The session lives on B, which runs a
task reporting progress (2025-11-25 basic/utilities/tasks, "Task Progress Notifications":
on the GET stream); the GET stream is held by A. A's first store write for that stream (its
priming event) is held back by the test, so the stream is deterministically still opening
when A is handed B's messages: the window in which a loaded machine lost them (the GET's
head had gone out, the stream was not yet marked attached, and ``HttpSession.on_bus``
dropped what came for a GET stream it thought another replica held).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import trio

from runtime import Context, Server
from runtime.stores import EventStore, MemoryEventStore, RedisStore, StreamState

from ..transports.app import serving, until
from ..transports.http_client import HttpConn, connect, open_raw_session, request
from ..transports.http_client import session_headers as headers


class Held:
    """An event store that holds back, until ``release``, its first priming write for a
    GET stream (``prime``) or its first replay, after reading it (``replay``)."""

    def __init__(self, inner: EventStore, hold: str) -> None:
        self.inner = inner
        self.hold = hold
        self.entered = trio.Event()
        self.release = trio.Event()

    async def _held(self, what: str) -> None:
        if what == self.hold and not self.entered.is_set():
            self.entered.set()
            await self.release.wait()

    async def append(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        if data is None and stream_id.startswith("g"):
            await self._held("prime")
        return await self.inner.append(session_id, stream_id, data)

    async def replay(self, session_id: str, last_event_id: str) -> Any:
        found = await self.inner.replay(session_id, last_event_id)
        await self._held("replay")
        return found

    async def last_number(self, session_id: str, stream_id: str) -> int:
        return await self.inner.last_number(session_id, stream_id)

    async def open_stream(
        self, session_id: str, stream_id: str, requests: bytes, lease: float
    ) -> str:
        return await self.inner.open_stream(session_id, stream_id, requests, lease)

    async def renew(self, streams: list[tuple[str, str]], lease: float) -> None:
        await self.inner.renew(streams, lease)

    async def follow(self, session_id: str, stream_id: str, after: int) -> StreamState | None:
        return await self.inner.follow(session_id, stream_id, after)

    async def forget(self, session_id: str) -> None:
        await self.inner.forget(session_id)


class Overheard:
    """A's bus, recording each session message once A's subscriber has been handed it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.delivered: list[bytes] = []

    async def publish(self, channel: str, data: bytes) -> None:
        await self.inner.publish(channel, data)

    async def subscribe(self, channel: str, deliver: Callable[[bytes], None]) -> Callable[[], None]:
        if not channel.startswith("session:"):
            return await self.inner.subscribe(channel, deliver)  # type: ignore[no-any-return]

        def handed(data: bytes) -> None:
            deliver(data)
            self.delivered.append(data)

        return await self.inner.subscribe(channel, handed)  # type: ignore[no-any-return]


def replica(name: str, redis_url: str) -> tuple[Server, RedisStore]:
    store = RedisStore.from_url(redis_url)
    app = Server(f"replica-{name}", "1.0.0", store=store)

    @app.tool(task="optional")
    async def steps(n: int, ctx: Context) -> str:
        """Progress ``n`` times, the first at once."""
        for k in range(1, n + 1):
            await ctx.report_progress(k, n, f"step {k} on {name}")
            await trio.sleep(0.01)
        return f"{n} steps on {name}"

    return app, store


def seq(event_id: str | None) -> int:
    """The number of an event id ``<stream>_<n>``."""
    assert event_id is not None
    return int(event_id.rpartition("_")[2])


def progress_of(message: bytes) -> str | None:
    """The progress message in a bus message (``out <replica> <event id> <json>``)."""
    kind, _, rest = message.partition(b" ")
    if kind != b"out":
        return None
    found = msgspec.json.decode(rest.split(b" ", 2)[2])
    if found.get("method") != "notifications/progress":
        return None
    return str(found["params"]["message"])


async def run_steps(where: tuple[str, int], session: str, request_id: int, token: str) -> str:
    """Start ``steps`` (n=3) as a task of ``session``, its progress under ``token``; its
    task id."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "steps",
            "arguments": {"n": 3},
            "task": {},
            "_meta": {"progressToken": token},
        },
    }
    created = await request(where, "POST", headers=headers(session), body=body)
    assert created.status == 200, created
    return str(created.json()["result"]["task"]["taskId"])


async def task_status(where: tuple[str, int], session: str, task_id: str) -> str:
    body = {"jsonrpc": "2.0", "id": 99, "method": "tasks/get", "params": {"taskId": task_id}}
    got = await request(where, "POST", headers=headers(session), body=body)
    assert got.status == 200, got
    return str(got.json()["result"]["status"])


async def read_progress(stream: HttpConn, count: int) -> list[tuple[str | None, str]]:
    """``(event id, progress message or "")`` of the stream's events until ``count``
    progress notifications came, or 3 s passed (without them the stream idles)."""
    heard: list[tuple[str | None, str]] = []
    with trio.move_on_after(3):
        while len([m for _, m in heard if m]) < count:
            event = await stream.next_event()
            assert event is not None
            message = msgspec.json.decode(event.data) if event.data else {}
            if message.get("method") == "notifications/progress":
                heard.append((event.id, message["params"]["message"]))
            else:
                heard.append((event.id, ""))
    return heard


async def test_messages_routed_while_the_get_stream_opens_reach_it(redis_url: str) -> None:
    a_app, a_store = replica("a", redis_url)
    held = Held(a_store.events, "prime")
    a_store.bus = overheard = Overheard(a_store.bus)
    b_app, _ = replica("b", redis_url)
    with trio.fail_after(20):
        async with serving(a_app, event_store=held) as a, serving(b_app) as b:
            session = await open_raw_session(b)
            stream = await connect(a)
            await stream.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
            # A adopted the session (subscribed to its messages) and the GET is opening.
            await held.entered.wait()
            await run_steps(b, session, 2, "p1")
            # B routed the three progress notifications to A (the GET stream is not B's),
            # and A's session was handed each of them while its GET stream was opening.
            await until(lambda: len([m for m in overheard.delivered if progress_of(m)]) == 3)
            held.release.set()
            assert (await stream.head()).status == 200
            heard = await read_progress(stream, 3)
            prime = await stream.next_event()
            while prime is not None and prime.data:
                # The task's status notification, when B stored it before A's priming
                # event and A was handed it by the time that event was stored: below it too.
                heard.append((prime.id, ""))
                prime = await stream.next_event()
            await stream.aclose()
    # Each progress notification once, in order, with the event id B stored it under; then
    # the priming event, whose id the store gave after theirs: ids only grow, so a client
    # resuming from any of them, on A or B, misses none.
    assert [m for _, m in heard if m] == ["step 1 on b", "step 2 on b", "step 3 on b"], heard
    assert prime is not None and prime.data == "" and prime.retry is not None, prime
    ids = [i for i, _ in heard] + [prime.id]
    assert all(ids) and [seq(i) for i in ids] == sorted({seq(i) for i in ids}), ids


async def test_messages_routed_while_a_resumed_get_stream_replays_reach_it(
    redis_url: str,
) -> None:
    """``Last-Event-ID`` on A: what B routes after A read the replay, before A's response
    goes on live, reaches it too, and nothing replayed comes twice."""
    a_app, a_store = replica("a", redis_url)
    held = Held(a_store.events, "replay")
    a_store.bus = overheard = Overheard(a_store.bus)
    b_app, _ = replica("b", redis_url)
    with trio.fail_after(20):
        async with serving(a_app, event_store=held) as a, serving(b_app) as b:
            session = await open_raw_session(b)
            # A first task's progress, stored while no GET stream is open anywhere (the
            # client saw its first event, say, and lost the connection).
            first = await run_steps(b, session, 2, "p1")
            while (await task_status(b, session, first)) != "completed":  # noqa: ASYNC110
                await trio.sleep(0.02)  # (polled, as a client does: tasks/get)
            found = await a_store.events.replay(session, "g0_0")
            assert found is not None
            stored = [i for i, data in found[1] if b"notifications/progress" in data]
            assert len(stored) == 3, found
            stream = await connect(a)
            resume = headers(session, accept="text/event-stream", **{"last-event-id": stored[0]})
            await stream.send("GET", "/mcp", headers=resume)
            await held.entered.wait()  # A read the replay: steps 2 and 3 of the first task
            before = len(overheard.delivered)
            await run_steps(b, session, 4, "p2")
            await until(
                lambda: len([m for m in overheard.delivered[before:] if progress_of(m)]) == 3
            )
            held.release.set()
            assert (await stream.head()).status == 200
            heard = await read_progress(stream, 5)
            await stream.aclose()
    assert [m for _, m in heard if m] == [
        "step 2 on b",
        "step 3 on b",
        "step 1 on b",
        "step 2 on b",
        "step 3 on b",
    ], heard


async def test_a_second_get_while_the_first_opens_is_refused() -> None:
    """One GET stream per session (2025-11-25 basic/transports, "Multiple Connections"):
    the first claims it before its first checkpoint, so a second GET that comes while the
    first's priming event is being stored gets 409 rather than also passing the check."""
    app = Server("one", "1.0.0")
    held = Held(MemoryEventStore(), "prime")
    with trio.fail_after(10):
        async with serving(app, event_store=held) as address:
            session = await open_raw_session(address)
            first = await connect(address)
            await first.send("GET", "/mcp", headers=headers(session, accept="text/event-stream"))
            await held.entered.wait()
            second = await request(
                address, "GET", headers=headers(session, accept="text/event-stream")
            )
            assert second.status == 409, second
            held.release.set()
            assert (await first.head()).status == 200
            event = await first.next_event()
            assert event is not None and event.id and not event.data  # its priming event
            await first.aclose()
