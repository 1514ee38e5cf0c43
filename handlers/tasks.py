"""Tasks, both protocols over one table (runtime.features).

2026-07-28: the extension ``io.modelcontextprotocol/tasks`` (SEP-2663). Server-directed: a
task-capable tool becomes a task for a client that declared the extension in that
request's capabilities, answered with ``resultType: "task"``; ``tasks/get`` returns the
DetailedTask (result, error or inputRequests inline), ``tasks/update`` delivers input,
``tasks/cancel`` acknowledges with an empty result.

2025-11-25: experimental tasks (basic/utilities/tasks). Requestor-directed: ``params.task``
asks for a task; ``CreateTaskResult`` is ``{"task": Task}``; ``tasks/result`` blocks until a
terminal status; ``tasks/list`` lists the session's tasks; ``tasks/cancel`` answers with the
cancelled task and refuses terminal ones with -32602. Tasks are scoped to the session that
created them; modern task ids are the capability (unguessable, CSPRNG).
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec
import trio

from runtime.core import Handler, Peer, RequestContext
from runtime.features import (
    TERMINAL,
    App,
    TaskHandle,
    TaskRecord,
    legacy_wire,
    principal_key,
)
from runtime.protocol import (
    META_RELATED_TASK,
    TASKS_CANCEL,
    TASKS_EXTENSION,
    TASKS_GET,
    TASKS_LIST,
    TASKS_RESULT,
    TASKS_STATUS,
    TASKS_UPDATE,
    JSONRPCError,
    cancellation_unconfirmed,
    missing_capability,
    relayed_error,
    task_cancelled,
    task_ended,
)

from ._common import decode_params

__all__ = ["created", "methods", "owner", "report_status", "wants_task"]

#: Status notifications of one task waiting to be sent (2025-11-25; see report_status).
STATUS_QUEUE: Final = 16
#: A shared handshake session's tasks belong to this prefix + its session id (a principal
#: key never matches it: it would have to name a 128-bit random session id).
SESSION_OWNER: Final = "session "


log = logging.getLogger("mcp_runtime.tasks")


class _TaskIdParams(msgspec.Struct):
    taskId: str


class _UpdateParams(msgspec.Struct):
    taskId: str
    inputResponses: dict[str, Any]


class _ListParams(msgspec.Struct):
    cursor: str | None = None


_id_decoder: Final = msgspec.json.Decoder(_TaskIdParams)
_update_decoder: Final = msgspec.json.Decoder(_UpdateParams)
_list_decoder: Final = msgspec.json.Decoder(_ListParams)


def declares_extension(ctx: RequestContext) -> bool:
    """Whether this (modern) request's client capabilities declare the tasks extension."""
    extensions = ctx.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def missing_extension() -> JSONRPCError:
    """-32021 naming the tasks extension (2026-07-28 basic/index "Missing Required Client
    Capabilities"; SEP-2663 "Required Capabilities")."""
    return missing_capability(
        f"Missing required client capability: the {TASKS_EXTENSION} extension",
        {"extensions": {TASKS_EXTENSION: {}}},
    )


