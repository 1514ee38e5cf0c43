"""Change notifications: resources/subscribe (handshake era), list_changed on dynamic
registration, subscriptions/listen (2026-07-28), slow subscribers, the lifespan hook."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
import trio.lowlevel
import trio.testing

from runtime import Context, JSONRPCError, Limits, Server
from runtime._handlers import subscriptions
from runtime.core import Session
from runtime.features import Broadcast
from runtime.testing import TestClient, open_client
from runtime.transports import FramedChannel, make_framer

from ..wire import RawPeer

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
SUB_ID = "io.modelcontextprotocol/subscriptionId"
UPDATED = "notifications/resources/updated"


def make_app(**options: Any) -> Server:
    app = Server("subs", "1.0.0", **options)

    @app.tool
    async def touch(uri: str) -> str:
        app.notify_resource_updated(uri)
        return "ok"

    @app.tool
    def touch_sync(uri: str) -> str:  # runs in a worker thread
        app.notify_resource_updated(uri)
        return "ok"

    @app.resource("mem://a")
    def a() -> str:
        return "a"

    @app.resource("mem://b")
    def b() -> str:
        return "b"

    @app.resource("mem://t/{key}")
    def t(key: str) -> str:
        return key

    return app


def updates(client: TestClient) -> list[str]:
    return [n["params"]["uri"] for n in client.notifications if n["method"] == UPDATED]


def methods(client: TestClient) -> list[str]:
    return [n["method"] for n in client.notifications]


async def settle() -> None:
    await trio.testing.wait_all_tasks_blocked()


# -- handshake era --------------------------------------------------------------------------


async def test_subscribe_delivers_only_the_subscribed_uri_to_that_session() -> None:
    app = make_app()
    with trio.fail_after(5):
        async with open_client(app) as one, open_client(app) as two:
            assert await one.request("resources/subscribe", {"uri": "mem://a"}) == {}
            app.notify_resource_updated("mem://b")
            app.notify_resource_updated("mem://a")
            note = await one.wait_for_notification(UPDATED)
            assert note["params"] == {"uri": "mem://a"}
            await settle()
            assert updates(one) == ["mem://a"]
            assert updates(two) == []


async def test_unsubscribe_stops_updates_and_is_idempotent() -> None:
    app = make_app()
    with trio.fail_after(5):
        async with open_client(app) as client:
            await client.request("resources/subscribe", {"uri": "mem://t/x"})  # via template
            await client.call_tool("touch", {"uri": "mem://t/x"})
            await client.wait_for_notification(UPDATED)
            assert await client.request("resources/unsubscribe", {"uri": "mem://t/x"}) == {}
            assert await client.request("resources/unsubscribe", {"uri": "mem://t/x"}) == {}
            await client.call_tool("touch", {"uri": "mem://t/x"})
            await settle()
            assert updates(client) == ["mem://t/x"]


async def test_notify_from_a_sync_tool_thread() -> None:
    app = make_app()
    with trio.fail_after(5):
        async with open_client(app) as client:
            await client.request("resources/subscribe", {"uri": "mem://b"})
            await client.call_tool("touch_sync", {"uri": "mem://b"})
            assert (await client.wait_for_notification(UPDATED))["params"]["uri"] == "mem://b"


async def test_subscribe_validates_the_uri_and_bounds_the_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(subscriptions, "MAX_RESOURCE_SUBSCRIPTIONS", 2)
    with trio.fail_after(5):
        async with open_client(make_app()) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.request("resources/subscribe", {"uri": "mem://nope"})
            assert (info.value.code, info.value.data) == (-32002, {"uri": "mem://nope"})
            await client.request("resources/subscribe", {"uri": "mem://a"})
            await client.request("resources/subscribe", {"uri": "mem://a"})  # same: no count
            await client.request("resources/subscribe", {"uri": "mem://b"})
            with pytest.raises(JSONRPCError) as info:
                await client.request("resources/subscribe", {"uri": "mem://t/1"})
            assert info.value.code == -32602
            assert info.value.data == {"maxSubscriptions": 2}


async def test_dynamic_registration_sends_list_changed_and_lists_follow() -> None:
    app = make_app()

    async def extra(x: int) -> int:
        return x

    with trio.fail_after(5):
        async with open_client(app) as client:
            await client.ping()  # notifications/initialized has been handled
            app.add_tool(extra, name="extra", description="An extra tool.")
            await client.wait_for_notification("notifications/tools/list_changed")
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            assert tools["extra"]["description"] == "An extra tool."
            assert (await client.call_tool("extra", {"x": 2}))["content"][0]["text"] == "2"

            client.notifications.clear()
            app.remove_tool("extra")
            await client.wait_for_notification("notifications/tools/list_changed")
            assert "extra" not in {tool["name"] for tool in await client.list_tools()}

            app.add_resource(lambda: "c", "mem://c", name="c")
            await client.wait_for_notification("notifications/resources/list_changed")
            assert "mem://c" in {r["uri"] for r in await client.list_resources()}
            app.remove_resource("mem://t/{key}")
            assert await client.list_resource_templates() == []
            with pytest.raises(KeyError):
                app.remove_prompt("never")

            # The decorator works at run time too; prompts were not advertised at
            # initialize, so this session is not told (capabilities are the contract).
            client.notifications.clear()

            @app.tool
            async def late() -> str:
                return "late"

            await client.wait_for_notification("notifications/tools/list_changed")
            app.add_prompt(lambda: "hi", name="hi")
            await settle()
            assert "notifications/prompts/list_changed" not in methods(client)


async def test_no_list_changed_before_initialized() -> None:
    app = make_app()
    with trio.fail_after(5):
        async with open_client(app, initialize=False) as client:
            await client.request(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}},
            )
            app.remove_tool("touch")
            await settle()
            assert client.notifications == []


# -- modern era: subscriptions/listen ---------------------------------------------------------


class Pipe:
    """A MessageChannel that records each outgoing message with its ``related`` id."""

    def __init__(self) -> None:
        self.inbound, self._inbound_recv = trio.open_memory_channel[bytes](64)
        self._out, self.outbound = trio.open_memory_channel[tuple[Any, Any]](4096)

    async def receive(self) -> bytes:
        return await self._inbound_recv.receive()

    async def send(self, messages: Sequence[tuple[bytes, Any]]) -> None:
        for data, related in messages:
            await self._out.send((msgspec.json.decode(data), related))

    async def aclose(self) -> None:
        self._out.close()

    async def send_message(self, message: dict[str, Any]) -> None:
        await self.inbound.send(msgspec.json.encode({"jsonrpc": "2.0", **message}))

    async def next(self) -> tuple[dict[str, Any], Any]:
        with trio.fail_after(5):
            return await self.outbound.receive()


@asynccontextmanager
async def open_pipe(app: Server) -> AsyncIterator[Pipe]:
    pipe = Pipe()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: app.serve_connection(pipe, session=Session("memory")))
        yield pipe
        pipe.inbound.close()


def listen(request_id: Any, **notifications: Any) -> dict[str, Any]:
    return {
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {"_meta": MODERN_META, "notifications": notifications},
    }


async def test_listen_acknowledges_then_delivers_only_requested_kinds_tagged() -> None:
    app = make_app()
    with trio.fail_after(5):
        async with open_pipe(app) as pipe:
            await pipe.send_message(
                listen(
                    7,
                    toolsListChanged=True,
                    promptsListChanged=True,  # no prompts: not honored
                    resourceSubscriptions=["mem://a", "mem://nope", "mem://t/1"],
                )
            )
            ack, related = await pipe.next()
            assert ack == {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {
                    "_meta": {SUB_ID: 7},
                    "notifications": {
                        "toolsListChanged": True,
                        "resourceSubscriptions": ["mem://a", "mem://t/1"],
                    },
                },
            }
            assert related == 7
            app.notify_resource_updated("mem://b")  # not requested
            app.notify_list_changed("resources")  # not requested
            app.remove_tool("touch_sync")
            app.notify_resource_updated("mem://a")
            app.notify_resource_updated("mem://t/1")
            got = [await pipe.next() for _ in range(3)]
            assert got == [
                (
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/tools/list_changed",
                        "params": {"_meta": {SUB_ID: 7}},
                    },
                    7,
                ),
                (
                    {
                        "jsonrpc": "2.0",
                        "method": UPDATED,
                        "params": {"_meta": {SUB_ID: 7}, "uri": "mem://a"},
                    },
                    7,
                ),
                (
                    {
                        "jsonrpc": "2.0",
                        "method": UPDATED,
                        "params": {"_meta": {SUB_ID: 7}, "uri": "mem://t/1"},
                    },
                    7,
                ),
            ]
            await settle()
            assert pipe.outbound.statistics().current_buffer_used == 0

            # Cancellation ends the stream with no response; later requests are answered.
            await pipe.send_message(
                {"method": "notifications/cancelled", "params": {"requestId": 7}}
            )
            await settle()
            assert len(app.registry.changes) == 0
            await pipe.send_message(
                {"id": 8, "method": "tools/list", "params": {"_meta": MODERN_META}}
            )
            reply, _ = await pipe.next()
            assert reply["id"] == 8 and "result" in reply


async def test_two_listens_on_one_connection_are_demultiplexed() -> None:
    app = make_app()
    with trio.fail_after(5):
        async with open_pipe(app) as pipe:
            await pipe.send_message(listen("t", toolsListChanged=True))
            await pipe.send_message(listen("r", resourceSubscriptions=["mem://a"]))
            acks = {(await pipe.next())[1] for _ in range(2)}
            assert acks == {"t", "r"}
            app.notify_resource_updated("mem://a")
            note, related = await pipe.next()
            assert (note["method"], note["params"]["_meta"][SUB_ID], related) == (UPDATED, "r", "r")


async def test_listen_is_modern_only_and_subscribe_is_handshake_only() -> None:
    with trio.fail_after(5):
        async with open_client(make_app()) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.request("subscriptions/listen", {"notifications": {}})
            assert info.value.code == -32601
        async with open_client(make_app(), protocol_version="2026-07-28") as modern:
            with pytest.raises(JSONRPCError) as info:
                await modern.request("resources/subscribe", {"uri": "mem://a"})
            assert info.value.code == -32601
            with pytest.raises(JSONRPCError) as info:
                await modern.request("subscriptions/listen", {})
            assert info.value.code == -32602


async def test_graceful_shutdown_completes_the_listen_over_tcp() -> None:
    app = make_app()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(app.serve_tcp, 0)
            stream = await trio.open_tcp_stream(host, port)
            peer = RawPeer(stream, stream, "ndjson")
            await peer.send({"jsonrpc": "2.0", **listen("L", toolsListChanged=True)})
            ack = await peer.receive()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            app.shutdown()
            final = await peer.receive()
            assert final["id"] == "L"
            assert final["result"]["_meta"][SUB_ID] == "L"
            assert final["result"]["resultType"] == "complete"
            await stream.aclose()
        assert len(app.registry.changes) == 0


async def test_listen_ends_gracefully_before_the_request_timeout() -> None:
    app = make_app(limits=Limits(request_timeout=0.5))
    with trio.fail_after(5):
        async with open_pipe(app) as pipe:
            await pipe.send_message(listen(1, toolsListChanged=True))
            assert (await pipe.next())[0]["method"] == "notifications/subscriptions/acknowledged"
            final, related = await pipe.next()
            assert final["result"]["_meta"][SUB_ID] == 1 and related == 1


# -- bounded fan-out ------------------------------------------------------------------------


async def test_broadcast_coalesces_for_a_subscriber_that_does_not_read() -> None:
    hub = Broadcast()
    with hub.subscribe(["tools"]) as slow, hub.subscribe(["tools"]) as fast:
        slow.watch("u")
        fast.watch("u")
        for _ in range(10_000):
            hub.resource_updated("u")
            hub.list_changed("tools")
            hub.list_changed("prompts")  # nobody asked
        assert slow.pending == 2  # bounded by its interest, not by the number of events
        assert await fast.receive() == [("updated", "u"), ("list", "tools")]
        hub.end_all()
        assert await slow.receive() == [("updated", "u"), ("list", "tools")]
        with pytest.raises(trio.EndOfChannel):
            await slow.receive()
    assert len(hub) == 0


async def test_a_stalled_session_neither_blocks_others_nor_lingers() -> None:
    app = make_app(limits=Limits(write_queue_size=1, write_timeout=0.3))
    client_end, server_end = trio.testing.lockstep_stream_pair()  # no buffering at all
    channel = FramedChannel(server_end, server_end, make_framer("ndjson", 1 << 20))
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: app.serve_connection(channel, session=Session("slow")))
            slow = RawPeer(client_end, client_end, "ndjson")
            await slow.initialize()
            await slow.call("resources/subscribe", {"uri": "mem://a"})
            # From here on the slow peer never reads again.
            async with open_client(app) as fast:
                await fast.request("resources/subscribe", {"uri": "mem://a"})
                assert len(app.registry.changes) == 2
                for _ in range(200):
                    app.notify_resource_updated("mem://a")
                    app.notify_list_changed("tools")
                    await trio.lowlevel.checkpoint()
                await fast.wait_for_notification(UPDATED)
                # The stalled connection hits its write timeout, and its subscriber goes.
                for _ in range(60):
                    if len(app.registry.changes) == 1:
                        break
                    await trio.sleep(0.05)
                assert len(app.registry.changes) == 1
                fast.notifications.clear()
                app.notify_resource_updated("mem://a")
                await fast.wait_for_notification(UPDATED)
            await client_end.send_stream.aclose()


# -- lifespan ---------------------------------------------------------------------------------


async def test_lifespan_state_reaches_handlers_and_is_entered_once() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[dict[str, str]]:
        events.append("enter")
        try:
            yield {"db": "connected"}
        finally:
            events.append("exit")

    app = make_app(lifespan=lifespan)

    @app.tool
    async def db(ctx: Context) -> str:
        return str(ctx.lifespan_state["db"])

    with trio.fail_after(5):
        async with open_client(app) as client:
            assert app.state == {"db": "connected"}
            assert (await client.call_tool("db"))["content"][0]["text"] == "connected"
        assert events == ["enter", "exit"] and app.state is None

        # serve_tcp and the connections inside it share one lifespan.
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(app.serve_tcp, 0)
            streams = [await trio.open_tcp_stream(host, port) for _ in range(2)]
            for stream in streams:
                peer = RawPeer(stream, stream, "ndjson")
                await peer.initialize()
            app.shutdown()
            for stream in streams:
                await stream.aclose()
        assert events == ["enter", "exit", "enter", "exit"]


async def test_concurrent_serves_share_the_lifespan_until_the_last_ends() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[None]:
        events.append("enter")
        try:
            yield
        finally:
            events.append("exit")

    app = make_app(lifespan=lifespan)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            first = trio.CancelScope()

            async def serve_first(task_status: trio.TaskStatus[None]) -> None:
                with first:
                    await app.serve_tcp(0, task_status=task_status)

            await nursery.start(serve_first)
            second_scope = trio.CancelScope()

            async def serve_second(task_status: trio.TaskStatus[None]) -> None:
                with second_scope:
                    await app.serve_tcp(0, task_status=task_status)

            await nursery.start(serve_second)
            assert events == ["enter"]
            first.cancel()
            await settle()
            assert events == ["enter"]  # the second still serves
            second_scope.cancel()
        assert events == ["enter", "exit"]


# -- the example ------------------------------------------------------------------------------


async def test_subscriptions_example() -> None:
    from examples.subscriptions import app

    with trio.fail_after(5):
        async with open_client(app) as client:
            await client.request("resources/subscribe", {"uri": "notes://todo"})
            await client.call_tool("write_note", {"name": "todo", "text": "ship it"})
            assert (await client.wait_for_notification(UPDATED))["params"]["uri"] == "notes://todo"
            read = await client.read_resource("notes://todo")
            assert read["contents"][0]["text"] == "ship it"
            assert "ticks" in (await client.read_resource("clock://now"))["contents"][0]["text"]
            await client.call_tool("admin_mode", {"enabled": True})
            await client.wait_for_notification("notifications/tools/list_changed")
            assert "clear_notes" in {tool["name"] for tool in await client.list_tools()}
            await client.call_tool("admin_mode", {"enabled": False})
        assert app.state is None
