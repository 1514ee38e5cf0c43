"""Eager start: run a coroutine in the current task until it first suspends.

A primitive with no dependency on the rest of the runtime: the request engine
(``runtime.core``) and the HTTP driver (``runtime.transports.http``) both use it.

Most requests (a tool that computes and returns, a static resource) finish without ever
waiting. For those, a task and a cancel scope of their own are pure overhead: trio's task
spawn and a CancelScope enter/exit cost more than the request itself. ``start`` runs the
coroutine's first step right here; if it returns, that is the whole request. If it
suspends, it suspended *as the current task* (trio traps, cancel scopes and parking lots it
touched all refer to this task), so it can only go on in this task: the caller hands its
other duties (reading, the rest of a batch) to a new task and then ``await finish(...)``.

Each coroutine runs every step inside its own copy of the caller's context, so the
context variables it sets stay its own, as they would in a task of its own.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

__all__ = ["Suspended", "finish", "start"]

T = TypeVar("T")


class Suspended(Generic[T]):
    """A coroutine that yielded ``trap`` to trio from the current task's first step."""

    __slots__ = ("context", "coro", "trap")

    def __init__(
        self, coro: Coroutine[Any, Any, T], trap: object, context: contextvars.Context
    ) -> None:
        self.coro = coro
        self.trap = trap
        self.context = context


def start(coro: Coroutine[Any, Any, T]) -> tuple[bool, T | Suspended[T]]:
    """Run ``coro`` until it returns or first suspends.

    Returns ``(True, value)`` when it returned, ``(False, Suspended)`` when it yielded to
    trio (continue it in this same task with :func:`finish`). Its exceptions propagate.
    """
    context = contextvars.copy_context()
    try:
        trap = context.run(coro.send, None)
    except StopIteration as stop:
        return True, stop.value
    return False, Suspended(coro, trap, context)


@types.coroutine
def finish(suspended: Suspended[T]) -> Generator[Any, Any, T]:
    """Run a suspended coroutine to its end; must be awaited in the task that started it.
    (A generator-based coroutine awaited as it is: no ``async def`` frame around it, so less
    memory per request waiting in it, e.g. each idle GET stream; benchmarks/README.md,
    "Memory per idle session".)"""
    coro = suspended.coro
    run = suspended.context.run
    trap = suspended.trap
    suspended.trap = None
    while True:
        try:
            value = yield trap
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # trio throws into the task (e.g. KeyboardInterrupt)
            try:
                trap = run(coro.throw, exc)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
        else:
            try:
                trap = run(coro.send, value)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