def wants_task(
    ctx: RequestContext, support: str | None, task_param: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The task request for this call (a dict, maybe empty), or None to run it inline."""
    if support is None:
        if task_param is not None and not ctx.modern:
            # 2025-11-25: taskSupport absent means forbidden; -32601 is the code it gives.
            raise JSONRPCError.method_not_found("tools/call (as a task)")
        return None
    if ctx.modern:
        if declares_extension(ctx):
            return {}
        # Never return a task to a client that did not declare the extension (SEP-2663);
        # a tool that can only run as one is refused before it runs ("Required
        # Capabilities": -32021 naming the extension).
        if support == "required":
            raise missing_extension()
        return None
    if task_param is None:
        if support == "required":
            raise JSONRPCError.method_not_found("tools/call (this tool must run as a task)")
        return None
    return task_param


def report_status(peer: Peer, record: TaskRecord) -> None:
    """2025-11-25: send ``notifications/tasks/status`` to the creating session on every
    status change, while its connection lives (the notification is optional; a closed
    connection simply gets none). One sender per task, so they leave in the order the
    changes happened (one task per notification raced: ``working`` could follow
    ``completed``); at most ``STATUS_QUEUE`` wait, past that a change is dropped (logged)."""
    send, receive = trio.open_memory_channel[dict[str, Any]](STATUS_QUEUE)

    async def sender() -> None:
        async with receive:
            async for params in receive:
                await peer.notify(TASKS_STATUS, params)

    def changed(task: TaskRecord) -> None:
        try:
            send.send_nowait(task.wire(legacy=True))
        except trio.WouldBlock:
            log.warning("task status notification dropped task=%s (queue full)", task.task_id)
        except trio.ClosedResourceError:
            return
        except trio.BrokenResourceError:
            # The sender ended with the connection (the session ended, the task runs on):
            # nobody to tell, and this change must not raise into the task's runner.
            record.listeners.remove(changed)
            return
        if task.status in TERMINAL:
            send.close()  # the last one: the sender ends after it
            record.listeners.remove(changed)

    try:
        peer.start_soon(sender)
    except RuntimeError:
        return  # the connection is gone
    record.listeners.append(changed)


def owner(ctx: RequestContext) -> object | None:
    """Whose task it is: the session (2025-11-25; by its shared id when replicas share it,
    so that every replica finds the session's tasks); in the modern era the authenticated
    principal when there is one, else nobody (the unguessable id is the capability)."""
    if not ctx.modern:
        shared_id = ctx.session.shared_id
        return ctx.session if shared_id is None else SESSION_OWNER + shared_id
    return principal_key(ctx.session.principal)


def created(ctx: RequestContext, record: TaskRecord) -> dict[str, Any]:
    if ctx.modern:
        return {"resultType": "task", **record.wire(legacy=False)}
    return {"task": record.wire(legacy=True)}


def methods(server: App) -> dict[str, Handler]:
    table = server.tasks

    def gate(ctx: RequestContext) -> None:
        if ctx.modern and not declares_extension(ctx):
            # SEP-2663: tasks/get, tasks/update and tasks/cancel belong to the extension; a
            # request that does not declare it gets -32021 before its params are read.
            raise missing_extension()

    async def find_any(ctx: RequestContext, task_id: str) -> TaskRecord | TaskHandle:
        """The task here, or (with a shared store) on the replica that runs it."""
        return await table.find(task_id, owner(ctx))

    async def get(ctx: RequestContext) -> dict[str, Any]:
        gate(ctx)
        params = decode_params(ctx, _id_decoder, b"{}")
        return (await find_any(ctx, params.taskId)).wire(legacy=not ctx.modern)

    async def update(ctx: RequestContext) -> dict[str, Any]:
        if not ctx.modern:
            raise JSONRPCError.method_not_found(ctx.method)
        gate(ctx)
        params = decode_params(ctx, _update_decoder, b"{}")
        await (await find_any(ctx, params.taskId)).update(params.inputResponses)
        return {}

    async def cancel(ctx: RequestContext) -> dict[str, Any]:
        gate(ctx)
        params = decode_params(ctx, _id_decoder, b"{}")
        record = await find_any(ctx, params.taskId)
        if record.status in TERMINAL:
            if ctx.modern:
                return {}  # cooperative: acknowledged, nothing to do (SEP-2663)
            raise task_ended(record.task_id, record.status)
        # 2025-11-25: "MUST transition the task to cancelled status before sending the
        # response"; the extension allows eventual consistency, we are immediate in both
        # (for a task on another replica: once that replica hears of it).
        await record.request_cancel("cancelled by the client")
        if ctx.modern:
            return {}
        if record.status not in TERMINAL:
            # Another replica runs it and did not confirm in time: never claim "cancelled".
            raise cancellation_unconfirmed(record.task_id, "the replica running it")
        return record.wire(legacy=True)

    async def result(ctx: RequestContext) -> dict[str, Any]:
        if ctx.modern:
            raise JSONRPCError.method_not_found(ctx.method)
        params = decode_params(ctx, _id_decoder, b"{}")
        record = await find_any(ctx, params.taskId)
        final = await record.finished()
        error = final.get("error")
        if final["status"] == "failed" and isinstance(error, dict):
            raise relayed_error(error["code"], error["message"], error.get("data"))
        if final["status"] == "cancelled":
            raise task_cancelled(record.task_id)
        out = dict(final.get("result") or {})
        meta = dict(out.get("_meta") or {})
        meta[META_RELATED_TASK] = {"taskId": record.task_id}
        out["_meta"] = meta
        return out

    async def list_tasks(ctx: RequestContext) -> dict[str, Any]:
        if ctx.modern:
            raise JSONRPCError.method_not_found(ctx.method)
        params = decode_params(ctx, _list_decoder, b"{}")
        who = owner(ctx)
        found = [record.wire(legacy=True) for record in table.owned_by(who)]
        if table.mirror is not None and isinstance(who, str):
            # A shared session's tasks that other replicas run (tasks/get finds them, so
            # tasks/list MUST list them: 2025-11-25 basic/utilities/tasks "Task Listing").
            found += [legacy_wire(task) for task in await table.mirror.owned_by(who)]
            found.sort(key=lambda task: (task["createdAt"], task["taskId"]))
        page, next_cursor = server.cursors.page("tasks", found, params.cursor)
        out: dict[str, Any] = {"tasks": list(page)}
        if next_cursor is not None:
            out["nextCursor"] = next_cursor
        return out

    return {
        TASKS_GET: get,
        TASKS_UPDATE: update,
        TASKS_CANCEL: cancel,
        TASKS_RESULT: result,
        TASKS_LIST: list_tasks,
    }
