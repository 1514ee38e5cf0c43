"""``Server.mount``: namespacing, forwarding of list changes and resource updates, nested
lifespans, dynamic mount/unmount; the official SDK client as the peer over stdio."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from runtime import Server

from ..peers import run_sdk_client
from ..wire import RawPeer, open_memory_peer


async def test_sdk_client_sees_the_mounted_server_namespaced() -> None:
    seen = await run_sdk_client("composition/sdk_mount_client.py", timeout=60)
    assert seen["tools"] == ["own", "kid_search", "kid_whose_state"]
    assert seen["prompts"] == ["kid_greet"]
    assert seen["resources"] == ["notes://kid/welcome"]
    assert seen["templates"] == ["notes://kid/{name}"]
    assert seen["search"]["content"][0]["text"] == "child found x"
    assert seen["state"]["content"][0]["text"] == "{'db': 'child-db'}"  # nested lifespan
    assert seen["own"]["content"][0]["text"] == "parent tool"
    assert seen["welcome"]["contents"][0]["text"] == "welcome from the child"
    assert seen["note"]["contents"][0]["text"] == "note abc"
    assert seen["greet"]["messages"][0]["content"]["text"] == "hello ann"
    assert seen["unprefixed"] == "Unknown tool: search"  # only the namespaced name exists


def _names(reply: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in reply["result"]["tools"]]


class Client:
    """Requests over a raw peer, keeping the notifications that arrive meanwhile."""

    def __init__(self, peer: RawPeer) -> None:
        self.peer = peer
        self.notes: list[dict[str, Any]] = []
        self.next_id = 100

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.peer.send(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )
        while True:
            message = await self.peer.receive()
            if message.get("id") == self.next_id:
                return message
            self.notes.append(message)

    async def notification(self, method: str) -> dict[str, Any]:
        while True:
            for i, note in enumerate(self.notes):
                if note.get("method") == method:
                    return self.notes.pop(i)
            self.notes.append(await self.peer.receive())


async def test_dynamic_mount_unmount_and_forwarded_changes() -> None:
    parent = Server("parent")
    child = Server("child")

    # Features of each kind from the start: a session is only told about changes to the
    # kinds whose capability it saw at initialize (2025-11-25 server/tools "Capabilities").
    @parent.tool
    def base() -> str:
        """The parent's own."""
        return "base"

    @parent.resource("data://base")
    def base_data() -> str:
        """The parent's own."""
        return "base"

    @child.tool
    def ping_child() -> str:
        """Ping."""
        return "pong"

    @child.resource("data://level")
    def level() -> str:
        """A level."""
        return "3"

    with trio.fail_after(20):
        async with open_memory_peer(parent) as raw:
            await raw.initialize()
            peer = Client(raw)
            assert _names(await peer.call("tools/list", {})) == ["base"]
            parent.mount(child, prefix="c")  # while serving
            await peer.notification("notifications/tools/list_changed")
            assert _names(await peer.call("tools/list", {})) == ["base", "c_ping_child"]

            @child.tool
            def later() -> str:
                """Added to the child after mounting."""
                return "later"

            await peer.notification("notifications/tools/list_changed")
            assert _names(await peer.call("tools/list", {})) == ["base", "c_ping_child", "c_later"]
            reply = await peer.call("tools/call", {"name": "c_later", "arguments": {}})
            assert reply["result"]["content"][0]["text"] == "later"

            # subscriptions: the child's update reaches the subscriber of the parent's URI
            await peer.call("resources/subscribe", {"uri": "data://c/level"})
            child.notify_resource_updated("data://level")
            updated = await peer.notification("notifications/resources/updated")
            assert updated["params"] == {"uri": "data://c/level"}

            child.remove_tool("ping_child")
            await peer.notification("notifications/tools/list_changed")
            assert _names(await peer.call("tools/list", {})) == ["base", "c_later"]

            assert parent.unmount("c") is child
            await peer.notification("notifications/tools/list_changed")
            assert _names(await peer.call("tools/list", {})) == ["base"]
            gone = await peer.call("resources/read", {"uri": "data://c/level"})
            assert gone["error"]["code"] == -32002

            @child.tool
            def after_unmount() -> str:
                """Not forwarded any more."""
                return "x"

            assert _names(await peer.call("tools/list", {})) == ["base"]


def test_mount_refuses_collisions_and_bad_prefixes() -> None:
    parent = Server("parent")
    child = Server("child")

    @parent.tool
    def c_x() -> str:
        """Taken."""
        return ""

    @child.tool
    def x() -> str:
        """Collides as c_x."""
        return ""

    with pytest.raises(ValueError, match="already registered"):
        parent.mount(child, prefix="c")
    assert list(parent.registry.tools) == ["c_x"]  # nothing half-mounted
    assert child.registry.changes.relays == []
    with pytest.raises(ValueError, match="invalid mount prefix"):
        parent.mount(child, prefix="a b")
    parent.mount(child, prefix="d")
    with pytest.raises(ValueError, match="already mounted"):
        parent.mount(child, prefix="d")
