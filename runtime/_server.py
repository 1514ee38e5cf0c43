"""``Server``: the user's app object: decorators to register features, ``serve_*`` to run.

A facade over collaborators with one job each: the ``Registrar`` (the decorators' work: a
function read into a definition for the ``Registry`` of ``runtime.features``;
``_definitions``); the ``Identity`` (the ``serverInfo`` it sends; ``_identity``); the
``Pipeline`` (the middleware chain and the dispatcher the composition root, ``_compose``,
builds with the MCP handlers; ``_pipeline``); the ``Lifetime`` (lifespan, task nursery,
shutdown; ``_lifetime``); ``Serving`` (each transport wired to the server; ``_serving``);
``Mounts`` (the servers mounted in this one; ``runtime.ensemble``). Each receives what it
needs as values or a small Protocol, never the ``Server`` class. See docs/architecture.md.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar, Unpack, cast, overload

import trio

from ._compose import build_dispatcher
from ._definitions import PromptOptions, Registrar, ResourceOptions, ToolOptions
from ._identity import Identity
from ._lifetime import Lifetime, run_with_signals
from ._pipeline import Pipeline
from ._serving import Serving
from .core import Connection, Dispatcher, Limits, MessageChannel, Session
from .ensemble import Mount, Mounts
from .features import (
    Completer,
    CursorCodec,
    Registry,
    StateSealer,
    TaskTable,
    WorkerThreads,
)
from .protocol import LOG_LEVELS, RESOURCES_READ

if TYPE_CHECKING:
    # The network transports and auth load on first use (start-up time of stdio servers).
    import socket
    from collections.abc import Sequence

    from .auth import AuthConfig
    from .middleware import Metrics, Middleware, RequestMiddleware
    from .stores import Store
    from .transports import EventStore, FramingName, HttpLimits

__all__ = ["Lifespan", "Server"]

F = TypeVar("F", bound=Callable[..., Any])
#: ``lifespan(app)`` -> an async context manager whose value becomes ``app.state``.
Lifespan = Callable[["Server"], AbstractAsyncContextManager[Any]]
C = TypeVar("C", bound=Completer)
M = TypeVar("M", bound=Callable[..., Any])
V = TypeVar("V")
#: ``run(transport)``: the serve method each transport name runs.
_RUN: Final = {
    "stdio": "serve_stdio",
    "tcp": "serve_tcp",
    "unix": "serve_unix",
    "http": "serve_http",
    "sse": "serve_sse",
    "ws": "serve_websocket",
    "pipe": "serve_pipe",
}


class _InfoField(Generic[V]):
    """A field of a server's ``Identity`` (``Server.server_info``), read and set as the
    server's own attribute: setting one makes ``serverInfo`` again on its next use."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, server: None, owner: type) -> _InfoField[V]: ...
    @overload
    def __get__(self, server: Server, owner: type) -> V: ...
    def __get__(self, server: Server | None, owner: type) -> _InfoField[V] | V:
        return self if server is None else cast(V, getattr(server._identity, self.name))

    def __set__(self, server: Server, value: V) -> None:
        identity = server._identity
        setattr(identity, self.name, value)
        identity.info = None


