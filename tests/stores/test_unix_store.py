"""The store ``mcp-runtime dev`` holds for its children (runtime/stores/_unix.py): two
clients on a real Unix socket see one MemoryStore; bad frames get error replies and the
holder lives on; a gone holder is StoreUnavailable, not a hang."""

from __future__ import annotations

import struct
from pathlib import Path

import msgspec
import pytest
import trio

from runtime.stores import (
    MemoryStore,
    SessionRecord,
    StoreUnavailable,
    StreamState,
    TaskSnapshot,
    UnixStore,
    open_store,
    serve_store,
)


async def test_two_processes_share_sessions_events_tasks_secrets_and_the_bus(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "s.sock")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_store, MemoryStore(), path)
            one, two = open_store(f"unix://{path}"), UnixStore(path)
            assert isinstance(one, UnixStore) and one.shared
            async with one.running(), two.running():
                assert one.ready and two.ready
                record = SessionRecord("2025-11-25", {"roots": {}}, {"name": "c"}, "info")
                await one.sessions.save("s1", record, 60.0)
                assert await two.sessions.load("s1") == record
                await two.sessions.touch("s1", 60.0)
                await one.sessions.delete("s1")
                assert await two.sessions.load("s1") is None

                first = await one.events.append("s1", "st", None)  # priming: not replayed
                second = await two.events.append("s1", "st", b"data: x")
                assert (first, second) == ("st_1", "st_2")  # one counter for both
                assert await one.events.replay("s1", first) == ("st", [("st_2", b"data: x")])
                assert await one.events.replay("s1", "nope_1") is None
                assert await one.events.last_number("s1", "st") == 2
                # A POST stream one process produces, followed by the other.
                opened = await one.events.open_stream("s1", "p1", b"[3]", 60.0)
                await one.events.append("s1", "p1", b'{"n":1}')
                await one.events.renew([("s1", "p1")], 60.0)
                assert await two.events.follow("s1", "p1", 1) == StreamState(
                    requests=b"[3]", held=True, events=[("p1_2", b'{"n":1}')]
                )
                assert opened == "p1_1" and await two.events.follow("s1", "p9", 0) is None
                await two.events.forget("s1")
                assert await one.events.replay("s1", first) is None

                snap = TaskSnapshot({"taskId": "t1"}, "alice", one.replica, 1e12)
                await one.tasks.put("t1", snap, 60.0)
                await one.tasks.put_many([("t2", snap, 60.0)])
                assert await two.tasks.get("t1") == snap
                assert sorted(t for t, _ in await two.tasks.owned("alice")) == ["t1", "t2"]

                secret = await one.shared_secret("k")
                assert len(secret) == 32 and await two.shared_secret("k") == secret

                got: list[bytes] = []
                arrived = trio.Event()

                def deliver(data: bytes) -> None:
                    got.append(data)
                    arrived.set()

                unsubscribe = await two.bus.subscribe("ch", deliver)
                await one.bus.publish("ch", b"hello")
                await arrived.wait()
                assert got == [b"hello"]
                unsubscribe()
                await trio.sleep(0.05)  # the unsubscribe is sent soon, not awaited
                await one.bus.publish("ch", b"again")
                await one.sessions.load("x")  # a round trip after the publish
                assert got == [b"hello"]
            nursery.cancel_scope.cancel()


async def test_bad_frames_get_error_replies_and_the_holder_lives_on(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_store, MemoryStore(), path)
            raw = await trio.open_unix_socket(path)
            for body in (
                msgspec.msgpack.encode([7, "sessions.save", ["s", "not a record", 1.0]]),
                msgspec.msgpack.encode([8, "os.system", ["true"]]),
                b"\xc1",  # not msgpack
            ):
                await raw.send_all(struct.pack(">I", len(body)) + body)
                head = await raw.receive_some(4)
                (length,) = struct.unpack(">I", head)
                reply = msgspec.msgpack.decode(await raw.receive_some(length))
                assert reply[1] is False and isinstance(reply[2], str)
            await raw.aclose()
            store = UnixStore(path)
            async with store.running():
                assert await store.sessions.load("s") is None  # still serving
            nursery.cancel_scope.cancel()


async def test_a_gone_holder_is_store_unavailable(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    with trio.fail_after(10):
        with pytest.raises(StoreUnavailable):
            async with UnixStore(path).running():
                pass
        async with trio.open_nursery() as nursery:
            holder = trio.CancelScope()

            async def hold(task_status: trio.TaskStatus[None]) -> None:
                with holder:
                    await serve_store(MemoryStore(), path, task_status=task_status)

            await nursery.start(hold)
            store = UnixStore(path, timeout=2.0)
            async with store.running():
                await store.sessions.load("s")
                holder.cancel()
                await trio.sleep(0.1)
                with pytest.raises(StoreUnavailable):
                    await store.sessions.load("s")
    with pytest.raises(ValueError, match="absolute"):
        UnixStore.from_url("unix://relative.sock")
