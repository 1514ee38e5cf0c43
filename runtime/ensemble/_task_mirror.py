"""A server's tasks, shared with its other replicas through a shared store
(``TaskTable.mirror``): tasks of both protocols (2026-07-28 SEP-2663, and 2025-11-25 tasks of
a shared handshake session, owned by its session id). Each replica writes its tasks'
snapshots to the store (on every status change, and a lease of ``Store.lease`` seconds
renewed every third of it) and announces each change on ``TASKS_CHANNEL`` (for listens
elsewhere); answers ``tasks/get``, ``tasks/list`` and ``tasks/result`` for another replica's
task from the store, and sends ``tasks/update`` and ``tasks/cancel`` to the replica that
runs it; a task whose lease ran out (its replica died) reads as ``failed``.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from typing import Any

import msgspec
import trio

from ..features import TASK_KEY, TERMINAL, Broadcast, TaskRecord, TaskTable, legacy_wire
from ..protocol import JSONRPCError, replica_gone, store_unavailable, unknown_task
from ..stores import RENEWALS_PER_LEASE, Store, StoreUnavailable, TaskSnapshot

__all__ = ["TaskMirror"]

log = logging.getLogger("mcp_runtime.stores")

#: Task changes waiting to be written to the store; past it one is not queued (logged).
WRITE_QUEUE = 1024
#: Task status changes are announced to the other replicas' listens on this channel.
TASKS_CHANNEL = "task-changes"
#: Other replicas' tasks whose last status a replica remembers (for its listens).
LATEST_KEPT = 1024
#: How long a tasks/cancel of another replica's task waits for that replica to confirm,
#: and how often it looks (seconds).
CANCEL_CONFIRM = 3.0
CONFIRM_POLL = 0.05
#: How often a 2025-11-25 tasks/result of another replica's task reads its status.
RESULT_POLL = 0.2


def _shareable(record: TaskRecord) -> bool:
    # 2026-07-28 tasks belong to a principal key (a string) or to nobody; a handshake-era
    # task to its session's shared id (a string) when replicas share the session, else to
    # the session object (stdio, or no shared store): then nobody else could reach it.
    return record.owner is None or isinstance(record.owner, str)


def _unavailable(exc: StoreUnavailable) -> JSONRPCError:
    """The client's error for a task the store could not serve: what failed (the store's
    address, its exception) goes to the log only, under a correlation id the client gets."""
    correlation = secrets.token_hex(8)
    log.warning("task store unavailable correlation=%s: %s", correlation, exc)
    return store_unavailable("Task", correlation)


class _RemoteTask:
    """A task another replica runs, as the task methods see it (``TaskHandle``)."""

    def __init__(self, mirror: TaskMirror, task_id: str, snapshot: TaskSnapshot) -> None:
        self.task_id = task_id
        self._mirror = mirror
        self._snapshot = snapshot

    @property
    def status(self) -> Any:
        return self._snapshot.task.get("status")

    def wire(self, *, legacy: bool) -> dict[str, Any]:
        return legacy_wire(self._snapshot.task) if legacy else dict(self._snapshot.task)

    async def update(self, responses: dict[str, Any]) -> None:
        await self._mirror.send(self._snapshot.replica, ["update", self.task_id, responses])

    async def request_cancel(self, message: str) -> None:
        """Ask the running replica to cancel it, then wait (at most ``CANCEL_CONFIRM``
        seconds) until its snapshot is terminal: 2025-11-25 tasks/cancel "MUST transition
        the task to cancelled status before sending the response", so the caller answers
        from a confirmed status (still not terminal here: not confirmed)."""
        await self._mirror.send(self._snapshot.replica, ["cancel", self.task_id, message])
        with trio.move_on_after(CANCEL_CONFIRM):
            while self.status not in TERMINAL:
                await trio.sleep(CONFIRM_POLL)
                await self._refresh()

    async def finished(self) -> dict[str, Any]:
        """Wait until the running replica reports a terminal status (polling the store;
        a replica that died fails it when its lease runs out); the final task."""
        while self.status not in TERMINAL:
            await trio.sleep(RESULT_POLL)
            await self._refresh()
        return dict(self._snapshot.task)

    async def _refresh(self) -> None:
        try:
            snap = await self._mirror.store.tasks.get(self.task_id)
        except StoreUnavailable as exc:
            raise _unavailable(exc) from None
        if snap is None:
            raise unknown_task(self.task_id)  # expired meanwhile
        self._snapshot = await self._mirror.settle(self.task_id, snap)


class TaskMirror:
    """``TaskTable.mirror`` over a shared store (see the module docstring)."""

    def __init__(self, store: Store, table: TaskTable, changes: Broadcast) -> None:
        self.store = store
        self.table = table
        self.changes = changes
        self.replica = store.replica
        self._send, self._receive = trio.open_memory_channel[str](WRITE_QUEUE)
        #: The last DetailedTask heard of other replicas' tasks (for listens here).
        self._latest: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def start(self, nursery: trio.Nursery) -> None:
        for channel, deliver in (
            ("task:" + self.replica, self._deliver),
            (TASKS_CHANNEL, self._heard),
        ):
            try:
                await self.store.bus.subscribe(channel, deliver)
            except StoreUnavailable as exc:
                log.warning("tasks: not receiving other replicas' %s yet: %s", channel, exc)
        nursery.start_soon(self._write)
        nursery.start_soon(self._renew)
        nursery.start_soon(self._rechecking)

    def snapshot(self, record: TaskRecord) -> tuple[str, TaskSnapshot, float]:
        owner = record.owner if isinstance(record.owner, str) else None
        ttl = (record.ttl_ms or self.table.default_ttl_ms) / 1000
        snap = TaskSnapshot(
            task=record.wire(legacy=False),
            owner=owner,
            replica=self.replica,
            lease_until=time.time() + self.store.lease,
        )
        return record.task_id, snap, ttl

    def changed(self, record: TaskRecord) -> None:
        if _shareable(record):
            try:
                self._send.send_nowait(record.task_id)
            except trio.WouldBlock:
                log.warning("task snapshot not queued task=%s (queue full)", record.task_id)

    async def persist(self, record: TaskRecord) -> None:
        if not _shareable(record):
            return
        try:
            await self.store.tasks.put(*self.snapshot(record))
        except StoreUnavailable as exc:
            # Not announced, so not run: the client gets the error instead of a task id
            # that other replicas could not find.
            record.scope.cancel()
            record.set_status("failed", "task store unavailable")
            raise _unavailable(exc) from None

    async def settle(self, task_id: str, snap: TaskSnapshot) -> TaskSnapshot:
        """``snap``, or, when its replica stopped renewing its lease (it died, or lost the
        store for ``Store.lease`` seconds) before the task ended, the task failed with a
        status saying so (written back, so every replica reads the same)."""
        if snap.task.get("status") in TERMINAL or time.time() <= snap.lease_until:
            return snap
        gone = replica_gone("task")
        task = {k: v for k, v in snap.task.items() if k not in ("inputRequests", "result")}
        task.update(
            status="failed",
            statusMessage=gone.message,
            error={"code": gone.code, "message": gone.message},
        )
        snap = TaskSnapshot(task=task, owner=snap.owner, replica=snap.replica, lease_until=0)
        ttl = (snap.task.get("ttlMs") or self.table.default_ttl_ms) / 1000
        with contextlib.suppress(StoreUnavailable):
            await self.store.tasks.put(task_id, snap, ttl)
        return snap

    async def find(self, task_id: str, owner: object | None) -> _RemoteTask | None:
        if owner is not None and not isinstance(owner, str):
            return None
        try:
            snap = await self.store.tasks.get(task_id)
        except StoreUnavailable as exc:
            raise _unavailable(exc) from None
        if snap is None or snap.owner != owner or snap.replica == self.replica:
            return None
        snap = await self.settle(task_id, snap)
        self._remember(task_id, snap.task)
        return _RemoteTask(self, task_id, snap)

    async def owned_by(self, owner: str) -> list[dict[str, Any]]:
        try:
            found = await self.store.tasks.owned(owner)
        except StoreUnavailable as exc:
            raise _unavailable(exc) from None
        return [
            (await self.settle(task_id, snap)).task
            for task_id, snap in found
            if snap.replica != self.replica or self.table.peek(task_id) is None
        ]

    def latest(self, task_id: str) -> dict[str, Any] | None:
        return self._latest.get(task_id)

    def _remember(self, task_id: str, task: dict[str, Any]) -> None:
        self._latest[task_id] = task
        self._latest.move_to_end(task_id)
        while len(self._latest) > LATEST_KEPT:
            self._latest.popitem(last=False)

    async def send(self, replica: str, command: list[Any]) -> None:
        try:
            await self.store.bus.publish("task:" + replica, msgspec.json.encode(command))
        except StoreUnavailable as exc:
            raise _unavailable(exc) from None

    def _deliver(self, data: bytes) -> None:
        try:
            op, task_id, arg = msgspec.json.decode(data, type=tuple[str, str, Any])
        except (msgspec.DecodeError, ValueError):
            return
        record = self.table.peek(task_id)
        if record is None:
            return
        if op == "update" and isinstance(arg, dict):
            record.provide(arg)
            self.changed(record)
        elif op == "cancel" and record.status not in TERMINAL:
            record.scope.cancel()
            record.set_status("cancelled", str(arg))

    def _heard(self, data: bytes) -> None:
        """Another replica's task changed: listens here watching it announce it
        (``notifications/tasks``, SEP-2663) from the task it sent."""
        try:
            origin, task_id, task = msgspec.json.decode(data, type=tuple[str, str, dict[str, Any]])
        except (msgspec.DecodeError, ValueError):
            return
        if origin == self.replica:
            return
        self._remember(task_id, task)
        self.changes.deliver(("task", task_id))

    async def _write(self) -> None:
        async for task_id in self._receive:
            record = self.table.peek(task_id)
            if record is None:
                continue
            task_id, snap, ttl = self.snapshot(record)
            try:
                await self.store.tasks.put(task_id, snap, ttl)
                # After the write: a replica that reads the store on hearing it reads this.
                await self.store.bus.publish(
                    TASKS_CHANNEL, msgspec.json.encode([self.replica, task_id, snap.task])
                )
            except StoreUnavailable as exc:
                log.warning("task snapshot not written task=%s: %s", task_id, exc)

    async def _recheck(self) -> None:
        """Other replicas' tasks a listen here watches, read again from the store: a
        change whose bus message was lost (at-most-once) is announced now, and a task whose
        replica died is announced failed once its lease ran out (``settle``)."""
        for task_id, task in list(self._latest.items()):
            if task.get("status") in TERMINAL or not self.changes.watched(TASK_KEY + task_id):
                continue
            try:
                snap = await self.store.tasks.get(task_id)
            except StoreUnavailable:
                return
            if snap is None or snap.replica == self.replica:
                continue
            snap = await self.settle(task_id, snap)
            if snap.task != self._latest.get(task_id):
                self._remember(task_id, snap.task)
                self.changes.deliver(("task", task_id))

    async def _rechecking(self) -> None:
        # Apart from _renew: a slow store here must not delay this replica's leases.
        while True:
            await trio.sleep(self.store.lease / RENEWALS_PER_LEASE)
            await self._recheck()

    async def _renew(self) -> None:
        while True:
            await trio.sleep(self.store.lease / RENEWALS_PER_LEASE)
            live = [
                self.snapshot(record)
                for record in self.table.owned_by_anyone()
                if record.status not in TERMINAL and _shareable(record)
            ]
            try:
                await self.store.tasks.put_many(live)
            except StoreUnavailable as exc:
                log.warning("task leases not renewed: %s", exc)
