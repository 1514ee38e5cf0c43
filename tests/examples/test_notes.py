"""examples/notes.py: list_changed for every session, updates only for subscribers."""

from __future__ import annotations

from collections.abc import Iterator

import notes
import pytest
import trio

from runtime.testing import TestClient, open_client


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    yield
    for name in list(notes.NOTES):
        notes.NOTES.pop(name)
        notes.app.remove_resource(notes.uri_of(name))


def methods(client: TestClient) -> list[tuple[str, str | None]]:
    return [(n["method"], (n.get("params") or {}).get("uri")) for n in client.notifications]


async def test_list_changed_and_subscriptions() -> None:
    with trio.fail_after(10):
        async with open_client(notes.app) as watcher, open_client(notes.app) as other:
            created = await watcher.call_tool("create_note", {"name": "groceries", "text": "eggs"})
            assert created.text == "created note://groceries"
            await watcher.wait_for_notification("notifications/resources/list_changed")
            await other.wait_for_notification("notifications/resources/list_changed")
            listed = [r.uri for r in await other.list_resources()]
            assert listed == ["notes://index", "note://groceries"]

            await watcher.subscribe("note://groceries")
            await other.call_tool("create_note", {"name": "work"})
            await other.call_tool("append_note", {"name": "work", "text": "standup"})
            await other.call_tool("append_note", {"name": "groceries", "text": "milk"})
            update = await watcher.wait_for_notification("notifications/resources/updated")
            assert update["params"] == {"uri": "note://groceries"}
            assert (await watcher.read_resource("note://groceries")).text == "eggs\nmilk"
            await watcher.ping()  # anything queued for the watcher has arrived
            updated = [uri for m, uri in methods(watcher) if m.endswith("/updated")]
            assert updated == ["note://groceries"]  # nothing about "work" or the index
            assert not [m for m, _ in methods(other) if m.endswith("/updated")]

            index = await other.read_resource("notes://index")
            assert index.text == (
                '[{"name":"groceries","uri":"note://groceries","characters":9},'
                '{"name":"work","uri":"note://work","characters":7}]'
            )
            await other.call_tool("delete_note", {"name": "groceries"})
            assert [r.uri for r in await other.list_resources()] == [
                "notes://index",
                "note://work",
            ]


async def test_bad_names_and_duplicates_are_tool_errors() -> None:
    with trio.fail_after(10):
        async with open_client(notes.app) as client:
            bad = await client.call_tool("create_note", {"name": "../etc"})
            await client.call_tool("create_note", {"name": "a"})
            again = await client.call_tool("create_note", {"name": "a"})
            missing = await client.call_tool("append_note", {"name": "b", "text": "x"})
    assert bad.is_error and "lowercase letters" in bad.text
    assert again.is_error and "exists already" in again.text
    assert missing.is_error and "no note named b" in missing.text
