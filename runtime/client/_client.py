"""The client core: one object per server, over any link, in either protocol era.

Task tree (all in the nursery ``open_client`` opens)::

    open_client nursery
    ├── Client._maintain        opens the link (and re-opens it after a loss, with backoff),
    │   └── reads it            routes responses to waiting requests, notifications to
    │                           listeners and callbacks, server requests to handler tasks
    ├── one task per server-to-client request (sampling, elicitation, roots, ping)
    ├── Client._resume          after a reconnect: re-initialize (handshake era), then
    │                           re-send the requests that are safe to repeat
    └── (HTTP link) its POST and GET tasks

A request waits in its caller's task: it registers in the request table, sends, and waits
for its outcome under its own timeout. Cancelling the caller (or the timeout) sends
``notifications/cancelled`` (MCP 2025-11-25 basic/utilities/cancellation; over 2026-07-28
HTTP the link closes the POST's response stream instead, which is how that revision cancels).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, Literal, TypeVar

import msgspec
import trio
import trio.lowlevel

from ._backoff import Backoff
from ._connectors import Connector
from ._errors import BadMessage, ClientError, PeerError, RequestTimeout, TransportLost
from ._link import Failed, Link, Outgoing
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
    META_SUBSCRIPTION_ID,
    METHOD_NOT_FOUND,
    MODERN_VERSION,
    NAMED_METHODS,
    REPEATABLE_METHODS,
    TASKS_EXTENSION,
    Incoming,
    decode_incoming,
    encode_header_value,
)

__all__ = ["Client", "Era", "Notification", "RequestHandler"]

log = logging.getLogger("mcp_runtime.client")

Era = Literal["auto", "modern", "handshake"]
#: A handler for one kind of server-to-client request: gets ``params``, returns the result.
RequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]
T = TypeVar("T")
_DEFAULT: Final[Any] = object()
#: Input rounds (2026-07-28 mrtr) one request may go through before the client stops: a
#: server that keeps asking is looping, and each round costs the user an answer.
MAX_INPUT_ROUNDS: Final = 10
_CANCEL_SEND_TIMEOUT: Final = 2.0


class Notification(msgspec.Struct, frozen=True):
    """A notification from the server (``params`` decoded)."""

    method: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class _Outcome(msgspec.Struct):
    result: msgspec.Raw | None = None
    error: Any = None


class _ResultProbe(msgspec.Struct):
    result_type: str | None = msgspec.field(default=None, name="resultType")
    input_requests: dict[str, Any] | None = msgspec.field(default=None, name="inputRequests")
    request_state: str | None = msgspec.field(default=None, name="requestState")


class _Pending:
    __slots__ = ("done", "generation", "method", "out", "outcome", "progress", "repeatable")

    def __init__(
        self,
        method: str,
        out: Outgoing,
        repeatable: bool,
        progress: Callable[[float, float | None, str | None], Any] | None,
    ) -> None:
        self.method = method
        self.out = out
        self.repeatable = repeatable
        self.progress = progress
        self.done = trio.Event()
        self.outcome: _Outcome | ClientError | None = None
        self.generation = -1  # the link generation it was last sent on

    def deliver(self, outcome: _Outcome | ClientError) -> None:
        if not self.done.is_set():
            self.outcome = outcome
            self.done.set()


class _Listener:
    def __init__(
        self,
        send: trio.MemorySendChannel[Notification],
        kinds: frozenset[str],
        subscription_id: Any = None,
    ) -> None:
        self.send = send
        self.kinds = kinds
        self.subscription_id = subscription_id


_encode: Final = msgspec.json.encode
_probe_decoder: Final = msgspec.json.Decoder(_ResultProbe)


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
    ) -> None:
        if era not in ("auto", "modern", "handshake"):
            raise ValueError(f"unknown era {era!r} (expected 'auto', 'modern' or 'handshake')")
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
        self._handlers: dict[str, RequestHandler] = {}
        capabilities: dict[str, Any] = {}
        if sampling is not None:
            self._handlers["sampling/createMessage"] = sampling
            capabilities["sampling"] = {}
        if elicitation is not None:
            self._handlers["elicitation/create"] = elicitation
            capabilities["elicitation"] = {"form": {}, "url": {}}
        if roots is not None:
            self._handlers["roots/list"] = roots
            capabilities["roots"] = {"listChanged": False}
        self._tasks = tasks
        self.capabilities = capabilities
        self.on_notification = on_notification
        #: What the server said about itself (``initialize`` / ``server/discover``).
        self.description: ServerDescription | None = None
        #: "modern" or "handshake" once connected.
        self.era: Literal["modern", "handshake"] = "handshake" if era == "handshake" else "modern"
        self.log_level: str | None = None
        #: Times the link was re-opened after a loss, and handshake sessions re-initialized.
        self.reconnects = 0
        self.reinitializations = 0
        #: 2026-07-28 "Schema Extension": per tool, the arguments its input schema marks with
        #: ``x-mcp-header`` ({header name: property path}), learnt from tools/list.
        self._param_headers: dict[str, dict[str, tuple[str, ...]]] = {}
        #: Handshake-era resource subscriptions (uri -> holders), renewed on a new session.
        self._subscriptions: dict[str, int] = {}
        self._ids = itertools.count(1)
        self._pending: dict[Any, _Pending] = {}
        self._by_token: dict[str, _Pending] = {}
        self._listeners: list[_Listener] = []
        self._serving: dict[Any, trio.CancelScope] = {}
        self._link: Link | None = None
        self._generation = 0
        self._connected = trio.Event()
        self._ready = trio.Event()
        self._dead: TransportLost | None = None
        self._closing = False

    # -- the link ---------------------------------------------------------------------------

    async def _maintain(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the link open; after a loss re-open it per the backoff policy (when the
        connector allows), else fail every waiting request. Never raises after started."""
        started = False
        run = None
        while True:
            reason: str
            try:
                async with self.connector.open() as link:
                    self._link = link
                    self._generation += 1
                    self._connected.set()
                    if run is not None:
                        self.reconnects += 1
                        log.warning(
                            "reconnected to %s after %d attempt(s) in %.3f s",
                            self.connector.description,
                            run.attempts,
                            trio.current_time() - run.started,
                        )
                        self._nursery.start_soon(self._resume)
                    run = None
                    if not started:
                        started = True
                        task_status.started()
                    try:
                        await self._read(link)
                        # Raised inside the link's context so the connector can explain
                        # (a stdio server's exit status and last stderr lines).
                        raise TransportLost("the server closed the connection")
                    finally:
                        self._link = None
                        self._connected = trio.Event()
                        self._ready = trio.Event()
            except TransportLost as exc:
                reason = str(exc)
                if not started and not self.connector.reconnects:
                    raise
            if self._closing:
                self._fail_all(TransportLost("the client is closed"))
                return
            self._fail_unrepeatable(reason)
            if not self.connector.reconnects:
                self._die(TransportLost(f"{self.connector.description}: {reason}"))
                return
            if run is None:
                run = self.backoff.start(clock=trio.current_time())
                log.warning("lost %s: %s; reconnecting", self.connector.description, reason)
            delay = run.next_wait(trio.current_time())
            if delay is None:
                error = TransportLost(
                    f"{self.connector.description}: gave up reconnecting after "
                    f"{run.attempts} attempt(s) in {run.elapsed:.1f} s: {reason}",
                    attempts=run.attempts,
                )
                if not started:
                    raise error
                self._die(error)
                return
            await trio.sleep(delay)

    def _die(self, error: TransportLost) -> None:
        log.error("%s", error)
        self._dead = error
        self._fail_all(error)
        self._connected.set()  # wake waiters: they find _dead
        self._ready.set()

    def _fail_all(self, error: ClientError) -> None:
        for pending in list(self._pending.values()):
            pending.deliver(error)
        for listener in self._listeners:
            listener.send.close()

    def _fail_unrepeatable(self, reason: str) -> None:
        for pending in list(self._pending.values()):
            if not pending.repeatable and pending.generation >= 0:
                pending.deliver(
                    TransportLost(
                        f"{pending.method}: the connection was lost before the answer "
                        f"({reason}); not re-sent, it is not safe to repeat"
                    )
                )

    async def _resume(self) -> None:
        """After a reconnect: re-initialize (handshake era), then re-send what may be."""
        try:
            if self.era == "handshake":
                await self._initialize()
                await self._renew_session_state()
            self._ready.set()
            generation = self._generation
            for pending in list(self._pending.values()):
                if pending.repeatable and pending.generation < generation:
                    pending.generation = generation
                    log.info("re-sending %s id=%r", pending.method, pending.out.request_id)
                    await self._send_out(pending.out)
        except ClientError as exc:
            log.error("resuming after a reconnect failed: %s", exc)

    async def _send_out(self, out: Outgoing) -> None:
        link = self._link
        if link is None:
            raise TransportLost(f"{self.connector.description}: not connected")
        await link.send(out)

    async def _read(self, link: Link) -> None:
        while True:
            try:
                frame = await link.receive()
            except trio.EndOfChannel:
                return
            except BadMessage as exc:
                log.warning("bad message from the server: %s", exc)
                continue
            if isinstance(frame, Failed):
                if frame.request_id is None:  # the link's notification stream is gone
                    log.error("%s", frame.error)
                    for listener in self._listeners:
                        listener.send.close()
                    continue
                pending = self._pending.get(frame.request_id)
                if pending is not None:
                    pending.deliver(frame.error)
                continue
            try:
                items = decode_incoming(frame)
            except (msgspec.DecodeError, ValueError) as exc:
                log.warning("bad message from the server: %s: %.200r", exc, frame)
                continue
            for item in items:
                self._route(item)

    def _route(self, item: Incoming) -> None:
        if item.method is msgspec.UNSET:
            pending = self._pending.get(item.id)
            if pending is None:
                log.debug("a response for no waiting request id=%r (late or cancelled)", item.id)
                return
            if item.error is not msgspec.UNSET:
                pending.deliver(_Outcome(error=item.error))
            else:
                result = item.result
                pending.deliver(
                    _Outcome(result=result if isinstance(result, msgspec.Raw) else None)
                )
            return
        params: dict[str, Any] = {}
        if isinstance(item.params, msgspec.Raw):
            try:
                decoded = msgspec.json.decode(item.params)
            except msgspec.DecodeError:
                decoded = None
            if isinstance(decoded, dict):
                params = decoded
        if item.id is not msgspec.UNSET and item.id is not None:
            self._nursery.start_soon(self._serve_request, item.id, item.method, params)
            return
        self._notification(Notification(str(item.method), params))

    def _notification(self, note: Notification) -> None:
        method = note.method
        params = note.params
        if method == "notifications/progress":
            pending = self._by_token.get(str(params.get("progressToken")))
            if pending is not None and pending.progress is not None:
                try:
                    pending.progress(
                        float(params.get("progress", 0)), params.get("total"), params.get("message")
                    )
                except Exception:
                    log.exception("the progress callback of %s failed", pending.method)
            return
        if method == "notifications/cancelled":
            scope = self._serving.get(params.get("requestId"))
            if scope is not None:
                scope.cancel()
            return
        if method == "notifications/message":
            level = str(params.get("level", "info")).upper()
            logging.getLogger("mcp_runtime.client.server").log(
                getattr(logging, level, logging.INFO) if level != "NOTICE" else logging.INFO,
                "%s %s",
                params.get("logger", ""),
                params.get("data"),
            )
        meta = params.get("_meta")
        subscription = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        for listener in self._listeners:
            if listener.subscription_id is not None:
                if subscription != listener.subscription_id:
                    continue
            elif method not in listener.kinds:
                continue
            try:
                listener.send.send_nowait(note)
            except trio.WouldBlock:
                log.warning("a listener is not keeping up: dropped %s", method)
            except trio.ClosedResourceError:
                pass
        if self.on_notification is not None:
            try:
                self.on_notification(note)
            except Exception:
                log.exception("on_notification failed for %s", method)

    async def _serve_request(self, request_id: Any, method: Any, params: dict[str, Any]) -> None:
        """Answer a server-to-client request (handshake era) with the registered handler."""
        with trio.CancelScope() as scope:
            self._serving[request_id] = scope
            try:
                message = {"jsonrpc": "2.0", "id": request_id}
                if method == "ping":
                    message["result"] = {}
                else:
                    handler = self._handlers.get(str(method))
                    if handler is None:
                        message["error"] = {
                            "code": METHOD_NOT_FOUND,
                            "message": f"Method not found: {method}",
                        }
                    else:
                        try:
                            message["result"] = await handler(params)
                        except PeerError as exc:
                            message["error"] = {"code": exc.code, "message": exc.message}
                            if exc.data is not None:
                                message["error"]["data"] = exc.data
                        except Exception:
                            log.exception("the handler for %s failed", method)
                            message["error"] = {"code": -32603, "message": "Internal error"}
                try:
                    await self._send_out(Outgoing(_encode(message)))
                except TransportLost as exc:
                    log.warning("could not answer the server's %s: %s", method, exc)
            finally:
                del self._serving[request_id]

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

    async def _wait_usable(self, method: str, early: bool = False) -> None:
        """Wait until requests may be sent (``early``: the link is up, for the handshake
        itself); raise :class:`TransportLost` when the client died or closed."""
        while True:
            if self._dead is not None:
                raise TransportLost(str(self._dead), attempts=self._dead.attempts)
            if self._closing:
                raise TransportLost("the client is closed")
            event = self._connected if early else self._ready
            if event.is_set():
                return
            await event.wait()

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
            extra_headers = self._mirrored(name, body.get("arguments"))
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
        pending = _Pending(method, out, safe, progress)
        self._pending[request_id] = pending
        token = f"progress-{request_id}" if progress is not None else None
        if token is not None:
            self._by_token[token] = pending
        sent = False
        try:
            with trio.move_on_after(math.inf if timeout is None else timeout) as scope:
                while True:
                    await self._wait_usable(method, early)
                    generation = self._generation
                    if pending.generation < generation:
                        pending.generation = generation
                        try:
                            await self._send_out(out)
                            sent = True
                        except TransportLost:
                            if not safe:
                                raise
                            await (
                                trio.lowlevel.checkpoint()
                            )  # the maintainer notices and reconnects
                            continue
                    await pending.done.wait()
                    break
            if scope.cancelled_caught:
                if sent:
                    await self._cancel_remote(request_id, "timeout")
                raise RequestTimeout(method, float(timeout))  # type: ignore[arg-type]
        except trio.Cancelled:
            if sent and not pending.done.is_set():
                with trio.CancelScope(shield=True):
                    await self._cancel_remote(request_id, "cancelled by the client")
            raise
        finally:
            self._pending.pop(request_id, None)
            if token is not None:
                self._by_token.pop(token, None)
        outcome = pending.outcome
        if isinstance(outcome, ClientError):
            raise outcome
        assert outcome is not None
        if outcome.error is not None:
            raise _peer_error(outcome.error)
        if outcome.result is None:
            raise BadMessage(f"{method}: a response with neither result nor error")
        return outcome.result

    def _mirrored(self, tool: str, arguments: Any) -> list[tuple[str, str]]:
        """``Mcp-Param-{Name}`` headers for a tool call (2026-07-28 streamable-http
        "Schema Extension"): each argument the tool marks with ``x-mcp-header`` and the call
        gives, rendered as the server compares it (booleans ``true``/``false``, numbers as
        JSON, strings encoded as header values)."""
        found: list[tuple[str, str]] = []
        for header, path in self._param_headers.get(tool, {}).items():
            value: Any = arguments
            for step in path:
                value = value.get(step) if isinstance(value, dict) else None
            if value is None:
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (int, float)):
                text = msgspec.json.encode(value).decode()
            elif isinstance(value, str):
                text = encode_header_value(value)
            else:
                continue  # objects and arrays are not mirrored
            found.append((f"Mcp-Param-{header}", text))
        return found

    def _learn_tools(self, tools: Sequence[Tool]) -> None:
        for tool in tools:
            marked = _header_params(tool.input_schema)
            if marked:
                self._param_headers[tool.name] = marked
            else:
                self._param_headers.pop(tool.name, None)

    async def _cancel_remote(self, request_id: Any, reason: str) -> None:
        message = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with trio.move_on_after(_CANCEL_SEND_TIMEOUT):
            with suppress(TransportLost):
                await self._send_out(
                    Outgoing(
                        _encode(message),
                        "notifications/cancelled",
                        request_id,
                        modern=self.era == "modern",
                    )
                )

    async def _call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        result_type: type[T],
        *,
        timeout: float | None = _DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
    ) -> T:
        """A request whose result decodes as ``result_type``; answers 2026-07-28 input
        rounds (``resultType: "input_required"``) with the registered handlers, re-sending
        the request with ``inputResponses`` and the server's ``requestState``."""
        body = dict(params or {})
        for _round in range(MAX_INPUT_ROUNDS + 1):
            raw = await self._request_raw(method, body, timeout=timeout, progress=progress)
            probe = _probe_decoder.decode(raw) if b"resultType" in bytes(raw) else _ResultProbe()
            if probe.result_type == "task" and result_type is not Task:
                # 2026-07-28 tasks extension: the server chose to run it as a task.
                task = _decode(raw, Task, method)
                return _convert(await self._await_task(task, timeout), result_type, method)
            if probe.result_type != "input_required":
                return _decode(raw, result_type, method)
            body["inputResponses"] = await self._answer_inputs(probe.input_requests or {})
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
                        responses = await self._answer_inputs(fresh)
                        answered.update(responses)
                        await self.update_task(task.task_id, responses)
                        task = await self.get_task(task.task_id)
                        continue
                await trio.sleep((task.poll_interval_ms or task.poll_interval or 200) / 1000)
                task = await self.get_task(task.task_id)

    async def _answer_inputs(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            handler = self._handlers.get(str(method))
            if handler is None:
                raise ClientError(
                    f"the server asked for {method!r} input and no handler is registered for it"
                )
            answers[key] = await handler(request.get("params") or {})
        return answers

    # -- lifecycle --------------------------------------------------------------------------

    async def _start(self) -> None:
        """Choose the era: discover (modern), initialize (handshake) or probe (auto)."""
        if self.requested_era in ("auto", "modern"):
            try:
                await self._discover()
                self.era = "modern"
                self._ready.set()
                return
            except PeerError as exc:
                if self.requested_era == "modern":
                    raise
                log.info("server/discover refused (%s): falling back to initialize", exc)
        self.era = "handshake"
        await self._initialize()
        self._ready.set()

    async def _discover(self) -> ServerDescription:
        raw = await self._request_raw(
            "server/discover", {}, modern=True, repeatable=True, early=True
        )
        data = msgspec.json.decode(raw)
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
        await self._send_out(
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
            log.warning("could not renew the session's subscriptions: %s", exc)

    async def aclose(self) -> None:
        """Stop: fail what still waits, close the link (a stdio server is stopped)."""
        self._closing = True
        self._fail_all(TransportLost("the client is closed"))

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
    ) -> Any:
        """Send any request; return its result decoded to Python objects."""
        raw = await self._request_raw(
            method, params, timeout=timeout, progress=progress, repeatable=repeatable
        )
        return msgspec.json.decode(raw)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        await self._wait_usable(method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send_out(Outgoing(_encode(message), method, modern=self.era == "modern"))

    async def ping(self, *, timeout: float | None = _DEFAULT) -> None:
        """Handshake era: ``ping``. 2026-07-28 removed ping: ``server/discover`` instead."""
        if self.era == "modern":
            await self._request_raw("server/discover", {}, timeout=timeout)
        else:
            await self._request_raw("ping", None, timeout=timeout)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        page = await self._call("tools/list", _cursor(cursor), ListToolsResult)
        self._learn_tools(page.tools)
        return page

    async def all_tools(self) -> list[Tool]:
        """Every tool, following ``nextCursor`` page by page."""
        return await self._all(self.list_tools, "tools")

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = _DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
    ) -> CallToolResult:
        """Call a tool. A tool that failed is ``is_error=True`` in the result, not an
        exception; a server that answers with a task is an error here (use
        :meth:`call_tool_as_task`)."""
        params = {"name": name, "arguments": dict(arguments or {})}
        try:
            return await self._call(
                "tools/call", params, CallToolResult, timeout=timeout, progress=progress
            )
        except PeerError as exc:
            # -32020 HeaderMismatch: the tool mirrors arguments into Mcp-Param-* headers and
            # we did not know it yet (no tools/list seen): learn the tools, try once more.
            if exc.code != HEADER_MISMATCH or name in self._param_headers:
                raise
            await self.all_tools()
            if name not in self._param_headers:
                raise
            return await self._call(
                "tools/call", params, CallToolResult, timeout=timeout, progress=progress
            )

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self._call("resources/list", _cursor(cursor), ListResourcesResult)

    async def all_resources(self) -> list[Resource]:
        return await self._all(self.list_resources, "resources")

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        return await self._call(
            "resources/templates/list", _cursor(cursor), ListResourceTemplatesResult
        )

    async def all_resource_templates(self) -> list[ResourceTemplate]:
        return await self._all(self.list_resource_templates, "resource_templates")

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
        return await self._all(self.list_prompts, "prompts")

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
        data = msgspec.json.decode(raw)
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
        await self._wait_usable("batch")
        entries: list[_Pending] = []
        items = []
        for method, params in calls:
            request_id = next(self._ids)
            body = dict(params or {})
            if self.era == "modern":
                body["_meta"] = {**(body.get("_meta") or {}), **self._modern_meta()}
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if body:
                message["params"] = body
            items.append(message)
            pending = _Pending(method, Outgoing(b"", method, request_id), False, None)
            pending.generation = self._generation
            self._pending[request_id] = pending
            entries.append(pending)
        out = Outgoing(
            _encode(items),
            "batch",
            None,
            batch_ids=[p.out.request_id for p in entries],
            expects_response=True,
        )
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self._send_out(out)
                for pending in entries:
                    await pending.done.wait()
        except trio.TooSlowError:
            raise RequestTimeout("batch", float(timeout or 0)) from None
        finally:
            for pending in entries:
                self._pending.pop(pending.out.request_id, None)
        results: list[Any] = []
        for pending in entries:
            outcome = pending.outcome
            if isinstance(outcome, ClientError):
                results.append(outcome)
            elif outcome is None or outcome.error is not None:
                results.append(_peer_error(outcome.error if outcome else None))
            else:
                results.append(msgspec.json.decode(outcome.result) if outcome.result else None)
        return results

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
            listener = _Listener(send, frozenset(kinds))
            self._listeners.append(listener)
            try:
                for uri in resource_uris:
                    await self.subscribe(uri)
                async with receive:
                    yield receive
            finally:
                self._listeners.remove(listener)
                with trio.CancelScope(shield=True), trio.move_on_after(_CANCEL_SEND_TIMEOUT):
                    for uri in resource_uris:
                        with suppress(ClientError):
                            await self.unsubscribe(uri)
            return
        request_id = next(self._ids)  # the listen's id is its subscription id
        listener = _Listener(send, frozenset(kinds), subscription_id=request_id)
        self._listeners.append(listener)
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
                        log.warning("subscriptions/listen ended: %s", exc)
                    send.close()

                nursery.start_soon(hold)
                async with receive:
                    yield receive
                nursery.cancel_scope.cancel()
        finally:
            self._listeners.remove(listener)

    async def _all(self, lister: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await lister(cursor)
            items.extend(getattr(page, field))
            cursor = page.next_cursor
            if not cursor:
                return items
            if cursor in seen:
                raise BadMessage(f"the server repeated the cursor {cursor[:50]!r}")
            seen.add(cursor)


def _header_params(schema: Any) -> dict[str, tuple[str, ...]]:
    """{header name: property path} for the ``x-mcp-header`` annotations of an input schema,
    following ``properties`` chains only (2026-07-28 streamable-http "Schema Extension")."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        properties = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(properties, dict):
            return
        for key, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            header = sub.get("x-mcp-header")
            if isinstance(header, str) and header:
                found[header] = (*path, key)
            walk(sub, (*path, key))

    walk(schema, ())
    return found


def _cursor(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


def _decode(raw: msgspec.Raw, result_type: type[T], method: str) -> T:
    try:
        return msgspec.json.decode(raw, type=result_type)
    except msgspec.DecodeError as exc:
        raise BadMessage(f"{method}: the result does not match the schema: {exc}") from None


def _convert(data: Any, result_type: type[T], method: str) -> T:
    try:
        return msgspec.convert(data, result_type)
    except msgspec.ValidationError as exc:
        raise BadMessage(f"{method}: the result does not match the schema: {exc}") from None


def _peer_error(error: Any) -> PeerError:
    if not isinstance(error, dict):
        return PeerError(-32603, f"malformed error object {error!r:.100}")
    code = error.get("code")
    return PeerError(
        code if isinstance(code, int) else -32603,
        str(error.get("message", "")),
        error.get("data"),
    )
