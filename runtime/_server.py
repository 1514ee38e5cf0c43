"""``Server``: the user's app object: decorators to register features, ``serve_*`` to run.

A facade over collaborators with one job each: the ``Registry`` (what is registered,
``runtime.features``) fed by ``_definitions`` (a function read into a definition); the
``Lifetime`` (lifespan, task nursery, shutdown; ``_lifetime``); the dispatcher built by the
composition root (``_compose``, which joins the MCP handlers to it); ``Serving`` (each
transport wired to the server, ``_serving``); ``Mounts`` (the servers mounted in this one,
``runtime.ensemble``). Each receives what it needs as values or a small Protocol, never the
``Server`` class. See docs/architecture.md.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar, cast, overload

import trio

from ._compose import build_dispatcher
from ._definitions import (
    check_resource_uri,
    prompt_definition,
    resource_cache,
    resource_definition,
    tool_definition,
)
from ._lifetime import Lifetime, run_with_signals
from ._serving import Serving
from .core import Connection, Dispatcher, Limits, MessageChannel, Session
from .ensemble import Mount, Mounts
from .features import (
    Completer,
    CursorCodec,
    Registry,
    StateSealer,
    TaskTable,
    TemplateDef,
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
    """A field of a server's ``serverInfo`` (``Server.server_info``): kept as ``_<name>``,
    and setting it makes ``serverInfo`` again on its next use."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    @overload
    def __get__(self, server: None, owner: type) -> _InfoField[V]: ...
    @overload
    def __get__(self, server: Server, owner: type) -> V: ...
    def __get__(self, server: Server | None, owner: type) -> _InfoField[V] | V:
        return self if server is None else cast(V, getattr(server, self.slot))

    def __set__(self, server: Server, value: V) -> None:
        setattr(server, self.slot, value)
        server._server_info = None


