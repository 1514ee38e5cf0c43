"""The client: the MCP surface over a :class:`~runtime.client._conversation.Conversation`.

It chooses the era (``server/discover`` or ``initialize``), builds each request (2026-07-28
``_meta``, progress tokens, ``Mcp-Param-*`` headers), decodes results into typed structs,
answers 2026-07-28 input rounds, follows tasks, and renews a handshake-era session's state
after a reconnect. The link, the request table and the routing are the conversation's.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, Literal, TypeVar

import msgspec
import trio
import trio.lowlevel

from ._answers import Answers, RequestHandler
from ._backoff import Backoff
from ._connectors import Connector
from ._conversation import (
    DEFAULT_MAX_SERVER_REQUESTS,
    Conversation,
    Listener,
    Notification,
    NotificationCallback,
    ServerRequestHandler,
)
from ._errors import BadMessage, ClientError, PeerError, TransportLost
from ._link import Link, Outgoing
from ._param_headers import ParamHeaders
from ._types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ServerDescription,
    Task,
    Tool,
)
from ._wire import (
    CLIENT_VERSION,
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    LATEST_HANDSHAKE_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_VERSION,
    NAMED_METHODS,
    REPEATABLE_METHODS,
    TASKS_EXTENSION,
    decode_value,
    loggable,
)

__all__ = ["Client", "Era", "Notification", "RequestHandler"]

log = logging.getLogger("mcp_runtime.client")

Era = Literal["auto", "modern", "handshake"]
T = TypeVar("T")
_DEFAULT: Final[Any] = object()
#: Input rounds (2026-07-28 mrtr) one request may go through before the client stops: a
#: server that keeps asking is looping, and each round costs the user an answer.
MAX_INPUT_ROUNDS: Final = 10
#: Pages and items one ``all_*`` listing follows before it stops with an error: a server that
#: hands out a fresh ``nextCursor`` with every page would otherwise be followed without end
#: (and every page kept). A thousand pages is what FastMCP's and the Ruby SDK's clients
#: allow; 100,000 items is a thousand pages of a hundred, far past any real catalogue.
MAX_LIST_PAGES: Final = 1000
MAX_LIST_ITEMS: Final = 100_000
_CANCEL_SEND_TIMEOUT: Final = 2.0


class _ResultProbe(msgspec.Struct):
    result_type: str | None = msgspec.field(default=None, name="resultType")
    input_requests: dict[str, Any] | None = msgspec.field(default=None, name="inputRequests")
    request_state: str | None = msgspec.field(default=None, name="requestState")


_encode: Final = msgspec.json.encode


class Client:
    """A connection to one MCP server. Made by :func:`runtime.client.open_client`.

    Every request method raises :class:`PeerError` for an error response,
    :class:`RequestTimeout` when the answer does not come in time, :class:`TransportLost` when
    the link is gone (and could not be brought back, or the request was not safe to repeat)
    and :class:`BadMessage` for a result of the wrong shape. ``timeout`` arguments default to
    the client's ``timeout``; None waits indefinitely.
    """

    def __init__(
        self,
        connector: Connector,
        nursery: trio.Nursery,
        *,
        era: Era = "auto",
        timeout: float | None = 60.0,
        backoff: Backoff | None = None,
        client_info: Implementation | None = None,
        sampling: RequestHandler | None = None,
        elicitation: RequestHandler | None = None,
        roots: RequestHandler | None = None,
        on_notification: Callable[[Notification], Any] | None = None,
        tasks: bool = True,
        handshake_version: str = LATEST_HANDSHAKE_VERSION,
        max_list_pages: int = MAX_LIST_PAGES,
        max_list_items: int = MAX_LIST_ITEMS,
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
    ) -> None:
        if era not in ("auto", "modern", "handshake"):
            raise ValueError(f"unknown era {era!r} (expected 'auto', 'modern' or 'handshake')")
        if max_list_pages < 1 or max_list_items < 1:
            raise ValueError("max_list_pages and max_list_items must be at least 1")
        #: The most pages and items one ``all_*`` listing takes (see :meth:`all_tools`).
        self.max_list_pages = max_list_pages
        self.max_list_items = max_list_items
        if handshake_version not in HANDSHAKE_VERSIONS:
            raise ValueError(
                f"unknown handshake version {handshake_version!r} "
                f"(expected one of {', '.join(HANDSHAKE_VERSIONS)})"
            )
        #: The revision offered in ``initialize`` (2025-03-26 is the one with batches).
        self.handshake_version = handshake_version
        self.connector = connector
        self._nursery = nursery
        self.requested_era: Era = era
        self.timeout = timeout
        self.backoff = backoff if backoff is not None else Backoff()
        self.client_info = client_info or Implementation("mcp-runtime-client", CLIENT_VERSION)
        #: The application's handlers for the server's requests and input rounds.
        self.answers = Answers(sampling=sampling, elicitation=elicitation, roots=roots)
        self.capabilities = self.answers.capabilities
        self._tasks = tasks
        #: What the server said about itself (``initialize`` / ``server/discover``).
        self.description: ServerDescription | None = None
        #: "modern" or "handshake" once connected.
        self.era: Literal["modern", "handshake"] = "handshake" if era == "handshake" else "modern"
        self.log_level: str | None = None
        #: Handshake sessions re-initialized after the server lost ours.
        self.reinitializations = 0
        #: 2026-07-28 "Schema Extension": the arguments each tool mirrors into headers.
        self._param_headers = ParamHeaders()
        #: Handshake-era resource subscriptions (uri -> holders), renewed on a new session.
        self._subscriptions: dict[str, int] = {}
        self._ids = itertools.count(1)
        self._conversation = Conversation(
            connector,
            nursery,
            self.backoff,
            on_reconnect=self._after_reconnect,
            answer=self.answers.server_request,
            on_notification=on_notification,
            max_server_requests=max_server_requests,
        )

    # -- the conversation's hooks ---------------------------------------------------------------

    async def _after_reconnect(self) -> None:
        """A new link: the handshake era needs a new session (and its subscriptions)."""
        if self.era == "handshake":
            await self._initialize()
            await self._renew_session_state()

    @property
    def reconnects(self) -> int:
        """Times the link was re-opened after a loss."""
        return self._conversation.reconnects

    @property
    def _link(self) -> Link | None:
        return self._conversation.link

    async def _maintain(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        await self._conversation.maintain(task_status=task_status)

    # -- requests ---------------------------------------------------------------------------

    def _modern_meta(self) -> dict[str, Any]:
        capabilities = dict(self.capabilities)
        if self._tasks:
            capabilities["extensions"] = {TASKS_EXTENSION: {}}
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: MODERN_VERSION,
            META_CLIENT_CAPABILITIES: capabilities,
            META_CLIENT_INFO: msgspec.to_builtins(self.client_info),
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    async def _request_raw(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = _DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
        repeatable: bool | None = None,
        modern: bool | None = None,
        early: bool = False,
        request_id: int | None = None,
        on_notification: NotificationCallback | None = None,
        on_request: ServerRequestHandler | None = None,
    ) -> msgspec.Raw:
        if timeout is _DEFAULT:
            timeout = self.timeout
        if request_id is None:
            request_id = next(self._ids)
        body: dict[str, Any] = dict(params or {})
        is_modern = (self.era == "modern") if modern is None else modern
        if is_modern or progress is not None:
            meta = dict(body.get("_meta") or {})
            if is_modern:
                meta.update(self._modern_meta())
            if progress is not None:
                meta["progressToken"] = f"progress-{request_id}"
            body["_meta"] = meta
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if body or is_modern:
            message["params"] = body
        name_field = NAMED_METHODS.get(method)
        name = body.get(name_field) if name_field else None
        extra_headers: list[tuple[str, str]] = []
        if is_modern and method == "tools/call" and isinstance(name, str):
            extra_headers = self._param_headers.mirror(name, body.get("arguments"))
        safe = method in REPEATABLE_METHODS if repeatable is None else repeatable
        out = Outgoing(
            _encode(message),
            method,
            request_id,
            name if isinstance(name, str) else None,
            is_modern,
            safe,
            expects_response=True,
            headers=extra_headers,
        )
        return await self._conversation.request(
            out,
            timeout=timeout,
            progress=progress,
            progress_token=f"progress-{request_id}" if progress is not None else None,
            early=early,
            on_notification=on_notification,
            on_request=on_request,
        )

    async def _call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        result_type: type[T],
        *,
        timeout: float | None = _DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> T:
        """A request whose result decodes as ``result_type``; answers 2026-07-28 input
        rounds (``resultType: "input_required"``) with the registered handlers, re-sending
        the request with ``inputResponses`` and the server's ``requestState``."""
        body = dict(params or {})
        for _round in range(MAX_INPUT_ROUNDS + 1):
            raw = await self._request_raw(
                method, body, timeout=timeout, progress=progress, on_notification=on_notification
            )
            probe = (
                _decode(raw, _ResultProbe, method)
                if b"resultType" in bytes(raw)
                else _ResultProbe()
            )
            if probe.result_type == "task" and result_type is not Task:
                # 2026-07-28 tasks extension: the server chose to run it as a task.
                task = _decode(raw, Task, method)
                return _convert(await self._await_task(task, timeout), result_type, method)
            if probe.result_type != "input_required":
                return _decode(raw, result_type, method)
            body["inputResponses"] = await self.answers.input_requests(probe.input_requests or {})
            if probe.request_state is not None:
                body["requestState"] = probe.request_state
            else:
                body.pop("requestState", None)
        raise ClientError(f"{method}: the server asked for input {MAX_INPUT_ROUNDS} times")

    async def _await_task(self, task: Task, timeout: float | None) -> Any:
        """Poll a modern task (``tasks/get`` at its poll interval) until it ends, answering
        its input requests through ``tasks/update``; its result, or PeerError."""
        if timeout is _DEFAULT:
            timeout = self.timeout
        answered: set[str] = set()
        with trio.fail_after(math.inf if timeout is None else timeout):
            while True:
                if task.status == "completed":
                    return task.result
                if task.status in ("failed", "cancelled"):
                    error = task.error if isinstance(task.error, dict) else {}
                    raise PeerError(
                        int(error.get("code", -32603)),
                        str(error.get("message", f"task {task.status}")),
                        error.get("data"),
                    )
                if task.status == "input_required" and task.input_requests:
                    fresh = {k: v for k, v in task.input_requests.items() if k not in answered}
                    if fresh:
                        responses = await self.answers.input_requests(fresh)
                        answered.update(responses)
                        await self.update_task(task.task_id, responses)
                        task = await self.get_task(task.task_id)
                        continue
                await trio.sleep((task.poll_interval_ms or task.poll_interval or 200) / 1000)
                task = await self.get_task(task.task_id)

    # -- lifecycle --------------------------------------------------------------------------

    async def _start(self) -> None:
        """Choose the era: discover (modern), initialize (handshake) or probe (auto).

        ``auto`` over stdio: a server that predates 2026-07-28 may exit (or close its
        stdout) in answer to ``server/discover`` instead of refusing it with an error (a
        request before ``initialize``). The client then starts it once more and does the
        handshake: a second exit is an error (``TransportLost``), never a loop. The probe is
        not re-sent on the new process.
        """
        if self.requested_era in ("auto", "modern"):
            respawn_for_probe = (
                self.requested_era == "auto"
                and getattr(self.connector, "restart_after_probe", False)
                and not self.connector.reconnects
            )
            self._conversation.reopen_once = respawn_for_probe
            try:
                await self._discover(repeatable=not respawn_for_probe)
                self.era = "modern"
                self._conversation.ready.set()
                return
            except PeerError as exc:
                if self.requested_era == "modern":
                    raise
                log.info("server/discover refused (%s): falling back to initialize", loggable(exc))
            except TransportLost as exc:
                if not respawn_for_probe or self._conversation.reopen_once:
                    raise  # not a stdio probe, or the link was not lost (a send failed)
                log.info("the server exited at server/discover (%s): the handshake", loggable(exc))
            finally:
                self._conversation.reopen_once = False
        self.era = "handshake"
        await self._initialize()
        self._conversation.ready.set()

    async def _discover(self, *, repeatable: bool = True) -> ServerDescription:
        raw = await self._request_raw(
            "server/discover", {}, modern=True, repeatable=repeatable, early=True
        )
        data = decode_value(raw, "server/discover")
        if not isinstance(data, dict):
            raise BadMessage("server/discover: the result is not an object")
        supported = data.get("supportedVersions") or []
        if MODERN_VERSION not in supported:
            raise PeerError(-32022, "the server does not support 2026-07-28", data)
        meta = data.get("_meta") or {}
        info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        self.description = ServerDescription(
            protocol_version=MODERN_VERSION,
            capabilities=data.get("capabilities") or {},
            server_info=msgspec.convert(info, Implementation) if isinstance(info, dict) else None,
            instructions=data.get("instructions"),
            supported_versions=list(supported),
        )
        return self.description

    async def _initialize(self) -> None:
        params = {
            "protocolVersion": self.handshake_version,
            "capabilities": self.capabilities,
            "clientInfo": msgspec.to_builtins(self.client_info),
        }
        raw = await self._request_raw(
            "initialize", params, modern=False, repeatable=True, early=True
        )
        description = _decode(raw, ServerDescription, "initialize")
        if description.protocol_version not in HANDSHAKE_VERSIONS:
            raise ClientError(
                f"the server chose protocol version {description.protocol_version!r}, "
                f"which this client does not speak"
            )
        self.description = description
        link = self._link
        await self._conversation.send(
            Outgoing(_encode({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        )
        negotiated = getattr(link, "negotiated", None)
        if negotiated is not None:
            negotiated(description.protocol_version)

    async def reinitialize(self) -> None:
        """Open a new handshake-era session (the HTTP link calls this on a 404, once)."""
        self.reinitializations += 1
        log.warning("the server lost our session: re-initializing")
        await self._initialize()
        self._nursery.start_soon(self._renew_session_state)

    async def _renew_session_state(self) -> None:
        """A new handshake-era session knows nothing of the old one: set the log level and
        subscribe to the resources again."""
        try:
            if self.log_level is not None:
                await self._request_raw("logging/setLevel", {"level": self.log_level}, early=True)
            for uri in list(self._subscriptions):
                await self._request_raw("resources/subscribe", {"uri": uri}, early=True)
                log.info("subscribed again to %s on the new session", uri)
        except ClientError as exc:
            log.warning("could not renew the session's subscriptions: %s", loggable(exc))

    async def aclose(self) -> None:
        """Stop: fail what still waits, close the link (a stdio server is stopped)."""
        self._conversation.close()

    @property
    def protocol_version(self) -> str:
        return self.description.protocol_version if self.description else ""

    # -- the MCP surface --------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = _DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
        repeatable: bool | None = None,
        on_notification: NotificationCallback | None = None,
        on_request: ServerRequestHandler | None = None,
    ) -> Any:
        """Send any request; return its result decoded to Python objects.

        ``on_notification(note)`` is called (synchronously, in the reading task) with each
        notification the server sends on this request's own response stream (Streamable
        HTTP: the POST's SSE stream; MCP 2026-07-28 sends a request's log messages there),
        besides the client's ``on_notification``; progress goes to ``progress`` as before.
        ``on_request(method, params)`` answers the server's requests (sampling, elicitation,
        roots) that arrive on that stream, instead of the client's handlers; its
        :class:`PeerError` is the error answered. Links without per-request streams (stdio,
        TCP, Unix, pipes, WebSocket, legacy SSE) cannot tell which request a message belongs
        to: those go to the client's callbacks only."""
        raw = await self._request_raw(
            method,
            params,
            timeout=timeout,
            progress=progress,
            repeatable=repeatable,
            on_notification=on_notification,
            on_request=on_request,
        )
        return decode_value(raw, method)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        await self._conversation.wait_usable()
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._conversation.send(
            Outgoing(_encode(message), method, modern=self.era == "modern")
        )

    async def ping(self, *, timeout: float | None = _DEFAULT) -> None:
        """Handshake era: ``ping``. 2026-07-28 removed ping: ``server/discover`` instead."""
        if self.era == "modern":
            await self._request_raw("server/discover", {}, timeout=timeout)
        else:
            await self._request_raw("ping", None, timeout=timeout)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        page = await self._call("tools/list", _cursor(cursor), ListToolsResult)
        self._param_headers.learn(page.tools)
        return page

    async def all_tools(self) -> list[Tool]:
        """Every tool, following ``nextCursor`` page by page. Like every ``all_*`` method,
        it stops with :class:`ClientError` past ``max_list_pages`` pages or
        ``max_list_items`` items (naming the limit), and with :class:`BadMessage` when the
        server hands out a cursor it gave before (it would loop)."""
        return await self._all(self.list_tools, "tools", "tools/list")

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = _DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> CallToolResult:
        """Call a tool. A tool that failed is ``is_error=True`` in the result, not an
        exception; a server that answers with a task is an error here (use
        :meth:`call_tool_as_task`). ``on_notification``: the notifications (log messages)
        sent on this call's own response stream, as :meth:`request` says."""
        params = {"name": name, "arguments": dict(arguments or {})}
        try:
            return await self._call(
                "tools/call",
                params,
                CallToolResult,
                timeout=timeout,
                progress=progress,
                on_notification=on_notification,
            )
        except PeerError as exc:
            # -32020 HeaderMismatch: the tool mirrors arguments into Mcp-Param-* headers and
            # we did not know it yet (no tools/list seen): learn the tools, try once more.
            if exc.code != HEADER_MISMATCH or self._param_headers.knows(name):
                raise
            await self.all_tools()
            if not self._param_headers.knows(name):
                raise
            return await self._call(
                "tools/call",
                params,
                CallToolResult,
                timeout=timeout,
                progress=progress,
                on_notification=on_notification,
            )

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self._call("resources/list", _cursor(cursor), ListResourcesResult)

    async def all_resources(self) -> list[Resource]:
        return await self._all(self.list_resources, "resources", "resources/list")

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        return await self._call(
            "resources/templates/list", _cursor(cursor), ListResourceTemplatesResult
        )

    async def all_resource_templates(self) -> list[ResourceTemplate]:
        return await self._all(
            self.list_resource_templates, "resource_templates", "resources/templates/list"
        )

    async def read_resource(
        self, uri: str, *, timeout: float | None = _DEFAULT
    ) -> ReadResourceResult:
        return await self._call("resources/read", {"uri": uri}, ReadResourceResult, timeout=timeout)

    async def subscribe(self, uri: str) -> None:
        """Handshake era ``resources/subscribe`` (2026-07-28: use :meth:`listen`). The client
        subscribes again on a new session (after a reconnect or a lost session)."""
        await self._request_raw("resources/subscribe", {"uri": uri})
        self._subscriptions[uri] = self._subscriptions.get(uri, 0) + 1

    async def unsubscribe(self, uri: str) -> None:
        held = self._subscriptions.get(uri, 0)
        if held > 1:
            self._subscriptions[uri] = held - 1
            return  # another listener still watches it
        self._subscriptions.pop(uri, None)
        await self._request_raw("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        return await self._call("prompts/list", _cursor(cursor), ListPromptsResult)

    async def all_prompts(self) -> list[Prompt]:
        return await self._all(self.list_prompts, "prompts", "prompts/list")

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> GetPromptResult:
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self._call("prompts/get", params, GetPromptResult)

    async def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context: Mapping[str, Any] | None = None,
    ) -> CompleteResult:
        """``completion/complete``; ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``."""
        params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context is not None:
            params["context"] = dict(context)
        return await self._call("completion/complete", params, CompleteResult)

    async def set_logging_level(self, level: str) -> None:
        """Handshake era: ``logging/setLevel``. 2026-07-28: every later request carries the
        level in ``_meta["io.modelcontextprotocol/logLevel"]`` instead."""
        self.log_level = level
        if self.era == "handshake":
            await self._request_raw("logging/setLevel", {"level": level})

    # -- tasks -------------------------------------------------------------------------------

    async def call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl_ms: int | None = None,
    ) -> Task | CallToolResult:
        """Call a tool as a task. Handshake era (2025-11-25): asks for one with
        ``params.task``. 2026-07-28 (tasks extension): the server decides; a tool it runs
        inline answers with its result."""
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if self.era == "handshake":
            params["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
        raw = await self._request_raw("tools/call", params)
        data = decode_value(raw, "tools/call")
        if isinstance(data, dict) and isinstance(data.get("task"), dict):
            return _convert(data["task"], Task, "tools/call")
        if isinstance(data, dict) and data.get("resultType") == "task":
            return _convert(data, Task, "tools/call")
        return _decode(raw, CallToolResult, "tools/call")

    async def get_task(self, task_id: str) -> Task:
        return await self._call("tasks/get", {"taskId": task_id}, Task)

    async def task_result(self, task_id: str, *, timeout: float | None = _DEFAULT) -> Any:
        """The result of a finished task: 2025-11-25 ``tasks/result`` (blocks until the
        task ends); 2026-07-28: ``tasks/get`` polled at the server's interval until terminal."""
        if self.era == "handshake":
            return await self.request("tasks/result", {"taskId": task_id}, timeout=timeout)
        with trio.fail_after(math.inf if timeout is None or timeout is _DEFAULT else timeout):
            while True:
                task = await self.get_task(task_id)
                if task.status == "completed":
                    return task.result
                if task.status in ("failed", "cancelled"):
                    raise PeerError(-32603, f"task {task.status}", task.error)
                await trio.sleep((task.poll_interval_ms or task.poll_interval or 500) / 1000)

    async def cancel_task(self, task_id: str) -> Any:
        return await self.request("tasks/cancel", {"taskId": task_id})

    async def update_task(self, task_id: str, input_responses: Mapping[str, Any]) -> None:
        """2026-07-28 tasks extension: deliver input a task asked for."""
        await self.request(
            "tasks/update", {"taskId": task_id, "inputResponses": dict(input_responses)}
        )

    async def list_tasks(self, cursor: str | None = None) -> list[Task]:
        data = await self.request("tasks/list", _cursor(cursor))
        return [_convert(task, Task, "tasks/list") for task in data.get("tasks", [])]

    # -- batches -----------------------------------------------------------------------------

    async def batch(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any] | None]],
        *,
        timeout: float | None = _DEFAULT,
    ) -> list[Any]:
        """Send requests as one JSON-RPC batch; each item's result (decoded) or its
        :class:`PeerError`, in order. Allowed over stream transports and WebSocket in every
        era, and over HTTP only in a 2025-03-26 session (else :class:`ClientError`)."""
        link = self._link
        allows = getattr(link, "allows_batches", None)
        if allows is not None and not allows():
            raise ClientError("this transport and protocol revision do not allow batches")
        if timeout is _DEFAULT:
            timeout = self.timeout
        await self._conversation.wait_usable()
        modern = self.era == "modern"
        items: list[tuple[Any, str, bytes]] = []
        for method, params in calls:
            request_id = next(self._ids)
            body = dict(params or {})
            if modern:
                body["_meta"] = {**(body.get("_meta") or {}), **self._modern_meta()}
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if body:
                message["params"] = body
            items.append((request_id, method, _encode(message)))
        return await self._conversation.batch(items, modern=modern, timeout=timeout)

    # -- notifications -------------------------------------------------------------------------

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
        buffer: int = 256,
    ) -> AsyncIterator[trio.MemoryReceiveChannel[Notification]]:
        """Receive change notifications, in either era.

        2026-07-28: a ``subscriptions/listen`` request held open for the body (it is safe to
        repeat, so after a reconnect it is sent again and the server acknowledges it again:
        changes made while the link was down are not replayed, re-read the lists on a new
        ``notifications/subscriptions/acknowledged``). Handshake era: ``resources/subscribe``
        for each URI, then the session's notifications of the requested kinds.
        A listener that falls ``buffer`` notifications behind loses the newest ones (logged).
        """
        send, receive = trio.open_memory_channel[Notification](buffer)
        kinds = set()
        if tools:
            kinds.add("notifications/tools/list_changed")
        if prompts:
            kinds.add("notifications/prompts/list_changed")
        if resources:
            kinds.add("notifications/resources/list_changed")
        if resource_uris:
            kinds.add("notifications/resources/updated")
        if task_ids:
            kinds.update(("notifications/tasks", "notifications/tasks/status"))
        if self.era == "handshake":
            listener = Listener(send, frozenset(kinds))
            self._conversation.listeners.append(listener)
            try:
                for uri in resource_uris:
                    await self.subscribe(uri)
                async with receive:
                    yield receive
            finally:
                self._conversation.listeners.remove(listener)
                with trio.CancelScope(shield=True), trio.move_on_after(_CANCEL_SEND_TIMEOUT):
                    for uri in resource_uris:
                        with suppress(ClientError):
                            await self.unsubscribe(uri)
            return
        request_id = next(self._ids)  # the listen's id is its subscription id
        listener = Listener(send, frozenset(kinds), subscription_id=request_id)
        self._conversation.listeners.append(listener)
        filter_: dict[str, Any] = {
            "toolsListChanged": tools,
            "promptsListChanged": prompts,
            "resourcesListChanged": resources,
        }
        if resource_uris:
            filter_["resourceSubscriptions"] = list(resource_uris)
        if task_ids:
            filter_["taskIds"] = list(task_ids)
        try:
            async with trio.open_nursery() as nursery:

                async def hold() -> None:
                    try:
                        await self._request_raw(
                            "subscriptions/listen",
                            {"notifications": filter_},
                            timeout=None,
                            request_id=request_id,
                        )
                    except ClientError as exc:
                        log.warning("subscriptions/listen ended: %s", loggable(exc))
                    send.close()

                nursery.start_soon(hold)
                async with receive:
                    yield receive
                nursery.cancel_scope.cancel()
        finally:
            self._conversation.listeners.remove(listener)

    async def _all(
        self, lister: Callable[[str | None], Awaitable[Any]], field: str, method: str
    ) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        # Digests, not the cursors: a cursor may be as long as a message (4 MiB), and a
        # thousand of them kept would be the memory this bound is here to cap.
        seen: set[bytes] = set()
        for _page in range(self.max_list_pages):
            page = await lister(cursor)
            items.extend(getattr(page, field))
            if len(items) > self.max_list_items:
                raise ClientError(
                    f"{method}: the server listed more than {self.max_list_items} items "
                    "(max_list_items)"
                )
            cursor = page.next_cursor
            if not cursor:
                return items
            digest = hashlib.blake2b(cursor.encode(), digest_size=16).digest()
            if digest in seen:
                raise BadMessage(f"{method}: the server repeated the cursor {cursor[:50]!r}")
            seen.add(digest)
        raise ClientError(
            f"{method}: the server offered more than {self.max_list_pages} pages (max_list_pages)"
        )


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


def _decode(raw: msgspec.Raw, result_type: type[T], method: str) -> T:
    """``raw`` as ``result_type``; :class:`BadMessage` when it does not match, or is nested
    deeper than the decoder follows (``decode_value``)."""
    decoded: T = decode_value(raw, method, result_type)
    return decoded


def _convert(data: Any, result_type: type[T], method: str) -> T:
    try:
        return msgspec.convert(data, result_type)
    except msgspec.ValidationError as exc:
        raise BadMessage(f"{method}: the result does not match the schema: {exc}") from None
