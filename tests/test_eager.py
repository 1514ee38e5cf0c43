"""runtime.eager: a coroutine's first step in the caller's task, the rest on demand."""

from __future__ import annotations

import contextvars

import pytest
import trio

from runtime.eager import Suspended, finish, start

var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="outer")


async def test_a_coroutine_that_never_waits_finishes_in_start() -> None:
    async def quick(x: int) -> int:
        return x * 2

    done, value = start(quick(21))
    assert done and value == 42


async def test_a_suspended_coroutine_finishes_in_the_same_task() -> None:
    seen: list[object] = []

    async def slow() -> str:
        seen.append(trio.lowlevel.current_task())
        await trio.sleep(0.01)
        seen.append(trio.lowlevel.current_task())
        await trio.lowlevel.checkpoint()
        return "late"

    with trio.fail_after(5):
        done, suspended = start(slow())
        assert not done and isinstance(suspended, Suspended)
        assert await finish(suspended) == "late"
    me = trio.lowlevel.current_task()
    assert seen == [me, me]


async def test_exceptions_propagate_from_either_step() -> None:
    async def early() -> None:
        raise ValueError("early")

    async def late() -> None:
        await trio.lowlevel.checkpoint()
        raise KeyError("late")

    with pytest.raises(ValueError, match="early"):
        start(early())
    done, suspended = start(late())
    assert not done and isinstance(suspended, Suspended)
    with trio.fail_after(5), pytest.raises(KeyError, match="late"):
        await finish(suspended)


async def test_cancellation_reaches_a_suspended_coroutine_and_its_finally_runs() -> None:
    cleaned: list[str] = []

    async def waits_forever() -> None:
        try:
            await trio.sleep_forever()
        finally:
            cleaned.append("finally")

    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            done, suspended = start(waits_forever())
            assert not done and isinstance(suspended, Suspended)
            scope.deadline = trio.current_time() + 0.01
            await finish(suspended)
    assert scope.cancelled_caught and cleaned == ["finally"]


async def test_parking_lot_wakeups_reach_the_coroutine() -> None:
    lot = trio.lowlevel.ParkingLot()
    got: list[str] = []

    async def parked() -> str:
        await lot.park()
        return "woken"

    async def wake() -> None:
        await trio.sleep(0.01)
        lot.unpark_all()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wake)
            done, suspended = start(parked())
            assert not done and isinstance(suspended, Suspended)
            got.append(await finish(suspended))
    assert got == ["woken"]


async def test_context_variables_set_by_the_coroutine_stay_its_own() -> None:
    async def sets() -> str:
        var.set("inner")
        await trio.lowlevel.checkpoint()
        return var.get()

    done, suspended = start(sets())
    assert not done and isinstance(suspended, Suspended)
    assert var.get() == "outer"
    with trio.fail_after(5):
        assert await finish(suspended) == "inner"
    assert var.get() == "outer"
    done, value = start(_set_now())
    assert done and value == "now" and var.get() == "outer"


async def _set_now() -> str:
    var.set("now")
    return var.get()


async def test_finish_is_awaited_as_it_is_with_no_coroutine_frame_around_it() -> None:
    """A task waiting in ``finish`` holds its one generator frame (no ``async def`` wrapper:
    about 200 bytes less per waiting request, each idle GET stream among them; issue 22
    item 4), and the coroutine still finishes there."""

    async def slow() -> str:
        await trio.sleep(0.05)
        return "late"

    task: list[trio.lowlevel.Task] = []

    async def waiter() -> None:
        task.append(trio.lowlevel.current_task())
        done, suspended = start(slow())
        assert not done and isinstance(suspended, Suspended)
        assert await finish(suspended) == "late"

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.sleep(0.01)
            awaited = task[0].coro.cr_await
            assert awaited is not None and awaited.gi_code is finish.__code__