class Server:
    """An MCP server. Register features with the decorators, then serve it.

    ```python
    app = Server("demo")

    @app.tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b
    ```
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        website_url: str | None = None,
        limits: Limits | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        cache_hints: dict[str, tuple[int, Literal["public", "private"]]] | None = None,
        page_size: int | None = None,
        state_secret: bytes | None = None,
        state_ttl: float = 600.0,
        lifespan: Lifespan | None = None,
        default_log_level: str | None = "debug",
        http_limits: HttpLimits | None = None,
        event_store: EventStore | None = None,
        store: Store | str | None = None,
    ) -> None:
        """``cache_ttl_ms``/``cache_scope``: the 2026-07-28 cache hints on cacheable results,
        per method in ``cache_hints`` (``{"tools/list": (60_000, "public")}``); the default
        (0 ms, private: stale at once, never shared) is always safe. ``page_size``: items per
        page of every list method (None: one page); a forged or stale cursor is -32602.

        ``state_secret``/``state_ttl``: the HMAC key and lifetime of 2026-07-28
        ``requestState`` (default: a random key per process, rotated hourly; give one when
        several instances serve one client). ``lifespan(app)``: an async context manager
        factory entered while serving; what it yields is ``app.state`` and
        ``ctx.lifespan_state``. ``default_log_level``: the handshake-era level ``ctx.log``
        sends at until ``logging/setLevel`` ("debug": all, as the official SDK; None: none).

        ``http_limits`` and ``event_store``: what the network transports use when ``serve_*``
        is given none (so ``mcp-runtime serve`` can use them). ``store``: where replicas share
        state (None or ``"memory://"``: this process only; ``"redis://host:port/db"`` or a
        ``Store``: sessions, SSE replay, list changes; docs/deploy.md).
        """
        if cache_ttl_ms < 0:
            raise ValueError("cache_ttl_ms must be >= 0")
        if default_log_level is not None and default_log_level not in LOG_LEVELS:
            raise ValueError(f"default_log_level must be one of {', '.join(LOG_LEVELS)}")
        self.default_log_level = default_log_level
        self.http_limits = http_limits
        self.event_store = event_store
        self._identity = Identity(name, version, title, icons, website_url)
        self.instructions = instructions
        self.limits = limits or Limits()
        self.registry = Registry()
        self._registrar = Registrar(self.registry, lambda: self.cache_hint(RESOURCES_READ))
        self.cursors = CursorCodec(page_size)
        self._completer: Completer | None = None
        self.state_sealer = StateSealer(state_secret, ttl_seconds=state_ttl)
        self.state_secret_given = state_secret is not None
        #: ``runtime.stores``: a URL or a ``Store`` (opened when HTTP serving starts).
        self.store = store
        #: Tasks (both task protocols): bounded, with TTLs; see ``runtime.features``.
        self.tasks = TaskTable(on_change=self.registry.changes.task_changed)
        #: Worker threads for plain ``def`` handlers, bounded by ``limits``.
        self.worker_threads = WorkerThreads(lambda: self.limits)
        self._cache_default = (cache_ttl_ms, cache_scope)
        self._cache_hints: dict[str, tuple[int, str]] = dict(cache_hints or {})
        # Typed by application, not annotation: mypy checks the bound once Server is whole.
        self._mounts = Mounts[Server](lambda: self.tasks.nursery)
        #: Mounted servers by prefix (``mount``; docs/composition.md).
        self.mounts = self._mounts.by_prefix
        #: The servers this one was mounted in (weakly: an unmounted one checks its mounts).
        self.mounted_in: weakref.WeakSet[Server] = weakref.WeakSet()
        #: Set by ``mcp-runtime dev``: this process alone serves its store's sessions.
        self.sole_version = False
        self._lifespan = lifespan
        #: What ``lifespan`` yielded, while serving (else None).
        self.state: Any = None
        self._lifetime = lifetime = Lifetime(
            self.tasks, self.registry.changes, self._open_lifespan, self._set_state
        )
        self._pipeline = Pipeline(self, lambda: build_dispatcher(self), lambda: lifetime.serving)
        #: The middleware chain, outermost first (``add_middleware``; docs/middleware.md).
        self.middleware_chain = self._pipeline.chain
        self._serving = Serving(self, lifetime, self._pipeline)

    def __repr__(self) -> str:
        reg = self.registry
        return (
            f"<Server {self.name!r} {self.version} tools={len(reg.tools)} "
            f"resources={len(reg.resources) + len(reg.templates)} prompts={len(reg.prompts)}>"
        )

    def _open_lifespan(self) -> AbstractAsyncContextManager[Any] | None:
        own = None if self._lifespan is None else self._lifespan(self)
        return self._mounts.lifespan(own)

    def _set_state(self, state: Any) -> None:
        self.state = state

    # -- registration -----------------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(self, fn: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        task: Literal["optional", "required"] | None = None,
        defer_task: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a tool: ``@app.tool`` or ``@app.tool(name=..., ...)``; returns the function
        unchanged (a sync one runs in a worker thread). Options: docs/decorators.md.

        Its type hints (docs/types.md) become the ``inputSchema`` and a precompiled validator,
        its docstring the description (arguments' from ``Args:``, ``Parameters`` or
        ``:param x:``), a return annotation that is data the ``outputSchema`` (results then
        carry ``structuredContent`` and a JSON text mirror). ``task``: it may ("optional")
        or must ("required") run as a task; ``defer_task=True``: it starts in its request
        and becomes the task at ``await ctx.become_task()``.
        """
        options = ToolOptions(
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            icons=icons,
            input_schema=input_schema,
            output_schema=output_schema,
            structured_output=structured_output,
            task=task,
            defer_task=defer_task,
            meta=meta,
        )
        return self._registrar.tool(fn, options)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        ttl_ms: int | None = None,
        cache_scope: Literal["public", "private"] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource at ``uri``, or a template when ``uri`` holds RFC 6570
        expressions (``users://{id}``: the function's parameters get the variables). It
        returns ``str``, ``bytes``, resource contents (or a list of them) or any JSON value;
        ``ttl_ms``/``cache_scope``: its 2026-07-28 cache hints."""
        options = ResourceOptions(
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            icons=icons,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
        )
        return self._registrar.resource(uri, options)

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(self, fn: None = None, /, **options: Unpack[PromptOptions]) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[dict[str, Any]] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a prompt; its parameters are the prompt's arguments (converted to their
        annotated types). It returns a ``str``, a ``PromptMessage``, a dict, or a list."""
        options = PromptOptions(name=name, title=title, description=description, icons=icons)
        return self._registrar.prompt(fn, options)

    @property
    def completer(self) -> Completer | None:
        # A mounted server's prompts and templates go to its own (docs/composition.md).
        return self._mounts.completer(self._completer)

    def completion(self, fn: C) -> C:
        """Register the completer: ``async def complete(ref_type, ref, argument, value,
        context) -> list[str] | None`` (docs/decorators.md). Without one, or for None,
        ``Literal``/``Enum`` annotations are completed by prefix."""
        self._completer = fn
        return fn

    # -- run-time changes (handlers.subscriptions delivers them) -----------------------------

    def add_tool(self, fn: Callable[..., Any], /, **options: Any) -> None:
        """``@app.tool(**options)(fn)``. Like every change to the features, while serving
        it sends list-changed; make it in the server's trio thread (not a worker thread)."""
        self.tool(**options)(fn)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (KeyError if unknown); sends tools/list_changed."""
        self.registry.remove_tool(name)

    def add_resource(self, fn: Callable[..., Any], /, uri: str, **options: Any) -> None:
        """``@app.resource(uri, **options)(fn)``."""
        self.resource(uri, **options)(fn)

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource (by URI) or a template (by its template string)."""
        self.registry.remove_resource(uri)

    def add_prompt(self, fn: Callable[..., Any], /, **options: Any) -> None:
        """``@app.prompt(**options)(fn)``."""
        self.prompt(**options)(fn)

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt (KeyError if unknown); sends prompts/list_changed."""
        self.registry.remove_prompt(name)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell the subscribers of ``uri`` it changed (``notifications/resources/updated``).
        Never blocks (changes coalesce per subscriber); from any task or worker thread."""
        self.registry.changes.resource_updated(uri)

    def notify_list_changed(self, kind: Literal["tools", "prompts", "resources"]) -> None:
        """Send ``notifications/{kind}/list_changed`` for lists the registry does not hold
        (its changes send it already); as :meth:`notify_resource_updated`."""
        self.registry.changes.list_changed(kind)

    # -- composition ------------------------------------------------------------------------

    def mount(self, other: Server, prefix: str) -> None:
        """Serve ``other``'s tools and prompts as ``{prefix}_{name}``, its resources as
        ``scheme://{prefix}/...``, kept in step; its lifespan runs inside this one's, its
        middleware and completer serve its features (docs/composition.md). ValueError for a
        prefix in use or a name collision."""
        if other is self:
            raise ValueError("a server cannot mount itself")
        self._mounts.check_free(prefix)
        mount = Mount(self.registry, other, prefix, other._open_lifespan)
        self._pipeline.keep_chain_of(other._pipeline)
        self._mounts.add(mount)  # while serving, after its lifespan is entered
        other.mounted_in.add(self)
        other._pipeline.parents.add(self._pipeline)

    def unmount(self, prefix: str) -> Server:
        """Remove what ``mount(..., prefix)`` added (sends list-changed); returns the server."""
        return self._mounts.remove(prefix).child  # while serving: its lifespan exits

    # -- middleware -------------------------------------------------------------------------

    def add_middleware(self, *middleware: Middleware | RequestMiddleware) -> None:
        """Append middleware (the first added is the outermost): ``Middleware`` objects or
        ``async def mw(request, call_next)`` functions (docs/middleware.md). RuntimeError
        while serving, unless this server is mounted in the one that serves."""
        from .middleware import as_middleware

        self._pipeline.add([as_middleware(mw) for mw in middleware])

    def middleware(self, fn: M) -> M:
        """Decorator form of :meth:`add_middleware` for a plain function."""
        self.add_middleware(fn)
        return fn

    # -- dispatch ---------------------------------------------------------------------------

    @property
    def dispatcher(self) -> Dispatcher:
        built = self._pipeline.built
        return self._pipeline.dispatcher() if built is None else built

    def cache_hint(self, method: str) -> tuple[int, str]:
        return self._cache_hints.get(method, self._cache_default)

    def server_info(self) -> dict[str, Any]:
        """The Implementation object (serverInfo): name, version, title, icons, websiteUrl
        (``Identity``). Callers must not change it."""
        return self._identity.info or self._identity.make()

    # The fields of ``server_info`` (``Identity``): setting one makes it again.
    name: _InfoField[str] = _InfoField()
    version: _InfoField[str] = _InfoField()
    title: _InfoField[str | None] = _InfoField()
    #: Icons (MCP 2025-11-25 ``Icon``: ``{"src", "mimeType"?, "sizes"?, "theme"?}``).
    icons: _InfoField[list[dict[str, Any]] | None] = _InfoField()
    website_url: _InfoField[str | None] = _InfoField()

    # -- serving ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop reading and accepting, give in-flight requests ``limits.shutdown_grace``
        seconds, then cancel; from any task of the server's trio run."""
        self._lifetime.shutdown()

    async def serve_connection(
        self,
        channel: MessageChannel,
        *,
        session: Session | None = None,
        connection_id: str | None = None,
        shutdown: trio.Event | None = None,
        drain_on_eof: bool = False,
        started: Callable[[Connection], None] | None = None,
    ) -> None:
        """Serve one open message channel until it ends. ``drain_on_eof``: at its end, let
        requests finish instead of giving them ``limits.eof_grace`` (one HTTP POST);
        ``started(connection)`` is called once it serves."""
        connection = Connection(
            channel,
            self.dispatcher,
            limits=self.limits,
            session=session,
            shutdown=shutdown,
            connection_id=connection_id,
            drain_on_eof=drain_on_eof,
        )
        await self._lifetime.serve_connection(connection, started)

    async def serve_stdio(
        self,
        *,
        framing: FramingName = "ndjson",
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve stdin/stdout until stdin's EOF or :meth:`shutdown`; anything else written
        to stdout meanwhile (``print``) goes to stderr."""
        await self._serving.stdio(framing, task_status)

    async def serve_tcp(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        framing: FramingName = "ndjson",
        sock: socket.socket | None = None,
        task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept TCP connections (a session each) until cancelled or shut down; reports the
        bound address through ``task_status`` (``await nursery.start(app.serve_tcp, 0)``
        gives the ephemeral port). ``sock``: a listening socket to use instead."""
        await self._serving.tcp(port, host, framing, sock, task_status)

    async def serve_unix(
        self,
        path: str,
        *,
        framing: FramingName = "ndjson",
        sock: socket.socket | None = None,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections on a Unix socket at ``path``, removed on exit unless ``sock`` is
        given (the socket listening there, whose owner removes it)."""
        await self._serving.unix(path, framing, sock, task_status)

    async def serve_pipe(
        self,
        directory: str,
        *,
        framing: FramingName = "ndjson",
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve over a named pipe pair (POSIX FIFOs ``to-server`` and ``from-server`` in
        ``directory``), one client at a time, until cancelled or shut down."""
        await self._serving.pipe(directory, framing, task_status)

    async def serve_http(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        path: str | None = "/mcp",
        sse_path: str | None = "/sse",
        messages_path: str = "/messages",
        allowed_origins: Iterable[str] | None = None,
        allowed_hosts: Iterable[str] | None = None,
        http_limits: HttpLimits | None = None,
        authenticate: Callable[[dict[str, str]], Awaitable[Any]] | None = None,
        auth: AuthConfig | None = None,
        event_store: EventStore | None = None,
        sock: Any = None,
        metrics: Metrics | None = None,
        metrics_path: str = "/metrics",
        metrics_token: str | None = None,
        sockets: Sequence[socket.socket] | None = None,
        task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve Streamable HTTP (both eras) at ``path`` and legacy HTTP+SSE at ``sse_path``
        and ``messages_path`` (None turns either off) until cancelled or :meth:`shutdown`;
        reports the bound address through ``task_status`` (docs/transports.md). Host and
        Origin allow-lists default to the loopback names on loopback (others get 403).
        ``authenticate(headers)`` returns the principal or raises
        ``runtime.transports.HttpError`` (e.g. 401); ``auth`` makes it an OAuth 2.1 resource
        server (docs/auth.md). ``sock``/``sockets``: listening sockets to use instead.
        ``metrics``: its Prometheus text at ``metrics_path``, behind ``metrics_token`` when
        given (docs/observability.md); ``/healthz`` and ``/readyz`` answer (docs/deploy.md).
        """
        await self._serving.http(
            port=port,
            host=host,
            path=path,
            sse_path=sse_path,
            messages_path=messages_path,
            allowed_origins=allowed_origins,
            allowed_hosts=allowed_hosts,
            http_limits=http_limits,
            authenticate=authenticate,
            auth=auth,
            event_store=event_store,
            sock=sock,
            metrics=metrics,
            metrics_path=metrics_path,
            metrics_token=metrics_token,
            sockets=sockets,
            task_status=task_status,
        )

    async def serve_sse(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        path: str = "/sse",
        messages_path: str = "/messages",
        **options: Any,
    ) -> None:
        """Serve only the legacy 2024-11-05 HTTP+SSE transport (see :meth:`serve_http`)."""
        await self.serve_http(
            port, host=host, path=None, sse_path=path, messages_path=messages_path, **options
        )

    async def serve_websocket(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        path: str = "/mcp",
        allowed_origins: Iterable[str] | None = None,
        allowed_hosts: Iterable[str] | None = None,
        http_limits: HttpLimits | None = None,
        auth: AuthConfig | None = None,
        authenticate: Callable[[dict[str, str]], Awaitable[Any]] | None = None,
        sock: socket.socket | None = None,
        task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve MCP over WebSocket (subprotocol ``mcp``) at ``path`` until cancelled or
        :meth:`shutdown` (then 1001 after the grace period); ``auth``/``authenticate`` as
        for :meth:`serve_http`, on the upgrade; a connection is a session."""
        await self._serving.websocket(
            port=port,
            host=host,
            path=path,
            allowed_origins=allowed_origins,
            allowed_hosts=allowed_hosts,
            http_limits=http_limits,
            auth=auth,
            authenticate=authenticate,
            sock=sock,
            task_status=task_status,
        )

    def run(
        self,
        transport: Literal["stdio", "tcp", "unix", "http", "sse", "ws", "pipe"] = "stdio",
        *,
        started: Callable[[Any], None] | None = None,
        **options: Any,
    ) -> None:
        """Serve (blocking) with SIGINT/SIGTERM as graceful shutdown; ``started(address)`` is
        called once it serves (None for stdio)."""
        serve = getattr(self, _RUN[transport])
        trio.run(
            run_with_signals, self.shutdown, self.limits.shutdown_grace, serve, options, started
        )
