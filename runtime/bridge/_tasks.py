"""Tasks across eras: the bridge translating between the two task protocols.

2025-11-25 (basic/utilities/tasks, experimental) is requestor-directed: the client asks for a
task with ``params.task``, gets ``CreateTaskResult`` (``{"task": Task}``), polls ``tasks/get``
(a ``Task``: ``ttl``, ``pollInterval``, no result inline), takes the result from
``tasks/result`` (which blocks until the task ends; the server's input requests arrive as
server-to-client requests while it waits, with ``_meta["io.modelcontextprotocol/related-task"]``),
lists with ``tasks/list`` and cancels with ``tasks/cancel`` (answered with the cancelled task;
a terminal one refused with -32602).

2026-07-28 (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663) is server-directed: a
client that declares the extension may get ``resultType: "task"`` and a ``DetailedTask``
(``ttlMs``, ``pollIntervalMs``; ``result``, ``error`` or ``inputRequests`` inline by status),
polls ``tasks/get``, answers input with ``tasks/update`` and cancels with ``tasks/cancel``
(acknowledged ``{}``, cooperative). No ``tasks/result``, no ``tasks/list``.

:class:`HandshakeClientTasks` serves a handshake-era client's tasks from a 2026-07-28 remote
(one per upstream session): ``params.task`` is dropped and the remote decides; a task it makes
keeps the remote's id, answered as ``{"task": Task}``; a call it answers at once becomes a
completed task of ours (``mcp-runtime-bridge-task:`` ids) holding that result. ``tasks/result``
polls the remote's task at its poll interval (up to ``max_poll_interval``), its input requests
asked of our client as server-to-client requests carrying the related-task ``_meta`` and
answered with ``tasks/update``. ``tasks/list`` lists the tasks made through this session (one
page). ``tasks/cancel`` cancels upstream and answers the task once the remote reports it
cancelled (-32603 if it does not within ``CANCEL_WAIT``).

:class:`ModernClientTasks` serves a 2026-07-28 client's tasks from a handshake-era remote (one
per proxy: such clients share one upstream session): a ``tools/call`` of a client that declares
the extension, for a tool the remote lists with ``execution.taskSupport``, is sent with
``params.task`` (a tool that requires a task, for a client that does not declare the
extension: -32021 naming it); the remote's task keeps its id, answered as
``resultType: "task"``. A watcher
holds the remote's ``tasks/result`` for each such task: its outcome becomes the task's inline
``result`` or ``error``, and the requests the remote sends while it waits (tied to the task by
the related-task ``_meta``, or by arriving on that ``tasks/result``'s own stream) become the
task's ``inputRequests``, answered by ``tasks/update``. At most ``MAX_BRIDGED_TASKS`` are held
(the oldest ended one is forgotten first; -32010 when all are running).

Not mappable, refused precisely: ``tasks/result`` and ``tasks/list`` from a 2026-07-28 client
(-32601: not in that protocol), a cursor our one-page ``tasks/list`` never gave (-32602), a task
id we did not make (-32602 ``Unknown task``), an input response for no pending request (-32602).
``notifications/tasks/status`` is not synthesized across eras (it is optional in 2025-11-25).
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from ..client import Client, ClientError, PeerError
from ..protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    META_RELATED_TASK,
    TASKS_CANCEL,
    TASKS_EXTENSION,
    TASKS_GET,
    TASKS_LIST,
    TASKS_RESULT,
    TASKS_UPDATE,
    TOOLS_CALL,
    TOOLS_LIST,
    JSONRPCError,
    cancellation_unconfirmed,
    invalid_params,
    method_not_found,
    missing_capability,
    overloaded,
    relayed_error,
    task_cancelled,
    task_ended,
    unknown_task,
    upstream_error,
)
from ._hop import per_hop_removed, remote_error, remote_tool_tasks

__all__ = [
    "CANCEL_WAIT",
    "MAX_BRIDGED_TASKS",
    "Ask",
    "HandshakeClientTasks",
    "ModernClientTasks",
    "detailed_task",
    "legacy_task",
    "poll_wait",
    "related_task",
    "task_error",
]

#: How long a cancellation may take to show on the remote before the 2025-11-25 answer (which
#: must be the cancelled task) gives up with -32603; also the bound on cancelling a remote
#: task once our client went away.
CANCEL_WAIT: Final = 2.0

#: Tasks of 2026-07-28 clients held at once on a handshake-era remote (each has a watcher);
#: also the tasks a handshake-era session made on a 2026-07-28 remote that we keep track of
#: (tasks/list; past it the oldest is forgotten, then an unknown task through us).
MAX_BRIDGED_TASKS: Final = 256

#: Pages of the remote's tools/list read at most to learn a tool's task support (a cursor
#: seen before ends it too): a remote handing out a new cursor with every page would hold the
#: forwarded call, and our memory, forever. Far past real servers' tool lists.
_MAX_TOOL_PAGES: Final = 100

#: Our own ids (a call the remote answered at once) start with this.
_INLINE_PREFIX: Final = "mcp-runtime-bridge-task:"
#: Inline-answered tasks a session keeps at most (the oldest forgotten first).
_MAX_INLINE: Final = 64

_TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})

#: ``ask(method, params)``: a server-to-client request to our client, its answer (a
#: ``PeerError`` when our client answers with an error).
Ask = Callable[[str, Any], Awaitable[Any]]


def _task_id(params: dict[str, Any]) -> str:
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise invalid_params("taskId must be a string")
    return task_id


def task_error(error: Any, status: Any) -> JSONRPCError:
    """A remote task's ``error`` object (a failed or cancelled task, SEP-2663 DetailedTask)
    as our answer's error."""
    error = error if isinstance(error, dict) else {}
    message = error.get("message") or f"the remote's task {status}"
    return relayed_error(error.get("code"), message, error.get("data"))


