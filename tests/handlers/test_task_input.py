"""A task's input: answers leave the pending list at once (C6), several waiters do not wake
each other (C7)."""

from __future__ import annotations

import trio
import trio.testing

from runtime._tasks import TaskRecord

FORM = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
ELICIT = {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": FORM}}
ACCEPT = {"action": "accept", "content": {"a": "x"}}


async def _wait_for(record: TaskRecord, count: int) -> None:
    await trio.testing.wait_all_tasks_blocked()
    assert len(record.input_requests) == count


async def test_answered_input_leaves_the_pending_list_before_the_ack() -> None:
    # C6: tasks/update acknowledges after provide(); a tasks/get right after the ack must
    # not list the answered key, and with nothing left the task is working again.
    record = TaskRecord(None, 60_000, 100)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(record.input, "k", ELICIT)
            await _wait_for(record, 1)
            assert record.status == "input_required"
            record.provide({"k": ACCEPT})
            # No checkpoint in between: what tasks/get would see right after the ack.
            assert record.input_requests == {}
            assert record.status == "working"


async def test_partial_answer_keeps_only_the_unanswered_key() -> None:
    record = TaskRecord(None, 60_000, 100)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(record.inputs, {"one": ELICIT, "two": ELICIT})
            await _wait_for(record, 2)
            record.provide({"one": ACCEPT})
            assert list(record.input_requests) == ["two"]
            assert record.status == "input_required"
            record.provide({"two": ACCEPT})
            assert record.status == "working"


async def test_two_waiters_do_not_wake_each_other() -> None:
    # C7: two concurrent waiters used to re-announce input_required to each other in a
    # loop (a core at 100%, a listen stream flooded with notifications/tasks).
    record = TaskRecord(None, 60_000, 100)
    changes: list[str] = []
    record.listeners.append(lambda task: changes.append(task.status))
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(record.input, "one", ELICIT)
            nursery.start_soon(record.input, "two", ELICIT)
            await trio.sleep(0.3)
            assert len(changes) <= 2, f"{len(changes)} status changes while idle"
            record.provide({"one": ACCEPT, "two": ACCEPT})
    assert record.status == "working"