class Server:
    """An MCP server. Register features with the decorators, then serve it.

    >>> app = Server("demo")
    >>> @app.tool
    ... def add(a: int, b: int) -> int:
    ...     "Add two numbers."
    ...     return a + b
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
        """``cache_ttl_ms``/``cache_scope``: the 2026-07-28 cache hints (server/utilities/
        caching) on cacheable results; ``cache_hints`` overrides them per method, e.g.
        ``{"tools/list": (60_000, "public")}``. The default (0 ms, private) is always safe:
        results are immediately stale and never shared across authorization contexts.

        ``page_size``: items per page of every list method (None: everything in one page);
        cursors are opaque and validated (a forged or stale one is -32602).

        ``state_secret``/``state_ttl``: the HMAC secret and lifetime of the ``requestState``
        of 2026-07-28 multi round-trip requests (default: a random key per process, rotated
        hourly; give a secret when several instances serve one client).

        ``lifespan(app)``: an async context manager factory, entered once when serving
        starts and exited when it ends (``_running``); what it yields is ``app.state``
        and ``ctx.lifespan_state``.

        ``default_log_level``: in the handshake era, the level ``ctx.log`` (``ctx.info``,
        ...) sends at until the client calls ``logging/setLevel``. The default, "debug",
        sends every message, as the official SDK does; None sends nothing until the client
        sets a level. (2026-07-28 requests log only when they carry
        ``io.modelcontextprotocol/logLevel``, whatever this says.)

        ``http_limits`` (``runtime.transports.HttpLimits``: body and head sizes, sessions,
        the SSE ``retry`` interval ``sse_retry_ms``, replay buffer, ...) and
        ``event_store`` (where resumable SSE events wait for ``Last-Event-ID``): what the
        HTTP, SSE and WebSocket transports use when ``serve_*`` is not given its own, so a
        file served with ``mcp-runtime serve`` can set them.

        ``store``: where replicas share state (``runtime.stores``): None or ``"memory://"``
        keeps everything in this process; ``"redis://host:port/db"`` (or a ``Store``) shares
        handshake sessions, SSE replay, list-changed fan-out and the ``requestState`` key
        with every replica on that Redis (docs/deploy.md).
        """
        if cache_ttl_ms < 0:
            raise ValueError("cache_ttl_ms must be >= 0")
        if default_log_level is not None and default_log_level not in LOG_LEVELS:
            raise ValueError(f"default_log_level must be one of {', '.join(LOG_LEVELS)}")
        self.default_log_level = default_log_level
        self.http_limits = http_limits
        self.event_store = event_store
        self._server_info: dict[str, Any] | None = None  # (``server_info``, made once)
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.icons = icons
        self.website_url = website_url
        self.limits = limits or Limits()
        self.registry = Registry()
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
        self._dispatcher: Dispatcher | None = None
        # Typed by application, not annotation: mypy checks the bound once Server is whole.
        self._mounts = Mounts[Server](lambda: self.tasks.nursery)
        #: Mounted servers by prefix (``mount``; docs/composition.md).
        self.mounts = self._mounts.by_prefix
        #: The servers this one was mounted in (weakly: an unmounted one checks its mounts).
        self.mounted_in: weakref.WeakSet[Server] = weakref.WeakSet()
        #: Set by ``mcp-runtime dev`` in each version it runs: the one process serving the
        #: sessions of its (shared) store, as the previous version drains away, so a session
        #: it adopts is its own: it delivers the session's list changes, as the version that
        #: saw ``notifications/initialized`` did (with replicas, that one still does).
        self.sole_version = False
        #: The middleware chain, outermost first (``add_middleware``; docs/middleware.md).
        self.middleware_chain: list[Middleware] = []
        self._lifespan = lifespan
        #: What ``lifespan`` yielded, while serving (else None).
        self.state: Any = None
        self._lifetime = Lifetime(
            self.tasks, self.registry.changes, self._open_lifespan, self._set_state
        )
        self._serving = Serving(self, self._lifetime)

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
    def tool(
        self,
        fn: None = None,
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
    ) -> Callable[[F], F]: ...

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
        """Register a tool. Use as ``@app.tool`` or ``@app.tool(name=..., ...)``.

        The signature's type hints become the ``inputSchema`` (unless ``input_schema`` is
        given, which is passed through untouched) and a precompiled validator; the docstring
        gives the description and, from its arguments section (Google ``Args:``, NumPy
        ``Parameters``, or Sphinx ``:param x:``), argument descriptions. Parameter types: see
        docs/types.md (msgspec Structs, dataclasses, TypedDict, attrs, pydantic v2 models,
        Enum, Literal, constraints). Sync functions run in a worker thread. Returns the
        function unchanged.

        Structured output: a return annotation that is data (a Struct, dataclass, dict,
        ``int``, ``list[...]``, ...) becomes the ``outputSchema`` and the result carries
        ``structuredContent`` plus a JSON text mirror; ``str`` and content types stay
        unstructured. ``structured_output=False`` turns it off; ``output_schema`` (a JSON
        Schema 2020-12 object schema) is passed through untouched and the return value is
        sent as ``structuredContent`` as is.

        ``task``: the tool may run as a task ("optional") or must ("required", 2025-11-25
        clients must then ask for a task). Modern clients that declare the
        ``io.modelcontextprotocol/tasks`` extension get a task handle at once and poll it.
        ``defer_task=True``: for those clients the tool starts in its request instead (it
        may ask for input in ``input_required`` rounds there) and becomes the task when it
        calls ``await ctx.become_task()``.
        """

        def register(func: F) -> F:
            self.registry.add_tool(
                tool_definition(
                    func,
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
            )
            return func

        return register(fn) if fn is not None else register

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
        """Register a resource at ``uri``, or a resource template when ``uri`` holds
        RFC 6570 expressions (``users://{user_id}/profile``): the function's parameters then
        receive the template variables, converted to their annotated types.

        The function returns ``str`` (text), ``bytes`` (blob), a ``TextResourceContents`` /
        ``BlobResourceContents`` or a list of those, or any JSON-encodable value.
        ``ttl_ms``/``cache_scope`` set this resource's 2026-07-28 cache hints.
        """
        check_resource_uri(uri)
        cache = resource_cache(ttl_ms, cache_scope, self.cache_hint(RESOURCES_READ))

        def register(func: F) -> F:
            definition = resource_definition(
                func,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                icons=icons,
                cache=cache,
            )
            if isinstance(definition, TemplateDef):
                self.registry.add_template(definition)
            else:
                self.registry.add_resource(definition)
            return func

        return register

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[dict[str, Any]] | None = None,
    ) -> Callable[[F], F]: ...

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
        """Register a prompt; its parameters are the prompt's arguments (strings on the
        wire, converted to the annotated types). It returns a ``str`` (one user message),
        a ``PromptMessage``, a dict, or a list of those.
        """

        def register(func: F) -> F:
            self.registry.add_prompt(
                prompt_definition(
                    func, name=name, title=title, description=description, icons=icons
                )
            )
            return func

        return register(fn) if fn is not None else register

    @property
    def completer(self) -> Completer | None:
        # A mounted server's prompts and templates are completed by its own completer,
        # under its own names (docs/composition.md).
        return self._mounts.completer(self._completer)

    def completion(self, fn: C) -> C:
        """Register the server's completer for ``completion/complete``:
        ``async def complete(ref_type, ref, argument, value, context) -> list[str]`` where
        ``ref_type`` is ``"ref/prompt"`` or ``"ref/resource"``, ``ref`` the prompt name or
        template URI, and ``context`` the arguments already filled in. Without one (or
        when it returns None for a ref), ``Literal``/``Enum`` annotations are completed by
        prefix.
        """
        self._completer = fn
        return fn

    # -- run-time changes (handlers.subscriptions delivers them) -----------------------------

    def add_tool(self, fn: Callable[..., Any], /, **options: Any) -> None:
        """Register ``fn`` as a tool, as ``@app.tool(**options)`` does. Like every
        registration and removal, while serving it sends ``notifications/tools/list_changed``
        to initialized handshake-era sessions and to modern listens that asked for it.

        Registry changes must happen in the server's trio thread (an async tool, a background
        task), not in a sync tool's worker thread.
        """
        self.tool(**options)(fn)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (KeyError if unknown); sends tools/list_changed."""
        self.registry.remove_tool(name)

    def add_resource(self, fn: Callable[..., Any], /, uri: str, **options: Any) -> None:
        """Register ``fn`` at ``uri`` (a URI or a template), as ``@app.resource(uri, ...)``;
        sends resources/list_changed."""
        self.resource(uri, **options)(fn)

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource (by URI) or a template (by its template string)."""
        self.registry.remove_resource(uri)

    def add_prompt(self, fn: Callable[..., Any], /, **options: Any) -> None:
        """Register ``fn`` as a prompt, as ``@app.prompt(**options)``; sends
        prompts/list_changed."""
        self.prompt(**options)(fn)

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt (KeyError if unknown); sends prompts/list_changed."""
        self.registry.remove_prompt(name)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell the sessions and listens subscribed to ``uri`` that it changed
        (``notifications/resources/updated``). Synchronous and never blocks: changes coalesce
        per subscriber (runtime.features). Call it from any task of the server's trio run,
        or from a sync tool's worker thread (it hops to the trio thread).
        """
        self.registry.changes.resource_updated(uri)

    def notify_list_changed(self, kind: Literal["tools", "prompts", "resources"]) -> None:
        """Send ``notifications/{kind}/list_changed`` yourself, for lists computed outside
        the registry (registry changes send it already). Same contract as
        :meth:`notify_resource_updated`."""
        self.registry.changes.list_changed(kind)

    # -- composition ------------------------------------------------------------------------

    def mount(self, other: Server, prefix: str) -> None:
        """Serve ``other``'s tools and prompts as ``{prefix}_{name}`` and its resources as
        ``scheme://{prefix}/...``, kept in step with ``other`` (its later changes and
        resource updates are forwarded); its lifespan runs inside this one's (while serving:
        entered before its features appear, exited at ``unmount``); its own middleware and
        completer serve its features. Sends list-changed while serving. ValueError for a
        prefix in use or a name collision. A server with middleware mounted while serving
        gets its chain then (requests already routed finish on the chain they started with).
        """
        if other is self:
            raise ValueError("a server cannot mount itself")
        self._mounts.check_free(prefix)
        mount = Mount(self.registry, other, prefix, other._open_lifespan)
        self._keep_mounted_middleware(other)
        self._mounts.add(mount)  # while serving, after its lifespan is entered
        other.mounted_in.add(self)

    def _keep_mounted_middleware(self, other: Server) -> None:
        """A dispatcher built before ``other`` (mounted here) had middleware lacks the chain
        that runs it: rebuilt before serving; changed in place while serving (connections
        keep it)."""
        dispatcher = self._dispatcher
        if dispatcher is None:
            return
        from .ensemble import keep_mounted_chains

        if not keep_mounted_chains(self, dispatcher, other, serving=self._lifetime.serving):
            self._dispatcher = None

    def _middleware_changed(self) -> None:
        """This server got middleware: each server it is mounted in (and theirs, up the tree)
        runs it from the next request on."""
        for parent in list(self.mounted_in):
            if any(mount.child is self for mount in parent.mounts.values()):
                parent._keep_mounted_middleware(self)
                parent._middleware_changed()

    def unmount(self, prefix: str) -> Server:
        """Remove what ``mount(..., prefix)`` added (sends list-changed); returns the server."""
        return self._mounts.remove(prefix).child  # while serving: its lifespan exits

    # -- middleware -------------------------------------------------------------------------

    def add_middleware(self, *middleware: Middleware | RequestMiddleware) -> None:
        """Append middleware to the chain (the first added is the outermost): instances of
        ``runtime.middleware.Middleware``, subclasses of it, or plain
        ``async def mw(request, call_next)`` functions (around requests). RuntimeError while
        serving: the chain is built with the dispatcher, which connections keep. A server
        mounted in one that serves may get more: the next request to its features runs them
        (one in flight finishes on the chain it started with).
        """
        from .middleware import as_middleware

        if self._lifetime.serving:
            # Connections and transports hold the dispatcher they started with.
            raise RuntimeError("add middleware before serving")
        self.middleware_chain.extend(as_middleware(mw) for mw in middleware)
        self._dispatcher = None
        if self.mounted_in:
            self._middleware_changed()

    def middleware(self, fn: M) -> M:
        """Decorator form of :meth:`add_middleware` for a plain function."""
        self.add_middleware(fn)
        return fn

    # -- dispatch ---------------------------------------------------------------------------

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            self._dispatcher = build_dispatcher(self)
        return self._dispatcher

    def cache_hint(self, method: str) -> tuple[int, str]:
        return self._cache_hints.get(method, self._cache_default)

    def server_info(self) -> dict[str, Any]:
        """The Implementation object (serverInfo): name, version, title, icons, websiteUrl.

        Made once and again only after one of its fields is set (the ``_InfoField``s below),
        since every 2026-07-28 result carries it. Callers must not change it."""
        info = self._server_info
        if info is None:
            info = {"name": self.name, "version": self.version}
            if self.title is not None:
                info["title"] = self.title
            if self.icons:
                info["icons"] = self.icons
            if self.website_url is not None:
                info["websiteUrl"] = self.website_url
            self._server_info = info
        return info

    # The fields of ``server_info``: setting one makes it again.
    name: _InfoField[str] = _InfoField()
    version: _InfoField[str] = _InfoField()
    title: _InfoField[str | None] = _InfoField()
    #: Icons (MCP 2025-11-25 ``Icon``: ``{"src", "mimeType"?, "sizes"?, "theme"?}``).
    icons: _InfoField[list[dict[str, Any]] | None] = _InfoField()
    website_url: _InfoField[str | None] = _InfoField()

    # -- serving ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Begin a graceful shutdown of everything this server is serving: stop reading and
        accepting, give in-flight requests ``limits.shutdown_grace`` seconds, then cancel.
        Safe to call from any task of the server's trio run.
        """
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
        """Serve one already-open message channel until it ends (any transport).

        ``drain_on_eof``: when input ends, wait for in-flight requests to finish instead of
        giving them ``limits.eof_grace`` (for a channel carrying a single HTTP POST).
        ``started(connection)`` is called with the ``Connection`` once it serves.
        """
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
        """Serve stdin/stdout until stdin reaches EOF or :meth:`shutdown` is called.

        While serving, anything else written to stdout (``print``) goes to stderr.
        """
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
        """Accept TCP connections until cancelled or shut down; each is its own session.

        Reports the bound socket address (``(host, port, ...)``) through ``task_status``, so
        ``await nursery.start(app.serve_tcp, 0)`` gives the ephemeral port. ``sock``: an
        already listening socket to accept on instead of binding (``--workers``).
        """
        await self._serving.tcp(port, host, framing, sock, task_status)

    async def serve_unix(
        self,
        path: str,
        *,
        framing: FramingName = "ndjson",
        sock: socket.socket | None = None,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections on a Unix socket at ``path`` (removed again on exit).
        ``sock``: the socket already listening at ``path`` (``--workers``: its supervisor
        bound it and removes it, so a worker leaves the path alone)."""
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
        """Serve MCP over HTTP: Streamable HTTP (2026-07-28 and the 2025-03-26..2025-11-25
        session era) at ``path``, and legacy HTTP+SSE (2024-11-05) at ``sse_path`` with
        POSTs to ``messages_path`` (None turns either off). Until cancelled or
        :meth:`shutdown`; reports the bound address through ``task_status``.

        Host/Origin allow-lists default to the loopback names when bound to loopback
        (others get 403). ``authenticate(headers)`` returns the principal or raises
        ``runtime.transports.HttpError`` (e.g. 401); sessions are bound to their principal.
        ``auth`` (``runtime.auth.AuthConfig``) makes it an OAuth 2.1 resource server instead:
        bearer tokens on every request, per-tool scopes, RFC 9728 metadata at the well-known
        paths; sessions are bound to the token's subject and client id.
        ``sock``: a listening socket to accept on instead (``--workers``); ``sockets``: bound,
        listening sockets to accept on instead of ``host:port`` (``mcp-runtime dev``).
        Liveness and readiness answer at ``/healthz`` and ``/readyz`` (docs/deploy.md).

        ``metrics`` (``runtime.middleware.Metrics``): serve its Prometheus text at
        ``GET metrics_path`` (off by default); added to the middleware chain, first, when
        it is not there yet. ``metrics_token``: GET ``metrics_path`` then needs
        ``Authorization: Bearer <metrics_token>`` (else 401).
        """
        if metrics is not None and metrics not in self.middleware_chain:
            self.middleware_chain.insert(0, metrics)
            self._dispatcher = None
        from .transports import serve_http

        async with self._serving.network() as (hooks, store, shutdown):
            await serve_http(
                hooks,
                port=port,
                host=host,
                path=path,
                sse_path=sse_path,
                messages_path=messages_path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                limits=http_limits or self.http_limits,
                max_body_size=self.limits.max_frame_size,
                authenticate=authenticate,
                auth=auth,
                event_store=event_store or self.event_store,
                store=store,
                sock=sock,
                sockets=sockets,
                metrics=metrics.render if metrics is not None else None,
                metrics_path=metrics_path,
                metrics_token=metrics_token,
                shutdown=shutdown,
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
        :meth:`shutdown` (connections then close with 1001 after the grace period).
        ``auth`` / ``authenticate`` as for :meth:`serve_http`, checked on the upgrade.
        ``sock``: a listening socket to accept on instead (``--workers``). With a shared
        ``store``, list changes, resource updates, sealing keys and 2026-07-28 tasks are
        shared with the other workers and replicas (each connection is its own session)."""
        from .transports import serve_websocket

        async with self._serving.network() as (hooks, _store, shutdown):
            await serve_websocket(
                hooks,
                port=port,
                host=host,
                path=path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                limits=http_limits or self.http_limits,
                max_message_size=self.limits.max_frame_size,
                auth=auth,
                authenticate=authenticate,
                shutdown=shutdown,
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
        """Blocking convenience: serve with SIGINT/SIGTERM handled (see ``runtime._lifetime``).
        ``started(address)`` is called once the transport serves (the bound address, or None
        for stdio)."""
        serve = getattr(self, _RUN[transport])
        trio.run(
            run_with_signals, self.shutdown, self.limits.shutdown_grace, serve, options, started
        )
