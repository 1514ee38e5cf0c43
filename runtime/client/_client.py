"""The client: the MCP surface, composed of collaborators with one job each.

- :class:`Conversation` (``_conversation``): JSON-RPC over the link, which it keeps open
  and re-opens after a loss; the request table; notifications; the server's requests.
- :class:`RequestBuilder` (``_outgoing``, sans-IO): each request encoded in the client's
  era (2026-07-28 ``_meta``, progress tokens, ``Mcp-Param-*`` headers).
- :class:`Caller` (``_caller``): one request from its parameters to its typed result,
  through 2026-07-28 input rounds and a task the server chose.
- :class:`Handshake` (``_handshake``): the era (``server/discover`` or ``initialize``),
  and a handshake-era session renewed after a reconnect or a lost session.
- :class:`Answers` (``_answers``): the application's handlers for the server's requests.
- :class:`Pages` (``_pages``): listings followed page by page, within bounds.
- ``listen`` (``_listen``): change notifications for as long as the caller listens.

This class holds them together and gives each MCP method its name and its result type.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

import msgspec
import trio

from ..protocol import (
    COMPLETION_COMPLETE,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    LATEST_HANDSHAKE_VERSION,
    LOGGING_SET_LEVEL,
    PING,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    SERVER_DISCOVER,
    TASKS_CANCEL,
    TASKS_LIST,
    TASKS_RESULT,
    TOOLS_CALL,
    TOOLS_LIST,
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
    Task,
    Tool,
)
from ._answers import Answers, RequestHandler
from ._backoff import Backoff
from ._caller import DEFAULT, Caller
from ._connectors import Connector
from ._conversation import (
    DEFAULT_MAX_SERVER_REQUESTS,
    Conversation,
    Notification,
    NotificationCallback,
    ServerRequestHandler,
)
from ._decode import convert_as, decode_as, decode_value
from ._errors import ClientError, PeerError
from ._handshake import Era, Handshake
from ._link import Link
from ._listen import listen
from ._outgoing import CLIENT_VERSION, RequestBuilder
from ._pages import MAX_LIST_ITEMS, MAX_LIST_PAGES, Pages
from ._types import ServerDescription

__all__ = [
    "MAX_LIST_ITEMS",
    "MAX_LIST_PAGES",
    "Client",
    "Era",
    "Notification",
    "RequestHandler",
    "choose_era",
    "keep_link",
]

log = logging.getLogger("mcp_runtime.client")

Progress = Callable[[float, float | None, str | None], Any]
#: How often ``task_result`` polls a 2026-07-28 task that names no interval (milliseconds).
_TASK_RESULT_POLL_MS = 500


class Client:
    """A connection to one MCP server. Made by :func:`runtime.client.open_client`.

    Every request method raises :class:`PeerError` for an error response,
    :class:`RequestTimeout` when the answer does not come in time, :class:`TransportLost` when
    the link is gone (and could not be brought back, or the request was not safe to repeat)
    and :class:`BadMessage` for a result of the wrong shape. ``timeout`` arguments default to
    the client's ``timeout``; None waits indefinitely.

    Any number of tasks may call it at once: each request has its own id, timeout and
    outcome. Cancelling one (its caller's scope, or its timeout) ends that request alone,
    and a request already sent is cancelled at the server too (``notifications/cancelled``,
    or the close of its 2026-07-28 POST stream). A request waits for the link to be usable
    (the handshake done, or resumed after a reconnect) within its own timeout. The client
    lives as long as the block of ``open_client`` that made it: after that, or once the
    link is gone for good, every request raises :class:`TransportLost`.
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
        self._pages = Pages(max_list_pages, max_list_items)
        self.connector = connector
        self.backoff = backoff if backoff is not None else Backoff()
        #: The application's handlers for the server's requests and input rounds.
        self.answers = Answers(sampling=sampling, elicitation=elicitation, roots=roots)
        self.capabilities = self.answers.capabilities
        self._builder = RequestBuilder(
            client_info or Implementation("mcp-runtime-client", CLIENT_VERSION),
            self.capabilities,
            tasks=tasks,
        )
        self._conversation = Conversation(
            connector,
            nursery,
            self.backoff,
            on_reconnect=self._after_reconnect,
            answer=self.answers.server_request,
            on_notification=on_notification,
            max_server_requests=max_server_requests,
        )
        self._caller = Caller(
            self._conversation,
            self._builder,
            self.answers,
            timeout=timeout,
            era="handshake" if era == "handshake" else "modern",
        )
        self._handshake = Handshake(
            self._caller, nursery, requested_era=era, handshake_version=handshake_version
        )

    # -- what the collaborators know ------------------------------------------------------------

    @property
    def era(self) -> Literal["modern", "handshake"]:
        """ "modern" or "handshake" once connected."""
        return self._caller.era

    @property
    def requested_era(self) -> Era:
        return self._handshake.requested_era

    @property
    def handshake_version(self) -> str:
        """The revision offered in ``initialize`` (2025-03-26 is the one with batches)."""
        return self._handshake.handshake_version

    @property
    def description(self) -> ServerDescription | None:
        """What the server said about itself (``initialize`` / ``server/discover``)."""
        return self._handshake.description

    @property
    def protocol_version(self) -> str:
        return self.description.protocol_version if self.description else ""

    @property
    def reinitializations(self) -> int:
        """Handshake sessions re-initialized after the server lost ours."""
        return self._handshake.reinitializations

    @property
    def reconnects(self) -> int:
        """Times the link was re-opened after a loss."""
        return self._conversation.reconnects

    @property
    def timeout(self) -> float | None:
        return self._caller.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._caller.timeout = value

    @property
    def client_info(self) -> Implementation:
        return self._builder.client_info

    @property
    def log_level(self) -> str | None:
        return self._builder.log_level

    @property
    def max_list_pages(self) -> int:
        """The most pages one ``all_*`` listing takes (see :meth:`all_tools`)."""
        return self._pages.max_pages

    @property
    def max_list_items(self) -> int:
        """The most items one ``all_*`` listing takes."""
        return self._pages.max_items

    @property
    def _link(self) -> Link | None:
        return self._conversation.link

    # -- lifecycle --------------------------------------------------------------------------

    async def _after_reconnect(self) -> None:
        await self._handshake.after_reconnect()

    async def reinitialize(self) -> None:
        """Open a new handshake-era session (the HTTP link calls this on a 404, once)."""
        await self._handshake.reinitialize()

    async def aclose(self) -> None:
        """Stop: fail what still waits, close the link (a stdio server is stopped)."""
        self._conversation.close()

    # -- the MCP surface --------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT,
        progress: Progress | None = None,
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
        raw = await self._caller.raw(
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
        await self._conversation.send(
            self._builder.notification(method, params, modern=self._caller.modern)
        )

    async def ping(self, *, timeout: float | None = DEFAULT) -> None:
        """Handshake era: ``ping``. 2026-07-28 removed ping: ``server/discover`` instead."""
        if self._caller.modern:
            await self._caller.raw(SERVER_DISCOVER, {}, timeout=timeout)
        else:
            await self._caller.raw(PING, None, timeout=timeout)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of tools. In the 2026-07-28 era a tool whose ``x-mcp-header`` marks are
        invalid is left out (and logged): 2026-07-28 streamable-http, "Schema Extension"."""
        page = await self._caller.call(TOOLS_LIST, _cursor(cursor), ListToolsResult)
        if self._caller.modern:
            kept = self._builder.param_headers.learn(page.tools)
            if len(kept) != len(page.tools):
                page = msgspec.structs.replace(page, tools=kept)
        return page

    async def all_tools(self) -> list[Tool]:
        """Every tool, following ``nextCursor`` page by page. Like every ``all_*`` method,
        it stops with :class:`ClientError` past ``max_list_pages`` pages or
        ``max_list_items`` items (naming the limit), and with :class:`BadMessage` when the
        server hands out a cursor it gave before (it would loop)."""
        return await self._pages.all(self.list_tools, "tools", TOOLS_LIST)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT,
        progress: Progress | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> CallToolResult:
        """Call a tool. A tool that failed is ``is_error=True`` in the result, not an
        exception; a call the server runs as a task (2026-07-28 tasks extension) is
        followed to the task's end (:meth:`call_tool_as_task` gives the task itself).
        ``on_notification``: the notifications (log messages) sent on this call's own
        response stream, as :meth:`request` says. A tool that the last listing left out for
        invalid ``x-mcp-header`` marks is refused here (:class:`ClientError`), before
        anything is sent."""
        headers = self._builder.param_headers
        rejected = headers.rejected.get(name) if self._caller.modern else None
        if rejected is not None:
            raise ClientError(f"tool {name!r} was left out of tools/list: {rejected}")
        params = {"name": name, "arguments": dict(arguments or {})}
        call = self._caller.call
        try:
            return await call(
                TOOLS_CALL,
                params,
                CallToolResult,
                timeout=timeout,
                progress=progress,
                on_notification=on_notification,
            )
        except PeerError as exc:
            # -32020 HeaderMismatch: the tool mirrors arguments into Mcp-Param-* headers and
            # we did not know it yet (no tools/list seen): learn the tools, try once more.
            if exc.code != HEADER_MISMATCH or headers.knows(name):
                raise
            await self.all_tools()
            if name in headers.rejected:
                raise ClientError(
                    f"tool {name!r} was left out of tools/list: {headers.rejected[name]}"
                ) from exc
            if not headers.knows(name):
                raise
            return await call(
                TOOLS_CALL,
                params,
                CallToolResult,
                timeout=timeout,
                progress=progress,
                on_notification=on_notification,
            )

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self._caller.call(RESOURCES_LIST, _cursor(cursor), ListResourcesResult)

    async def all_resources(self) -> list[Resource]:
        return await self._pages.all(self.list_resources, "resources", RESOURCES_LIST)

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        return await self._caller.call(
            RESOURCES_TEMPLATES_LIST, _cursor(cursor), ListResourceTemplatesResult
        )

    async def all_resource_templates(self) -> list[ResourceTemplate]:
        return await self._pages.all(
            self.list_resource_templates, "resource_templates", RESOURCES_TEMPLATES_LIST
        )

    async def read_resource(
        self, uri: str, *, timeout: float | None = DEFAULT
    ) -> ReadResourceResult:
        return await self._caller.call(
            RESOURCES_READ, {"uri": uri}, ReadResourceResult, timeout=timeout
        )

    async def subscribe(self, uri: str) -> None:
        """Handshake era ``resources/subscribe`` (2026-07-28: use :meth:`listen`). The client
        subscribes again on a new session (after a reconnect or a lost session)."""
        await self._handshake.subscribe(uri)

    async def unsubscribe(self, uri: str) -> None:
        await self._handshake.unsubscribe(uri)

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        return await self._caller.call(PROMPTS_LIST, _cursor(cursor), ListPromptsResult)

    async def all_prompts(self) -> list[Prompt]:
        return await self._pages.all(self.list_prompts, "prompts", PROMPTS_LIST)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> GetPromptResult:
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self._caller.call(PROMPTS_GET, params, GetPromptResult)

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
        return await self._caller.call(COMPLETION_COMPLETE, params, CompleteResult)

    async def set_logging_level(self, level: str) -> None:
        """Handshake era: ``logging/setLevel``. 2026-07-28: every later request carries the
        level in ``_meta["io.modelcontextprotocol/logLevel"]`` instead."""
        self._builder.log_level = level
        if not self._caller.modern:
            await self._caller.raw(LOGGING_SET_LEVEL, {"level": level})

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
        if not self._caller.modern:
            params["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
        raw = await self._caller.raw(TOOLS_CALL, params)
        data = decode_value(raw, TOOLS_CALL)
        if isinstance(data, dict) and isinstance(data.get("task"), dict):
            return convert_as(data["task"], Task, TOOLS_CALL)
        if isinstance(data, dict) and data.get("resultType") == "task":
            return convert_as(data, Task, TOOLS_CALL)
        return decode_as(raw, CallToolResult, TOOLS_CALL)

    async def get_task(self, task_id: str) -> Task:
        return await self._caller.get_task(task_id)

    async def task_result(self, task_id: str, *, timeout: float | None = DEFAULT) -> Any:
        """The result of a finished task: 2025-11-25 ``tasks/result`` (blocks until the
        task ends); 2026-07-28: ``tasks/get`` polled at the server's interval until terminal."""
        if not self._caller.modern:
            return await self.request(TASKS_RESULT, {"taskId": task_id}, timeout=timeout)
        with trio.fail_after(math.inf if timeout is None or timeout is DEFAULT else timeout):
            while True:
                task = await self.get_task(task_id)
                if task.status == "completed":
                    return task.result
                if task.status in ("failed", "cancelled"):
                    raise PeerError(INTERNAL_ERROR, f"task {task.status}", task.error)
                interval = task.poll_interval_ms or task.poll_interval or _TASK_RESULT_POLL_MS
                await trio.sleep(interval / 1000)

    async def cancel_task(self, task_id: str) -> Any:
        return await self.request(TASKS_CANCEL, {"taskId": task_id})

    async def update_task(self, task_id: str, input_responses: Mapping[str, Any]) -> None:
        """2026-07-28 tasks extension: deliver input a task asked for."""
        await self._caller.update_task(task_id, input_responses)

    async def list_tasks(self, cursor: str | None = None) -> list[Task]:
        data = await self.request(TASKS_LIST, _cursor(cursor))
        return [convert_as(task, Task, TASKS_LIST) for task in data.get("tasks", [])]

    # -- batches -----------------------------------------------------------------------------

    async def batch(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any] | None]],
        *,
        timeout: float | None = DEFAULT,
    ) -> list[Any]:
        """Send requests as one JSON-RPC batch; each item's result (decoded) or its
        :class:`PeerError`, in order. Allowed over stream transports and WebSocket in every
        era, and over HTTP only in a 2025-03-26 session (else :class:`ClientError`)."""
        allows = getattr(self._link, "allows_batches", None)
        if allows is not None and not allows():
            raise ClientError("this transport and protocol revision do not allow batches")
        if timeout is DEFAULT:
            timeout = self.timeout
        conversation = self._conversation
        await conversation.wait_usable()
        modern = self._caller.modern
        items: list[tuple[Any, str, bytes]] = []
        for method, params in calls:
            request_id = conversation.next_id()
            encoded = self._builder.batch_item(request_id, method, params, modern=modern)
            items.append((request_id, method, encoded))
        return await conversation.batch(items, modern=modern, timeout=timeout)

    # -- notifications -------------------------------------------------------------------------

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
        buffer: int = 256,
    ) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[Notification]]:
        """Receive change notifications, in either era (an async context manager).

        2026-07-28: a ``subscriptions/listen`` request held open for the body (it is safe to
        repeat, so after a reconnect it is sent again and the server acknowledges it again:
        changes made while the link was down are not replayed, re-read the lists on a new
        ``notifications/subscriptions/acknowledged``). Handshake era: ``resources/subscribe``
        for each URI, then the session's notifications of the requested kinds.
        A listener that falls ``buffer`` notifications behind loses the newest ones (logged).
        """
        return listen(
            self._caller,
            self._handshake,
            self._conversation.notifications,
            tools=tools,
            prompts=prompts,
            resources=resources,
            resource_uris=resource_uris,
            task_ids=task_ids,
            buffer=buffer,
        )


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


# -- starting a client: open_client's two steps -----------------------------------------------


async def keep_link(
    client: Client, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Hold ``client``'s link open, re-opened after a loss while the reconnection policy
    allows, until cancelled; started once the first link is open (``nursery.start``)."""
    await client._conversation.maintain(task_status=task_status)


async def choose_era(client: Client) -> None:
    """Choose ``client``'s era over its kept link (``server/discover`` or ``initialize``,
    ``Handshake.start``); the client is ready for requests once this returns."""
    await client._handshake.start()