def poll_wait(interval_ms: Any, cap: float) -> float:
    """Seconds before the next poll of a remote's task: its poll interval (milliseconds) up
    to ``cap`` seconds, 0.2 s when it gives none that can be one. Compared before it is
    divided: a remote may send any JSON integer (``10**400`` does not fit a float)."""
    if not isinstance(interval_ms, int | float) or interval_ms < 0:
        return min(0.2, cap)
    return min(interval_ms, cap * 1000) / 1000


def related_task(params: Any) -> str | None:
    """The task id a remote's message names in its related-task ``_meta``, if any."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    related = meta.get(META_RELATED_TASK) if isinstance(meta, dict) else None
    task_id = related.get("taskId") if isinstance(related, dict) else None
    return task_id if isinstance(task_id, str) else None


def _without_related(params: dict[str, Any]) -> dict[str, Any]:
    """The remote's request params without the related-task ``_meta`` (2025-11-25, per hop)."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or META_RELATED_TASK not in meta:
        return params
    kept = {k: v for k, v in meta.items() if k != META_RELATED_TASK}
    out = {k: v for k, v in params.items() if k != "_meta"}
    if kept:
        out["_meta"] = kept
    return out


def legacy_task(task: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 ``DetailedTask`` as the 2025-11-25 ``Task``: ``ttl``/``pollInterval``, no
    ``resultType``, result, error or input requests inline (``tasks/result`` gives those)."""
    out: dict[str, Any] = {
        key: task[key]
        for key in ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt")
        if key in task
    }
    out["ttl"] = task.get("ttlMs")
    if isinstance(task.get("pollIntervalMs"), int):
        out["pollInterval"] = task["pollIntervalMs"]
    return out


def detailed_task(task: dict[str, Any]) -> dict[str, Any]:
    """A 2025-11-25 ``Task`` as the 2026-07-28 ``DetailedTask`` without its inline parts."""
    out: dict[str, Any] = {
        key: task[key]
        for key in ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt")
        if key in task
    }
    out["ttlMs"] = task.get("ttl")
    if isinstance(task.get("pollInterval"), int):
        out["pollIntervalMs"] = task["pollInterval"]
    return out


def _with_related(message: Any, task_id: str) -> dict[str, Any]:
    """2025-11-25 ``tasks/result`` and the requests of its task: the result (or request
    params) carry the related-task ``_meta``. Params the remote gave that are not an object
    (MCP's params are) become an empty object carrying it; so does a ``_meta`` that is not
    an object."""
    out = dict(message) if isinstance(message, dict) else {}
    meta = out.get("_meta")
    out["_meta"] = {
        **(meta if isinstance(meta, dict) else {}),
        META_RELATED_TASK: {"taskId": task_id},
    }
    return out


def _error_of(task: dict[str, Any]) -> JSONRPCError:
    return task_error(task.get("error"), task.get("status"))


async def _request(client: Client, method: str, params: dict[str, Any], **kw: Any) -> Any:
    try:
        return await client.request(method, params, **kw)
    except PeerError as exc:
        raise remote_error(exc) from None


class HandshakeClientTasks:
    """A handshake-era (2025-11-25) client's tasks, run on a 2026-07-28 remote through the
    client of one upstream session (see the module docstring)."""

    def __init__(self, client: Client, *, max_poll_interval: float) -> None:
        self.client = client
        self.max_poll_interval = max_poll_interval
        #: The remote's task ids made through this session, oldest first (tasks/list).
        self.made: dict[str, None] = {}
        #: Our completed tasks for calls the remote answered at once: id -> (task, result).
        self.inline: dict[str, tuple[dict[str, Any], Any]] = {}

    async def call(
        self, params: dict[str, Any], forward: Callable[[dict[str, Any]], Awaitable[Any]]
    ) -> dict[str, Any]:
        """A task-augmented ``tools/call``: sent without ``params.task`` (the remote decides,
        our client declares the extension); ``forward`` sends it and strips per-hop fields
        except ``resultType``."""
        ttl = params["task"].get("ttl") if isinstance(params.get("task"), dict) else None
        sent = {k: v for k, v in params.items() if k != "task"}
        result = await forward(sent)
        if isinstance(result, dict) and result.get("resultType") == "task":
            task_id = result.get("taskId")
            if not isinstance(task_id, str):
                # A task our client could never name again (SEP-2663: taskId is a string).
                raise upstream_error("the remote MCP server answered a task without a taskId")
            self.made[task_id] = None
            while len(self.made) > MAX_BRIDGED_TASKS:
                del self.made[next(iter(self.made))]  # the oldest: Unknown task through us
            return {"task": legacy_task(result)}
        # Answered at once: a completed task of ours holds the result (2025-11-25 requires a
        # CreateTaskResult once the receiver accepted the augmentation).
        now = _now()
        ours = _INLINE_PREFIX + secrets.token_urlsafe(18)
        task: dict[str, Any] = {
            "taskId": ours,
            "status": "completed",
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttl": ttl if isinstance(ttl, int) else None,
        }
        if isinstance(result, dict):
            result.pop("resultType", None)
        self.inline[ours] = (task, result)
        while len(self.inline) > _MAX_INLINE:
            del self.inline[next(iter(self.inline))]
        return {"task": dict(task)}

    async def handle(self, method: str, params: dict[str, Any], ask: Ask) -> Any:
        """``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` of our client.
        ``ask(method, params)`` puts a remote task's input request to our client."""
        if method == TASKS_LIST:
            return await self._list(params)
        task_id = _task_id(params)
        if method == TASKS_UPDATE:
            raise method_not_found(method)  # not in 2025-11-25
        inline = self.inline.get(task_id)
        if inline is None and task_id not in self.made:
            raise unknown_task(task_id)
        if method == TASKS_GET:
            return dict(inline[0]) if inline else legacy_task(await self._get(task_id))
        if method == TASKS_RESULT:
            result = inline[1] if inline is not None else await self._result(task_id, ask)
            if not isinstance(result, dict):  # 2025-11-25: the result is the call's, an object
                raise upstream_error("the remote MCP server's task result is not an object")
            return _with_related(result, task_id)
        if method == TASKS_CANCEL:
            if inline is not None:
                raise task_ended(task_id, "completed")
            return await self._cancel(task_id)
        raise method_not_found(method)

    async def _get(self, task_id: str) -> dict[str, Any]:
        task = await _request(self.client, TASKS_GET, {"taskId": task_id})
        # What our client gets is built from it: a Task names itself and its status
        # (SEP-2663 DetailedTask, 2025-11-25 Task: both required strings).
        if (
            not isinstance(task, dict)
            or task.get("taskId") != task_id
            or not isinstance(task.get("status"), str)
        ):
            raise upstream_error(f"the remote's {TASKS_GET} answered no such task")
        return task

    async def _result(self, task_id: str, ask: Ask) -> Any:
        """Poll the remote's task until it ends; its input requests asked of our client (with
        the related-task ``_meta``) and answered with ``tasks/update``."""
        answered: set[str] = set()
        task = await self._get(task_id)
        while True:
            status = task.get("status")
            if status == "completed":
                return task.get("result")
            if status == "failed":
                raise _error_of(task)
            if status == "cancelled":
                raise task_cancelled(task_id)
            asked = task.get("inputRequests")
            fresh = {
                key: request
                for key, request in (asked if isinstance(asked, dict) else {}).items()
                if key not in answered and isinstance(request, dict)
            }
            if status == "input_required" and fresh:
                responses: dict[str, Any] = {}
                for key, request in fresh.items():
                    inner = _with_related(request.get("params"), task_id)
                    responses[key] = await ask(str(request.get("method")), inner)
                answered.update(responses)
                await _request(
                    self.client, TASKS_UPDATE, {"taskId": task_id, "inputResponses": responses}
                )
            else:
                await trio.sleep(poll_wait(task.get("pollIntervalMs"), self.max_poll_interval))
            task = await self._get(task_id)

    async def _cancel(self, task_id: str) -> dict[str, Any]:
        task = await self._get(task_id)
        if task.get("status") in _TERMINAL:
            raise task_ended(task_id, str(task.get("status")))
        await _request(self.client, TASKS_CANCEL, {"taskId": task_id})
        # 2025-11-25: the answer is the task, cancelled; the extension's cancellation may be
        # eventual, so wait (bounded) for the remote to report it.
        with trio.move_on_after(CANCEL_WAIT):
            while task.get("status") not in _TERMINAL:
                await trio.sleep(0.02)
                task = await self._get(task_id)
        if task.get("status") != "cancelled":
            raise cancellation_unconfirmed(task_id, f"the remote (status {task.get('status')})")
        return legacy_task(task)

    async def _list(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("cursor") is not None:
            raise invalid_params("unknown cursor")
        tasks: list[dict[str, Any]] = []
        for task_id in list(self.made):
            try:
                tasks.append(legacy_task(await self._get(task_id)))
            except JSONRPCError as exc:
                if exc.code != INVALID_PARAMS:
                    raise
                self.made.pop(task_id, None)  # expired on the remote: gone
        tasks += [dict(task) for task, _ in self.inline.values()]
        tasks.sort(key=lambda task: (str(task.get("createdAt")), task["taskId"]))
        return {"tasks": tasks}


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class _Pending:
    """One request of the remote's task waiting for a ``tasks/update``."""

    __slots__ = ("answer", "answered", "method", "params")

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        self.method = method
        self.params = params
        self.answered = trio.Event()
        self.answer: Any = None


class _Bridged:
    """A handshake-era remote's task, as a 2026-07-28 client sees it."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.done = False
        self.status = "working"
        self.result: Any = None
        self.error: dict[str, Any] | None = None
        self.pending: dict[str, _Pending] = {}
        self._keys = itertools.count(1)

    def fail(self, error: JSONRPCError) -> None:
        """Ended with ``error``, kept as the task's inline ``error`` object (SEP-2663
        DetailedTask)."""
        self.error = {"code": error.code, "message": error.message}
        if error.data is not None:
            self.error["data"] = error.data
        self.status = "failed"

    async def ask(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        key = f"bridge-{next(self._keys)}"
        pending = _Pending(method, params)
        self.pending[key] = pending
        try:
            with trio.move_on_after(timeout):
                await pending.answered.wait()
        finally:
            self.pending.pop(key, None)
        if not pending.answered.is_set():
            raise PeerError(INTERNAL_ERROR, f"the client did not answer {method} in time")
        return pending.answer


class ModernClientTasks:
    """2026-07-28 clients' tasks on a handshake-era remote, through the proxy's shared client
    (see the module docstring). Watchers run in ``nursery``."""

    def __init__(self, *, round_timeout: float) -> None:
        self.round_timeout = round_timeout
        self.tasks: dict[str, _Bridged] = {}
        #: Task-augmented calls sent and not answered yet, and an event set when one is: the
        #: remote may ask inside a task before its CreateTaskResult reached us.
        self._creating = 0
        self._created = trio.Event()
        #: The remote's tools' ``execution.taskSupport`` (from its tools/list), by name.
        self.support: dict[str, str | None] = {}

    async def task_support(self, client: Client, name: str) -> str | None:
        """The remote tool's task support, from its tools/list (read again on a miss)."""
        if name not in self.support:
            self.support.clear()
            cursor: str | None = None
            seen: set[str] = set()
            for _page in range(_MAX_TOOL_PAGES):
                page = await _request(
                    client, TOOLS_LIST, {} if cursor is None else {"cursor": cursor}
                )
                page = page if isinstance(page, dict) else {}
                tools = page.get("tools")
                # What is not a tool (2025-11-25 server/tools: an object with a string name)
                # tells nothing about task support: skipped, as a tool without it.
                for tool in tools if isinstance(tools, list) else []:
                    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                        continue
                    execution = tool.get("execution")
                    support = execution.get("taskSupport") if isinstance(execution, dict) else None
                    self.support[tool["name"]] = support if isinstance(support, str) else None
                cursor = page.get("nextCursor")
                if not isinstance(cursor, str) or cursor in seen:
                    break
                seen.add(cursor)
            else:
                raise upstream_error(
                    f"the remote's {TOOLS_LIST} did not end within {_MAX_TOOL_PAGES} pages"
                )
        return self.support.get(name)

    async def runs_as_task(
        self, client: Client, params: dict[str, Any], client_capabilities: dict[str, Any]
    ) -> bool:
        """Whether a 2026-07-28 client's ``tools/call`` runs as a task of the remote
        (:meth:`call`): the remote has task-augmented calls, the tool supports tasks and our
        client declares the extension. A tool that requires a task, for a client that does
        not declare the extension: -32021 naming it (SEP-2663 "Required Capabilities")."""
        caps = client.description.capabilities if client.description else {}
        if not remote_tool_tasks(caps):
            return False
        support = await self.task_support(client, str(params.get("name")))
        if support not in ("optional", "required"):
            return False
        extensions = client_capabilities.get("extensions")
        if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
            return True
        if support == "required":
            raise missing_capability(
                f"Missing required client capability: the {TASKS_EXTENSION} extension",
                {"extensions": {TASKS_EXTENSION: {}}},
            )
        return False

    async def call(
        self, client: Client, params: dict[str, Any], nursery: trio.Nursery
    ) -> dict[str, Any]:
        """``tools/call`` as a task of the remote (``params.task``), answered as
        ``resultType: "task"``; its watcher started in ``nursery``."""
        if len(self.tasks) >= MAX_BRIDGED_TASKS:
            ended = [t for t in self.tasks.values() if t.done]
            if not ended:
                raise overloaded(
                    f"the proxy holds {len(self.tasks)} running tasks (MAX_BRIDGED_TASKS)",
                    limit="MAX_BRIDGED_TASKS",
                    max=MAX_BRIDGED_TASKS,
                )
            del self.tasks[ended[0].task_id]
        self._creating += 1
        try:
            created = await _request(client, TOOLS_CALL, {**params, "task": {}})
            task = created.get("task") if isinstance(created, dict) else None
            if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
                # The remote ran it at once after all: its result is the answer, without
                # what belongs to the remote's hop (a resultType "task" with no task, say).
                return per_hop_removed(created) if isinstance(created, dict) else {}
            bridged = _Bridged(task["taskId"])
            self.tasks[bridged.task_id] = bridged
            nursery.start_soon(self._watch, client, bridged)
            return {"resultType": "task", **detailed_task(task)}
        finally:
            self._creating -= 1
            self._created.set()
            self._created = trio.Event()

    async def _watch(self, client: Client, bridged: _Bridged) -> None:
        """Hold the remote's ``tasks/result`` until the task ends."""

        async def on_request(method: str, params: dict[str, Any]) -> Any:
            return await bridged.ask(method, params, self.round_timeout)

        try:
            bridged.result = await client.request(
                TASKS_RESULT, {"taskId": bridged.task_id}, timeout=None, on_request=on_request
            )
            if isinstance(bridged.result, dict):
                meta = bridged.result.get("_meta")
                if isinstance(meta, dict):
                    meta.pop(META_RELATED_TASK, None)
                    if not meta:
                        del bridged.result["_meta"]
            bridged.status = "completed"
        except PeerError as exc:
            bridged.fail(remote_error(exc))
            with contextlib.suppress(ClientError):
                task = await client.request(TASKS_GET, {"taskId": bridged.task_id})
                if isinstance(task, dict) and task.get("status") == "cancelled":
                    bridged.status = "cancelled"
        except ClientError as exc:
            bridged.fail(upstream_error(f"the remote MCP server: {exc}"))
        finally:
            bridged.done = True
            for pending in bridged.pending.values():
                pending.answered.set()

    async def ask_for(self, params: Any) -> _Bridged | None:
        """The task a remote's request names in its related-task ``_meta`` (links without
        per-request streams), if it is one of ours: waiting, while a task-augmented call is
        being answered, for the task it may be (its question can overtake its creation)."""
        task_id = related_task(params)
        if task_id is None:
            return None
        with trio.move_on_after(self.round_timeout):
            while task_id not in self.tasks and self._creating:
                await self._created.wait()
        return self.tasks.get(task_id)

    async def handle(self, client: Client, method: str, params: dict[str, Any]) -> Any:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel`` of a 2026-07-28 client."""
        if method not in (TASKS_GET, TASKS_UPDATE, TASKS_CANCEL):
            raise method_not_found(method)  # tasks/result, tasks/list: 2025-11-25 only
        task_id = _task_id(params)
        bridged = self.tasks.get(task_id)
        if bridged is None:
            raise unknown_task(task_id)
        if method == TASKS_UPDATE:
            responses = params.get("inputResponses")
            if not isinstance(responses, dict):
                raise invalid_params("inputResponses")
            for key, answer in responses.items():
                pending = bridged.pending.get(key)
                if pending is None:
                    raise invalid_params(f"no input request {key!r} pending", taskId=task_id)
                pending.answer = answer
                pending.answered.set()
            return {}
        if method == TASKS_CANCEL:
            if not bridged.done:
                try:
                    await client.request(TASKS_CANCEL, {"taskId": task_id})
                except PeerError as exc:
                    if exc.code != INVALID_PARAMS:  # already terminal there; ours is {}
                        raise remote_error(exc) from None
            return {}
        remote = await _request(client, TASKS_GET, {"taskId": task_id})
        task = detailed_task(remote if isinstance(remote, dict) else {})
        if bridged.done:
            task["status"] = bridged.status
            if bridged.status == "completed":
                task["result"] = bridged.result
            elif bridged.status == "failed":
                task["error"] = bridged.error
        elif asked := {k: p for k, p in bridged.pending.items() if not p.answered.is_set()}:
            task["status"] = "input_required"
            task["inputRequests"] = {
                key: {"method": p.method, "params": _without_related(p.params)}
                for key, p in asked.items()
            }
        elif task.get("status") not in ("working",):
            # The remote moved on (input_required, or ended) before its tasks/result told us
            # what it asks or answers: still working, as far as our client can act on.
            task["status"] = "working"
        return task
