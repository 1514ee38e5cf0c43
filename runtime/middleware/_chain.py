"""The middleware chain: ordered async callables around requests, notifications and the
three feature operations (tool calls, resource reads, prompt gets).

Zero cost when unused: ``runtime._compose.build_dispatcher`` wraps the era dispatcher in a
:class:`MiddlewareDispatcher` only when a server has middleware, so a server without any
runs exactly the code it would run without this package (``python -m benchmarks.http_floor
--opcodes`` shows it).

Where the chain sits: the wrapped dispatcher's ``route`` first lets the era dispatcher pick
the era of the request (``handlers/era.py``: ``select_era``; its refusals, such as -32022,
come before any middleware), then every request runs through the chain inside
``Dispatcher.dispatch``, so

- it runs inside the request's cancel scope (the engine opened it), and is cancelled,
  timed out (-32001) and answered exactly like a handler;
- a middleware that raises ``runtime.protocol.JSONRPCError`` answers with that error, and
  any other exception becomes -32603 with the detail logged (``Dispatcher.dispatch``);
- what it returns is the result (modern results then get ``resultType``, ``serverInfo``
  and cache hints from the era dispatcher's ``decorate``).

What is refused before the chain (the era's refusals here, the core's and the transports'
elsewhere) reaches the middleware that override ``on_refusal``: the wrapped dispatcher's
``on_refusal`` observer is set only when one does, and the core and the transports build a
``runtime.protocol.Refusal`` only when it is set.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec
import trio

from ..core import Dispatcher, Handler, NotificationHandler, RequestContext, Session
from ..protocol import (
    PROMPTS_GET,
    RESOURCES_READ,
    TOOLS_CALL,
    JSONRPCError,
    Refusal,
    method_not_found,
)

if TYPE_CHECKING:
    from ..features import App

__all__ = [
    "Middleware",
    "MiddlewareDispatcher",
    "Next",
    "PromptGet",
    "Request",
    "RequestMiddleware",
    "ResourceRead",
    "ToolCall",
    "as_middleware",
]

#: ``call_next()``: the rest of the chain and the handler; returns the result (or raises).
Next = Callable[[], Awaitable[Any]]
#: A plain function middleware: ``async def mw(request, call_next) -> result``.
RequestMiddleware = Callable[["Request", Next], Awaitable[Any]]

log = logging.getLogger("mcp_runtime.middleware")

_encode: Final = msgspec.json.encode
_decode: Final = msgspec.json.decode


class Request:
    """What a middleware sees of one request or notification.

    ``params`` is the decoded ``params`` object (decoded on first use); change it in place
    or assign a new one, and the handler gets the changed version. ``context`` is the core's
    ``RequestContext`` for what this view does not cover.
    """

    __slots__ = ("_params", "context", "started")

    def __init__(self, context: RequestContext) -> None:
        self.context = context
        self._params: dict[str, Any] | None = None
        #: ``time.perf_counter()`` when the chain started: for durations (a C call, far
        #: cheaper per request than ``trio.current_time()``).
        self.started = perf_counter()

    @property
    def method(self) -> str:
        return self.context.method

    @property
    def id(self) -> Any:
        """The JSON-RPC id (None for a notification)."""
        return self.context.id

    @property
    def is_notification(self) -> bool:
        return self.context.id is None

    @property
    def era(self) -> str:
        """``"modern"`` (2026-07-28, stateless) or ``"handshake"`` (2024-11-05..2025-11-25)."""
        return "modern" if self.context.modern else "handshake"

    @property
    def protocol_version(self) -> str | None:
        return self.context.protocol_version

    @property
    def principal(self) -> Any:
        """Who the transport authenticated (``runtime.auth.AccessToken`` with HTTP auth),
        else None."""
        return self.context.session.principal

    @property
    def session(self) -> Session:
        return self.context.session

    @property
    def transport(self) -> str:
        return self.context.session.transport

    @property
    def connection_id(self) -> str:
        return self.context.peer.connection_id

    @property
    def cancel_scope(self) -> trio.CancelScope | None:
        """The request's own cancel scope, when the engine opened one."""
        return self.context.cancel_scope

    @property
    def meta(self) -> dict[str, Any]:
        """``params._meta`` (an empty dict when absent)."""
        if self.context.meta is not None:
            return self.context.meta
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def params(self) -> dict[str, Any]:
        if self._params is None:
            raw = self.context.params
            decoded = _decode(raw) if raw is not None else {}
            self._params = decoded if isinstance(decoded, dict) else {}
        return self._params

    @params.setter
    def params(self, value: dict[str, Any]) -> None:
        self._params = value

    def _flush(self) -> None:
        """Hand the (possibly changed) params to the handler: re-encoded only when a
        middleware looked at them."""
        if self._params is not None:
            self.context.params = msgspec.Raw(_encode(self._params))
            # Any reading made of the params before (``RequestContext.prepared``) is void.
            self.context.prepared = None

    def __repr__(self) -> str:
        return f"<Request {self.method} id={self.id!r} era={self.era}>"


