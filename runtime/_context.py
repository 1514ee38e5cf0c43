"""``Context``: what a tool, resource or prompt function may ask the runtime for."""

from __future__ import annotations

import functools
import logging
from typing import Any

from .core import RequestContext, Session
from .features import (
    INPUT_METHODS,
    App,
    BecomeTask,
    InputRequired,
    InputRound,
    TaskRecord,
    check_capability,
    check_response,
    required_capability,
    to_contents,
)
from .protocol import (
    ELICITATION_CREATE,
    LOG_LEVELS,
    LOG_MESSAGE,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROGRESS_TOKEN,
    META_RELATED_TASK,
    PING,
    PROGRESS,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    RequestId,
)

__all__ = ["Context"]

log = logging.getLogger("mcp_runtime.context")
#: 2025-11-25 basic/utilities/tasks: the ``_meta`` key tying a message to its task.


class Context:
    """Injected into a handler function whose parameter is annotated ``Context``.

    Methods that send notifications wait only while the connection's write queue is full;
    they raise nothing when the connection is closing (the output is dropped and logged).
    """

    __slots__ = (
        "_closed",
        "_defer_task",
        "_last_progress",
        "_meta",
        "_request",
        "_round",
        "_state",
        "server",
        "task",
    )

    def __init__(
        self,
        request: RequestContext,
        server: App,
        meta: dict[str, Any] | None = None,
        round: InputRound | None = None,
        task: TaskRecord | None = None,
        defer_task: bool = False,
    ) -> None:
        self._request = request
        self._state: dict[str, Any] | None = None
        #: True while a deferred-task tool runs in its request (become_task may hand off).
        self._defer_task = defer_task
        self._round = round
        #: The task this call runs as (tasks extension / 2025-11-25 tasks), else None.
        self.task = task
        self._last_progress: float | None = None
        self._closed = False
        self._meta = meta if meta is not None else (request.meta or {})
        self.server = server

    def close(self) -> None:
        """Called by the runtime when the handler has returned: later progress is dropped
        (MCP basic/utilities/progress: notifications stop after completion)."""
        self._closed = True

    @property
    def request_id(self) -> RequestId | None:
        return self._request.id

    @property
    def method(self) -> str:
        return self._request.method

    @property
    def session(self) -> Session:
        return self._request.session

    @property
    def protocol_version(self) -> str | None:
        """The revision this request is served at (per request in the modern era)."""
        return self._request.protocol_version

    @property
    def cancelled(self) -> bool:
        """True once the request was cancelled (client ``notifications/cancelled``, timeout,
        or shutdown). trio delivers the cancellation at the next checkpoint; this lets sync
        code or a cleanup path ask without one."""
        scope = self._request.cancel_scope
        return scope is not None and scope.cancel_called

    async def read_resource(self, uri: str) -> list[Any]:
        """Read one of this server's own resources (static or from a template) and return
        its contents, as ``resources/read`` would. Raises ResourceNotFoundError."""
        definition, args = self.server.registry.resolve_resource(uri)
        sig = definition.signature
        kwargs = sig.to_kwargs(args)
        if sig.context_param is not None:
            kwargs[sig.context_param] = self
        threads, owner = self.server.worker_threads, self._request.peer.connection_id
        value = await sig.call(definition.fn, kwargs, threads, owner)
        return to_contents(uri, value, definition.mime_type)

    @property
    def principal(self) -> Any:
        """Who is calling, as authentication established it (``runtime.auth.AccessToken``
        with ``serve_http(auth=...)``); None when the transport does not authenticate."""
        return self._request.session.principal

    @property
    def modern(self) -> bool:
        """True for a stateless 2026-07-28 request, False in the handshake era."""
        return self._request.modern

    @property
    def client_info(self) -> dict[str, Any] | None:
        if self._request.modern:
            info = self._meta.get(META_CLIENT_INFO)
            return info if isinstance(info, dict) else None
        return self._request.session.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._request.client_capabilities

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``params._meta`` (empty when absent)."""
        return self._meta

    @property
    def request_state(self) -> dict[str, Any]:
        """The handler's own data for this request, kept across input rounds: read and
        change it freely (JSON values). In the 2026-07-28 era it travels, integrity
        protected and expiring with the rest, in the ``requestState`` of an
        ``input_required`` result and comes back on the client's retry (basic/patterns/
        mrtr); in the handshake era and in a task the call never leaves the server, so it
        is a plain dict for the call's life. Sealed state is limited to 256 KiB."""
        if self._round is not None:
            return self._round.state
        if self._state is None:
            self._state = {}
        return self._state

    async def close_sse_stream(self) -> bool:
        """End this request's SSE response stream now, before the answer (Streamable HTTP,
        handshake era: 2025-11-25 basic/transports "Resumability and Redelivery", SEP-1699
        polling). The request runs on; the client reconnects with ``GET`` and
        ``Last-Event-ID`` after the stream's ``retry`` interval and receives what this
        request sends from then on, its answer included. Returns False where there is no
        such stream (other transports, the 2026-07-28 era, a JSON answer)."""
        close = self._request.session.close_stream
        if close is None or self._request.modern or self._request.id is None:
            return False
        return close(self._request.id)

    @property
    def lifespan_state(self) -> Any:
        """What the server's ``lifespan`` yielded (None without one)."""
        return getattr(self.server, "state", None)

    @property
    def progress_token(self) -> str | int | None:
        token = self._meta.get(META_PROGRESS_TOKEN)
        return token if isinstance(token, str | int) else None

    @property
    def _related(self) -> RequestId | None:
        """The request this call's messages belong to on the wire: none for a handshake-era
        task (its creating request was answered with CreateTaskResult, which ended that
        request's stream; unrelated, Streamable HTTP sends them on the session's GET
        stream: 2025-11-25 basic/utilities/tasks, "Task Progress Notifications": the
        ``progressToken`` stays valid for the task's lifetime)."""
        if self.task is not None and not self._request.modern:
            return None
        return self._request.id

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the client asked for progress (else a no-op).

        MCP basic/utilities/progress: "The progress value MUST increase with each
        notification" and notifications stop once the request completed. A value that does
        not increase, or a call after the handler returned, is dropped (and logged).
        """
        token = self.progress_token
        if token is None:
            return
        if self._closed or (self._last_progress is not None and progress <= self._last_progress):
            log.debug("dropping progress %r for request %r", progress, self._request.id)
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._request.peer.notify(PROGRESS, params, related=self._related)

    async def log(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` when the client's level lets it through."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        # Handshake era: the session's logging/setLevel. Modern: only when this request
        # carries io.modelcontextprotocol/logLevel (2026-07-28 server/utilities/logging).
        if self._request.modern:
            requested = self._meta.get(META_LOG_LEVEL)
            threshold = requested if requested in LOG_LEVELS else None
        else:
            # Before logging/setLevel: the server's documented default (2025-11-25
            # server/utilities/logging leaves the initial level to the server).
            threshold = self._request.session.log_level or self.server.default_log_level
        if threshold is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._request.peer.notify(LOG_MESSAGE, params, related=self._related)

    async def debug(self, data: Any) -> None:
        """Send a log message at level ``debug`` (:meth:`log`)."""
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        """Send a log message at level ``info`` (:meth:`log`)."""
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        """Send a log message at level ``warning`` (:meth:`log`)."""
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        """Send a log message at level ``error`` (:meth:`log`)."""
        await self.log("error", data)

    # -- asking the client for input (both eras) ---------------------------------------------

    async def ask(
        self,
        method: str,
        params: dict[str, Any],
        *,
        key: str | None = None,
        timeout: float = 300.0,
    ) -> Any:
        """Ask the client for input and return its result (a dict).

        Handshake era: sends the server-to-client request and waits up to ``timeout``
        seconds. Modern era: raises :class:`InputRequired` the first time; on the client's
        retry the same call returns the client's answer. Only ``tools/call``,
        ``resources/read`` and ``prompts/get`` may ask in the modern era.

        Raises JSONRPCError(-32021) when the client did not declare the capability the
        request needs (MCP 2026-07-28 basic/index; the server MUST NOT rely on it).
        """
        check_capability(self.client_capabilities, required_capability(method, params))
        request = self._request
        if self.task is not None and request.modern:
            # Tasks extension: the task moves to input_required and the answer arrives
            # through tasks/update (SEP-2663), not through a retry. An answer gathered in
            # an input round before the call became a task (become_task) comes back as is.
            if self._round is None:
                self._round = InputRound({})
            name = key or self._round.next_key(method)
            if name in self._round.responses:
                return check_response(name, method, self._round.responses[name])
            answers = await self.task.inputs({name: {"method": method, "params": params}})
            return answers[name]  # checked by tasks/update
        if not request.modern:
            if self.task is not None:
                return await self._ask_as_task(method, params, timeout)
            return await request.peer.request(method, params, timeout=timeout, related=request.id)
        if request.method not in INPUT_METHODS or self._round is None:
            raise RuntimeError(f"{request.method} cannot ask the client for input (MRTR)")
        name = key or self._round.next_key(method)
        if name in self._round.responses:
            return check_response(name, method, self._round.responses[name])
        raise InputRequired({name: {"method": method, "params": params}})

    async def ask_all(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Ask several things at once and return every answer, by key.

        ``requests`` maps keys to input requests (``{"method": ..., "params": ...}``, as
        ``InputRequired`` takes them). Modern era: one ``input_required`` round lists them
        all (2026-07-28 basic/patterns/mrtr); a retry that answers only some of them gets
        the rest asked again. As a task, the task waits in ``input_required`` until all are
        answered (tasks/update may answer them one at a time). Handshake era: the requests
        go to the client one after the other. -32021 when a capability is missing.
        """
        for asked in requests.values():
            check_capability(
                self.client_capabilities,
                required_capability(asked["method"], asked.get("params", {})),
            )
        request = self._request
        if not request.modern:
            if self.task is not None:
                return {
                    key: await self._ask_as_task(value["method"], value.get("params", {}), 300.0)
                    for key, value in requests.items()
                }
            return {
                key: await request.peer.request(
                    value["method"], value.get("params", {}), timeout=300.0, related=request.id
                )
                for key, value in requests.items()
            }
        if self._round is None:
            if self.task is None:
                raise RuntimeError(f"{request.method} cannot ask the client for input (MRTR)")
            self._round = InputRound({})
        known = self._round.responses
        missing = {key: value for key, value in requests.items() if key not in known}
        if missing:
            if self.task is None:
                raise InputRequired(missing)
            known.update(await self.task.inputs(missing))
        return {
            key: check_response(key, value["method"], known[key]) for key, value in requests.items()
        }

    async def _ask_as_task(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """A handshake-era task asks the client: the request carries the task's id (MCP
        2025-11-25 basic/utilities/tasks, "Associating Task-Related Messages": MUST) and the
        task reads ``input_required`` until the answer comes ("Input Required Status")."""
        task = self.task
        assert task is not None
        meta = dict(params.get("_meta") or {})
        meta[META_RELATED_TASK] = {"taskId": task.task_id}
        # Not related to the creating request: its answer (CreateTaskResult) ends its
        # stream, maybe before this is sent; unrelated, HTTP sends it on the session's GET
        # stream ("clients SHOULD expect messages to be delivered on any SSE stream").
        ask = functools.partial(
            self._request.peer.request, method, {**params, "_meta": meta}, timeout=timeout
        )
        return await task.asking(ask)

    async def become_task(self) -> None:
        """Continue this ``tools/call`` as a task (tools registered with
        ``@app.tool(task=..., defer_task=True)``).

        Until this call the tool runs in its request, so it may first ask for input in
        ordinary ``input_required`` rounds; here the request answers ``CreateTaskResult``
        and the tool runs again from the top as the task, every earlier ``ask`` returning
        its answer at once (2026-07-28 tasks extension, "MRTR then task" composition).
        Already a task, or a client without task support: returns at once and the call
        goes on as it is.
        """
        if self.task is None and self._request.modern and self._defer_task:
            raise BecomeTask(dict(self._round.responses) if self._round is not None else {})

    async def elicit(
        self, message: str, schema: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Ask the user for structured input (form mode). Returns the ElicitResult:
        ``{"action": "accept" | "decline" | "cancel", "content": {...}}``."""
        params: dict[str, Any] = {"message": message, "requestedSchema": schema}
        version = self.protocol_version or ""
        if self.modern or version >= "2025-11-25":
            params["mode"] = "form"
        result: dict[str, Any] = await self.ask(ELICITATION_CREATE, params, key=key)
        return result

    async def elicit_url(
        self, message: str, url: str, *, elicitation_id: str | None = None, key: str | None = None
    ) -> dict[str, Any]:
        """Send the user to a URL (URL mode, 2025-11-25 and later)."""
        params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if not self.modern:
            import secrets

            # 2025-11-25 client/elicitation: URL mode carries an elicitationId (removed in
            # 2026-07-28, where requestState correlates the retry instead).
            params["elicitationId"] = elicitation_id or secrets.token_urlsafe(16)
        result: dict[str, Any] = await self.ask(ELICITATION_CREATE, params, key=key)
        return result

    async def sample(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        key: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion (``sampling/createMessage``)."""
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **extra}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        result: dict[str, Any] = await self.ask(SAMPLING_CREATE_MESSAGE, params, key=key)
        return result

    async def ping(self, *, timeout: float = 30.0) -> None:
        """Ping the client (handshake era only: the modern revision removed ping)."""
        if self._request.modern:
            raise RuntimeError("ping does not exist in the 2026-07-28 revision")
        await self._request.peer.request(PING, None, timeout=timeout, related=self._request.id)

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``)."""
        result = await self.ask(ROOTS_LIST, {}, key=key)
        roots: list[dict[str, Any]] = result.get("roots", [])
        return roots
