"""The task table behind both task protocols: the 2026-07-28 extension
``io.modelcontextprotocol/tasks`` (SEP-2663: tasks/get, tasks/update, tasks/cancel) and the
2025-11-25 experimental tasks (basic/utilities/tasks: tasks/get, tasks/result, tasks/list,
tasks/cancel).

Each task runs in a server-owned nursery (not the request's), so it outlives the request
and the connection that created it, and ends with the serve call that owns the nursery.
Task ids come from a CSPRNG (they are the only handle a client holds: unguessable), every
task has a TTL after which it is purged, and the table is bounded: creating a task in a
full table is the overload error, never unbounded growth.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol, TypeVar

import trio

from ..protocol import JSONRPCError, internal_error, overloaded, unknown_task
from ._input import check_response

__all__ = ["TERMINAL", "TaskHandle", "TaskMirror", "TaskRecord", "TaskTable", "legacy_wire"]

log = logging.getLogger("mcp_runtime.tasks")

T = TypeVar("T")
Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


class TaskRecord:
    """One task. Mutated only from the trio run that owns the table."""

    def __init__(self, owner: object, ttl_ms: int | None, poll_interval_ms: int) -> None:
        self.task_id = secrets.token_urlsafe(24)
        self.owner = owner
        self.status: Status = "working"
        self.status_message: str | None = None
        self.created_at = self.updated_at = time.time()
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        #: Outstanding input requests (key -> request object) while input_required.
        self.input_requests: dict[str, Any] = {}
        #: Answers that arrived through tasks/update.
        self.responses: dict[str, Any] = {}
        self.scope = trio.CancelScope()
        self.done = trio.Event()
        self._changed = trio.Event()
        #: Set (and replaced) whenever tasks/update delivers answers.
        self._answered = trio.Event()
        self.listeners: list[Callable[[TaskRecord], None]] = []
        #: Server-to-client requests of a handshake-era task waiting for their answer.
        self._asking = 0

    @property
    def expired(self) -> bool:
        return self.ttl_ms is not None and time.time() > self.created_at + self.ttl_ms / 1000

    def set_status(self, status: Status, message: str | None = None) -> None:
        if self.status in TERMINAL:
            return  # terminal states never change (both task specifications)
        self.status = status
        self.status_message = message
        self.updated_at = time.time()
        self._changed.set()
        self._changed = trio.Event()
        if status in TERMINAL:
            self.input_requests = {}
            self.done.set()
        for listener in list(self.listeners):
            listener(self)

    async def wait_changed(self) -> None:
        await self._changed.wait()

    async def input(self, key: str, request: dict[str, Any]) -> Any:
        """Wait for the client's answer to ``request`` (delivered by tasks/update)."""
        return (await self.inputs({key: request}))[key]

    async def inputs(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Wait until every request in ``requests`` is answered (by tasks/update) and return
        the answers by key. Several waiters may wait at once (a handler asking in parallel):
        they wake only when answers arrive, never on each other's status updates."""
        pending = {key: value for key, value in requests.items() if key not in self.responses}
        if pending:
            self.input_requests.update(pending)
            if self.status != "input_required":
                self.set_status("input_required", "waiting for input")
            elif self.status not in TERMINAL:
                # More requests on a task already waiting: the status stays, the task
                # changed (listeners see the new inputRequests); waiters are not woken.
                self.updated_at = time.time()
                for listener in list(self.listeners):
                    listener(self)
            while any(key not in self.responses for key in requests):
                await self._answered.wait()
        return {key: self.responses[key] for key in requests}

    async def asking(self, ask: Callable[[], Awaitable[T]]) -> T:
        """Run ``ask`` (a handshake-era server-to-client request the task depends on) with
        the task in ``input_required`` until it is answered (MCP 2025-11-25 basic/utilities/
        tasks, "Input Required Status": the receiver SHOULD move the task to
        ``input_required`` while it needs the requestor's input, and back to ``working``)."""
        self._asking += 1
        if self.status == "working":
            self.set_status("input_required", "waiting for input")
        try:
            return await ask()
        finally:
            self._asking -= 1
            if self._asking == 0 and self.status == "input_required":
                self.set_status("working")

    async def finished(self) -> dict[str, Any]:
        """Wait for a terminal status; the final ``DetailedTask`` (result or error inline)."""
        await self.done.wait()
        return self.wire(legacy=False)

    async def update(self, responses: dict[str, Any]) -> None:
        """``tasks/update`` (the :class:`TaskHandle` interface): :meth:`provide`."""
        self.provide(responses)

    async def request_cancel(self, message: str) -> None:
        """``tasks/cancel`` (the :class:`TaskHandle` interface): cancel it now."""
        self.scope.cancel()
        self.set_status("cancelled", message)

    def provide(self, responses: dict[str, Any]) -> None:
        """Accept answers; keys that are not outstanding are ignored (SEP-2663), an answer
        that is not a result of the method asked is -32602 and none of them is accepted.

        Answered keys leave ``input_requests`` here, before tasks/update is acknowledged,
        so a tasks/get right after the ack never lists them (SEP-2663 partial fulfilment);
        when none is left the task is ``working`` again at once.
        """
        accepted = {
            key: check_response(key, self.input_requests[key].get("method", ""), value)
            for key, value in responses.items()
            if key in self.input_requests
        }
        if not accepted:
            return
        self.responses.update(accepted)
        for key in accepted:
            del self.input_requests[key]
        if not self.input_requests and self.status == "input_required":
            self.set_status("working")
        else:
            self.updated_at = time.time()
        self._answered.set()
        self._answered = trio.Event()

    def wire(self, *, legacy: bool) -> dict[str, Any]:
        """The task object: SEP-2663 ``DetailedTask``, or the 2025-11-25 ``Task``."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _iso(self.created_at),
            "lastUpdatedAt": _iso(self.updated_at),
        }
        if legacy:
            task["ttl"] = self.ttl_ms
            task["pollInterval"] = self.poll_interval_ms
        else:
            task["ttlMs"] = self.ttl_ms
            task["pollIntervalMs"] = self.poll_interval_ms
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if not legacy:
            if self.status == "input_required":
                task["inputRequests"] = dict(self.input_requests)
            elif self.status == "completed":
                task["result"] = self.result
            elif self.status == "failed":
                task["error"] = self.error
        return task


def legacy_wire(task: dict[str, Any]) -> dict[str, Any]:
    """A ``DetailedTask`` (the tasks extension's form, as shared stores keep tasks) as the
    2025-11-25 ``Task``: ``ttl``/``pollInterval``, no result, error or input requests inline
    (``TaskRecord.wire(legacy=True)`` for a task this process does not hold)."""
    out = {k: v for k, v in task.items() if k not in _MODERN_ONLY}
    out["ttl"] = task.get("ttlMs")
    out["pollInterval"] = task.get("pollIntervalMs")
    return out


_MODERN_ONLY: Final = frozenset({"ttlMs", "pollIntervalMs", "inputRequests", "result", "error"})


class TaskHandle(Protocol):
    """What the task methods use of a task: a local :class:`TaskRecord`, or a task another
    replica runs (``runtime.ensemble``'s task mirror: read from the shared store, updates and
    cancellation sent to that replica)."""

    task_id: str

    @property
    def status(self) -> Status: ...

    def wire(self, *, legacy: bool) -> dict[str, Any]: ...

    async def update(self, responses: dict[str, Any]) -> None: ...

    async def request_cancel(self, message: str) -> None: ...

    async def finished(self) -> dict[str, Any]: ...


class TaskMirror(Protocol):
    """Shares a table's tasks with other replicas (set as ``TaskTable.mirror`` while serving
    over a shared store)."""

    def changed(self, record: TaskRecord) -> None:
        """A task's status changed: publish its snapshot soon."""
        ...

    async def persist(self, record: TaskRecord) -> None:
        """Publish a new task's snapshot now (before the client hears of the task); raises
        ``JSONRPCError`` when it cannot."""
        ...

    async def find(self, task_id: str, owner: object | None) -> TaskHandle | None:
        """A task another replica runs, visible to ``owner``; None when there is none."""
        ...

    async def owned_by(self, owner: str) -> list[dict[str, Any]]:
        """The ``DetailedTask``s of ``owner``'s tasks other replicas run (2025-11-25
        ``tasks/list``: a task ``tasks/get`` finds MUST be listed)."""
        ...

    def latest(self, task_id: str) -> dict[str, Any] | None:
        """The last ``DetailedTask`` heard of a task another replica runs (for
        ``notifications/tasks`` to a listen here), or None."""
        ...


class TaskTable:
    def __init__(
        self,
        *,
        max_tasks: int = 1000,
        default_ttl_ms: int = 3_600_000,
        max_ttl_ms: int = 24 * 3_600_000,
        poll_interval_ms: int = 1000,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        self.max_tasks = max_tasks
        #: Called with a task id whenever a task's status changes (notifications/tasks).
        self.on_change = on_change
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self._tasks: dict[str, TaskRecord] = {}
        #: The nursery tasks run in; set while the server is serving.
        self.nursery: trio.Nursery | None = None
        #: Set while serving over a shared store: tasks visible to every replica.
        self.mirror: TaskMirror | None = None

    def __len__(self) -> int:
        return len(self._tasks)

    def purge(self) -> None:
        for task_id in [t.task_id for t in self._tasks.values() if t.expired]:
            record = self._tasks.pop(task_id)
            record.scope.cancel()

    def create(self, owner: object, ttl_ms: int | None = None) -> TaskRecord:
        """A new task in ``working`` status; -32010 when the table is full."""
        if self.nursery is None:
            raise RuntimeError("tasks need a serving server (no task nursery is open)")
        self.purge()
        if len(self._tasks) >= self.max_tasks:
            raise overloaded("too many tasks", maxTasks=self.max_tasks)
        # The receiver may override the requested TTL (2025-11-25 tasks); we cap it.
        ttl = self.default_ttl_ms if ttl_ms is None else max(0, min(ttl_ms, self.max_ttl_ms))
        record = TaskRecord(owner, ttl, self.poll_interval_ms)
        if self.on_change is not None:
            notify = self.on_change
            record.listeners.append(lambda changed: notify(changed.task_id))
        if self.mirror is not None:
            record.listeners.append(self.mirror.changed)
        self._tasks[record.task_id] = record
        return record

    async def persist(self, record: TaskRecord) -> None:
        """Make a new task visible to the other replicas before it is announced (a no-op
        without a shared store)."""
        if self.mirror is not None:
            await self.mirror.persist(record)

    async def find(self, task_id: str, owner: object | None) -> TaskRecord | TaskHandle:
        """:meth:`get`, or a task another replica runs (with a shared store)."""
        if self.peek(task_id) is None and self.mirror is not None:
            remote = await self.mirror.find(task_id, owner)
            if remote is not None:
                return remote
        return self.get(task_id, owner)

    def get(self, task_id: str, owner: object | None) -> TaskRecord:
        """The task, or -32602 for an unknown, expired or foreign id: a task is visible only
        to the owner it was created for (a session, a principal key, or None for nobody in
        particular), and a foreign task looks exactly like an unknown one."""
        record = self.peek(task_id)
        if record is None or record.owner != owner:
            raise unknown_task(task_id)
        return record

    def latest(self, task_id: str) -> dict[str, Any] | None:
        """The task's ``DetailedTask`` as a listen announces it: a live task here, else the
        last one heard from the replica that runs it (with a shared store), else None."""
        record = self.peek(task_id)
        if record is not None:
            return record.wire(legacy=False)
        return self.mirror.latest(task_id) if self.mirror is not None else None

    def peek(self, task_id: str) -> TaskRecord | None:
        """The live task with this id, whoever owns it (for the runtime's own use)."""
        record = self._tasks.get(task_id)
        if record is not None and record.expired:
            self.purge()
            return None
        return record

    def owned_by_anyone(self) -> list[TaskRecord]:
        """Every live task (lease renewals of a shared store)."""
        self.purge()
        return list(self._tasks.values())

    def owned_by(self, owner: object) -> list[TaskRecord]:
        self.purge()
        return [t for t in self._tasks.values() if t.owner == owner]

    def start(
        self,
        record: TaskRecord,
        run: Callable[[], Awaitable[dict[str, Any]]],
    ) -> None:
        """Run ``run`` in the background; its result completes the task, a JSONRPCError
        fails it, cancellation (tasks/cancel, TTL, shutdown) cancels it."""
        assert self.nursery is not None
        self.nursery.start_soon(self._run, record, run)

    async def _run(self, record: TaskRecord, run: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        with record.scope:
            try:
                result = await run()
            except JSONRPCError as exc:
                record.error = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    record.error["data"] = exc.data
                record.set_status("failed", exc.message)
            except Exception:
                # Never let one task's failure take down the nursery the others share.
                log.exception("task failed task=%s", record.task_id)
                error = internal_error()
                record.error = {"code": error.code, "message": error.message}
                record.set_status("failed", error.message)
            else:
                record.result = result
                record.set_status("completed")
        if record.scope.cancelled_caught:
            record.set_status("cancelled", "cancelled")