class _Operation:
    __slots__ = ("request",)

    def __init__(self, request: Request) -> None:
        self.request = request

    @property
    def principal(self) -> Any:
        return self.request.principal


class _NamedCall(_Operation):
    """An operation on a named thing with ``arguments`` (a tool call, a prompt get); change
    either to change the call."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self.request.params.get("name", ""))

    @name.setter
    def name(self, value: str) -> None:
        self.request.params["name"] = value

    @property
    def arguments(self) -> dict[str, Any]:
        params = self.request.params
        args = params.get("arguments")
        if not isinstance(args, dict):
            args = params["arguments"] = {}
        return args

    @arguments.setter
    def arguments(self, value: dict[str, Any]) -> None:
        self.request.params["arguments"] = value


class ToolCall(_NamedCall):
    """A ``tools/call``: ``name`` and ``arguments`` (change them to change the call).
    The result is the ``CallToolResult`` object (``{"content": [...], "isError": ...}``)."""

    __slots__ = ()


class ResourceRead(_Operation):
    """A ``resources/read`` of ``uri``; the result is ``{"contents": [...]}``."""

    __slots__ = ()

    @property
    def uri(self) -> str:
        return str(self.request.params.get("uri", ""))

    @uri.setter
    def uri(self, value: str) -> None:
        self.request.params["uri"] = value


class PromptGet(_NamedCall):
    """A ``prompts/get`` of ``name`` with ``arguments``; the result is
    ``{"messages": [...], "description"?: ...}``."""

    __slots__ = ()


class Middleware:
    """Subclass and override the hooks you need; the others cost nothing (a hook that is
    not overridden is left out of its chain).

    Each hook gets the subject and ``call_next``; it may look at or change the subject,
    await ``call_next()`` (once) and look at or change what it returns, return a result of
    its own without calling it (short-circuit), or raise ``runtime.protocol.JSONRPCError``.
    ``bind(app)`` is called once with the server when its dispatcher is built.
    """

    def bind(self, app: App) -> None:
        """Called once with the server this middleware serves."""

    async def on_request(self, request: Request, call_next: Next) -> Any:
        return await call_next()

    async def on_notification(self, request: Request, call_next: Next) -> None:
        await call_next()

    async def on_call_tool(self, call: ToolCall, call_next: Next) -> Any:
        return await call_next()

    async def on_read_resource(self, read: ResourceRead, call_next: Next) -> Any:
        return await call_next()

    async def on_get_prompt(self, get: PromptGet, call_next: Next) -> Any:
        return await call_next()

    def on_refusal(self, refusal: Refusal) -> None:
        """A message answered before the chain ran (``runtime.protocol.Refusal``): a frame
        that is not JSON-RPC, the in-flight cap (-32010), a duplicate id, a request before
        ``initialize``, a forbidden batch, an unsupported protocol version (-32022), and on
        HTTP the transport's own refusals (``status``: 503 shutting down, 400/404 for a
        missing or unknown session, the 2026-07-28 header rules, ...).

        Synchronous, called where the refusal is made (the connection's reader, the HTTP
        request's task): count or log, never block. An exception it raises is logged and
        dropped; the refusal is answered all the same."""


class _FunctionMiddleware(Middleware):
    """A plain ``async def mw(request, call_next)``: around requests only."""

    def __init__(self, fn: RequestMiddleware) -> None:
        self.fn = fn

    async def on_request(self, request: Request, call_next: Next) -> Any:
        return await self.fn(request, call_next)

    def __repr__(self) -> str:
        return f"<middleware {getattr(self.fn, '__qualname__', self.fn)!r}>"


def as_middleware(obj: Middleware | RequestMiddleware) -> Middleware:
    """A Middleware instance, a Middleware subclass (instantiated with no arguments), or a
    plain async function ``(request, call_next)``."""
    if isinstance(obj, Middleware):
        return obj
    if isinstance(obj, type) and issubclass(obj, Middleware):
        return obj()
    if callable(obj) and not isinstance(obj, type):
        return _FunctionMiddleware(obj)
    raise TypeError(f"not a middleware: {obj!r}")


_Hook = Callable[[Any, Next], Awaitable[Any]]


def _hooks(middleware: Iterable[Middleware], name: str) -> tuple[_Hook, ...]:
    """The bound ``name`` hooks of the middleware that override it, in order."""
    base = getattr(Middleware, name)
    return tuple(getattr(mw, name) for mw in middleware if getattr(type(mw), name) is not base)


def _sync_hooks(middleware: Iterable[Middleware], name: str) -> tuple[Callable[[Any], None], ...]:
    """The bound synchronous ``name`` hooks of the middleware that override it, in order."""
    return cast("tuple[Callable[[Any], None], ...]", _hooks(middleware, name))


def _run(hooks: Sequence[_Hook], index: int, subject: Any, last: Next) -> Awaitable[Any]:
    if index == len(hooks):
        return last()
    return hooks[index](subject, functools.partial(_run, hooks, index + 1, subject, last))


_OPERATIONS: Final = {
    TOOLS_CALL: (ToolCall, "on_call_tool"),
    RESOURCES_READ: (ResourceRead, "on_read_resource"),
    PROMPTS_GET: (PromptGet, "on_get_prompt"),
}


class MiddlewareDispatcher(Dispatcher):
    """``inner`` (the era dispatcher) with the chains of ``middleware`` around its handlers."""

    def __init__(self, inner: Dispatcher, middleware: Sequence[Middleware]) -> None:
        super().__init__(inner.requests, inner.notifications, batch_policy=inner.batch_policy)
        self.inner = inner
        self.rechain(middleware)

    def rechain(self, middleware: Sequence[Middleware]) -> None:
        """Serve with ``middleware`` from now on (a server mounted while serving adds its
        chain: ``runtime.ensemble._chains``). Each chain is one tuple, swapped whole: a request
        already in the chain finishes on the hooks it started with."""
        self.middleware = tuple(middleware)
        self._requests = _hooks(self.middleware, "on_request")
        self._notifications = _hooks(self.middleware, "on_notification")
        self._refusals = _sync_hooks(self.middleware, "on_refusal")
        if self._refusals:
            self.on_refusal = self._observe_refusal
        self._operations = {
            method: (kind, hooks)
            for method, (kind, name) in _OPERATIONS.items()
            if (hooks := _hooks(self.middleware, name))
        }

    def route(self, ctx: RequestContext) -> Handler | None:
        try:
            handler = self.inner.route(ctx)  # picks the era (may raise its refusal)
        except JSONRPCError as exc:
            if self._refusals:
                session = ctx.session
                self._observe_refusal(
                    Refusal(
                        exc.code,
                        exc.message,
                        session.transport,
                        ctx.peer.connection_id,
                        ctx.method,
                        ctx.id,
                        principal=session.principal,
                    )
                )
            raise
        return functools.partial(self._serve, handler)

    def _observe_refusal(self, refusal: Refusal) -> None:
        for hook in self._refusals:
            try:
                hook(refusal)
            except Exception:
                log.exception("on_refusal failed: %r", hook)

    def decorate(self, ctx: RequestContext, result: Any) -> Any:
        return self.inner.decorate(ctx, result)

    def route_notification(self, ctx: RequestContext) -> NotificationHandler | None:
        handler = self.inner.route_notification(ctx)
        if not self._notifications:
            return handler
        return functools.partial(self._serve_notification, handler)

    def around(self, ctx: RequestContext, handler: Handler) -> Awaitable[Any]:
        """Run ``handler(ctx)`` inside this dispatcher's chains for ``ctx`` (a mounted
        server's own middleware around the rest of its parent's chain: ``runtime.ensemble``)."""
        return self._serve(handler, ctx)

    async def _serve(self, handler: Handler | None, ctx: RequestContext) -> Any:
        request = Request(ctx)
        operation = self._operations.get(ctx.method)

        async def last() -> Any:
            if handler is None:
                raise method_not_found(ctx.method)
            if operation is None:
                request._flush()
                return await handler(ctx)
            kind, hooks = operation

            async def call() -> Any:
                request._flush()
                return await handler(ctx)

            return await _run(hooks, 0, kind(request), call)

        return await _run(self._requests, 0, request, last)

    async def _serve_notification(
        self, handler: NotificationHandler | None, ctx: RequestContext
    ) -> None:
        request = Request(ctx)

        async def last() -> None:
            request._flush()
            if handler is not None:
                await handler(ctx)

        await _run(self._notifications, 0, request, last)
