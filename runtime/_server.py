"""``Server``: the user's app object: decorators to register features, ``serve_*`` to run.

This module is the composition root: it is the one place in ``runtime`` that imports the
``handlers`` package (which implements MCP semantics against the registry) and wires it to
the core dispatcher and the transports. See docs/architecture.md.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal, TypeVar, overload

import trio

from ._context import Context
from ._output import output_spec
from ._pagination import CursorCodec
from ._registry import PromptDef, Registry, ResourceDef, TemplateDef, ToolDef
from ._signature import doc_summary, inspect_signature
from ._uritemplate import UriTemplate, is_template
from .core import Connection, Dispatcher, Limits, MessageChannel, Session
from .transports import FramedChannel, FramingName, make_framer, open_stdio_channel
from .transports import open_unix_listener as _open_unix_listener
from .transports import EventStore, Hooks, HttpLimits
from .transports import serve_http as _serve_http
from .transports import serve_websocket as _serve_websocket
from .transports._http_modern import header_params as _header_params

__all__ = ["Server"]

log = logging.getLogger("mcp_runtime.server")
F = TypeVar("F", bound=Callable[..., Any])
_stream_ids = itertools.count(1)


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
        limits: Limits | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        cache_hints: dict[str, tuple[int, Literal["public", "private"]]] | None = None,
        page_size: int | None = None,
    ) -> None:
        """``cache_ttl_ms``/``cache_scope``: the 2026-07-28 cache hints (server/utilities/
        caching) on cacheable results; ``cache_hints`` overrides them per method, e.g.
        ``{"tools/list": (60_000, "public")}``. The default (0 ms, private) is always safe:
        results are immediately stale and never shared across authorization contexts.

        ``page_size``: items per page of every list method (None: everything in one page);
        cursors are opaque and validated (a forged or stale one is -32602).
        """
        if cache_ttl_ms < 0:
            raise ValueError("cache_ttl_ms must be >= 0")
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.limits = limits or Limits()
        self.registry = Registry()
        self.cursors = CursorCodec(page_size)
        self._cache_default = (cache_ttl_ms, cache_scope)
        self._cache_hints: dict[str, tuple[int, str]] = dict(cache_hints or {})
        self._dispatcher: Dispatcher | None = None
        self._shutdown_events: set[trio.Event] = set()

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
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
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
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a tool. Use as ``@app.tool`` or ``@app.tool(name=..., ...)``.

        The signature's type hints become the ``inputSchema`` (unless ``input_schema`` is
        given, which is passed through untouched) and a precompiled validator; the docstring
        gives the description and, from an ``Args:`` section, argument descriptions. Sync
        functions run in a worker thread. Returns the function unchanged.

        Structured output: a return annotation that is data (a Struct, dataclass, dict,
        ``int``, ``list[...]``, ...) becomes the ``outputSchema`` and the result carries
        ``structuredContent`` plus a JSON text mirror; ``str`` and content types stay
        unstructured. ``structured_output=False`` turns it off; ``output_schema`` (a JSON
        Schema 2020-12 object schema) is passed through untouched and the return value is
        sent as ``structuredContent`` as is.
        """

        def register(func: F) -> F:
            tool_name = name or func.__name__
            sig = inspect_signature(func, name=tool_name, context_type=Context)
            output = None
            if structured_output is not False and output_schema is None:
                output = output_spec(func, name=tool_name, required=bool(structured_output))
            if structured_output and output is None and output_schema is None:
                raise TypeError(
                    f"{tool_name}: structured_output=True needs a data return annotation "
                    "or output_schema"
                )
            self.registry.add_tool(
                ToolDef(
                    name=tool_name,
                    fn=func,
                    signature=sig,
                    title=title,
                    description=description or doc_summary(func),
                    input_schema=input_schema,
                    annotations=annotations,
                    meta=meta,
                    output=output,
                    output_schema=output_schema,
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
        cache: tuple[int, str] | None = None
        if ttl_ms is not None or cache_scope is not None:
            default_ttl, default_scope = self.cache_hint("resources/read")
            cache = (
                default_ttl if ttl_ms is None else ttl_ms,
                default_scope if cache_scope is None else cache_scope,
            )

        def register(func: F) -> F:
            res_name = name or func.__name__
            sig = inspect_signature(func, name=res_name, context_type=Context, lax=True)
            desc = description or doc_summary(func)
            if is_template(uri):
                template = UriTemplate(uri)
                missing = set(sig.required) - set(template.variable_names)
                if missing:
                    raise TypeError(
                        f"{res_name}: parameters {sorted(missing)} are not variables of {uri!r}"
                    )
                self.registry.add_template(
                    TemplateDef(template, res_name, func, sig, title, desc, mime_type, cache)
                )
            else:
                if sig.required:
                    raise TypeError(
                        f"{res_name}: a static resource takes no arguments "
                        f"(got {list(sig.required)}); use a URI template"
                    )
                self.registry.add_resource(
                    ResourceDef(uri, res_name, func, sig, title, desc, mime_type, cache)
                )
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
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> F | Callable[[F], F]:
        """Register a prompt; its parameters are the prompt's arguments (strings on the
        wire, converted to the annotated types). It returns a ``str`` (one user message),
        a ``PromptMessage``, a dict, or a list of those.
        """

        def register(func: F) -> F:
            prompt_name = name or func.__name__
            sig = inspect_signature(func, name=prompt_name, context_type=Context, lax=True)
            self.registry.add_prompt(
                PromptDef(prompt_name, func, sig, title, description or doc_summary(func))
            )
            return func

        return register(fn) if fn is not None else register

    # -- dispatch ---------------------------------------------------------------------------

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            from handlers import build_dispatcher

            self._dispatcher = build_dispatcher(self)
        return self._dispatcher

    def cache_hint(self, method: str) -> tuple[int, str]:
        return self._cache_hints.get(method, self._cache_default)

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        return info

    # -- serving ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Begin a graceful shutdown of everything this server is serving: stop reading and
        accepting, give in-flight requests ``limits.shutdown_grace`` seconds, then cancel.
        Safe to call from any task of the server's trio run.
        """
        for event in self._shutdown_events:
            event.set()

    def _new_shutdown_event(self) -> trio.Event:
        event = trio.Event()
        self._shutdown_events.add(event)
        return event

    async def serve_connection(
        self,
        channel: MessageChannel,
        *,
        session: Session | None = None,
        connection_id: str | None = None,
        shutdown: trio.Event | None = None,
        drain_on_eof: bool = False,
    ) -> None:
        """Serve one already-open message channel until it ends (any transport).

        ``drain_on_eof``: when input ends, wait for in-flight requests to finish instead of
        giving them ``limits.eof_grace`` (for a channel carrying a single HTTP POST).
        """
        await Connection(
            channel,
            self.dispatcher,
            limits=self.limits,
            session=session,
            shutdown=shutdown,
            connection_id=connection_id,
            drain_on_eof=drain_on_eof,
        ).serve()

    async def serve_stdio(
        self,
        *,
        framing: FramingName = "ndjson",
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve stdin/stdout until stdin reaches EOF or :meth:`shutdown` is called.

        While serving, anything else written to stdout (``print``) goes to stderr.
        """
        shutdown = self._new_shutdown_event()
        limits = self.limits
        try:
            async with open_stdio_channel(
                framing=framing,
                max_frame_size=limits.max_frame_size,
                read_timeout=limits.read_timeout,
                idle_timeout=limits.idle_timeout,
            ) as channel:
                task_status.started()
                await self.serve_connection(
                    channel, session=Session("stdio"), connection_id="stdio", shutdown=shutdown
                )
        finally:
            self._shutdown_events.discard(shutdown)

    async def serve_tcp(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        framing: FramingName = "ndjson",
        task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept TCP connections until cancelled or shut down; each is its own session.

        Reports the bound socket address (``(host, port, ...)``) through ``task_status``, so
        ``await nursery.start(app.serve_tcp, 0)`` gives the ephemeral port.
        """
        listeners = await trio.open_tcp_listeners(port, host=host)
        address = listeners[0].socket.getsockname()
        await self._serve_listeners(listeners, framing, "tcp", address, task_status)

    async def serve_unix(
        self,
        path: str,
        *,
        framing: FramingName = "ndjson",
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections on a Unix socket at ``path`` (removed again on exit)."""
        listener = await _open_unix_listener(path)
        try:
            await self._serve_listeners([listener], framing, "unix", path, task_status)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _transport_hooks(self) -> Hooks:
        """What the network transports need from this server (they never import the core)."""
        from handlers.era import MODERN_VERSIONS
        from handlers.lifecycle import HANDSHAKE_VERSIONS

        def tool_header_params(name: str) -> dict[str, tuple[str, ...]]:
            tool = self.registry.tools.get(name)
            return {} if tool is None else _header_params(tool.listing.get("inputSchema"))

        return Hooks(
            serve_connection=self.serve_connection,
            new_session=Session,
            handshake_versions=tuple(HANDSHAKE_VERSIONS),
            modern_versions=tuple(MODERN_VERSIONS),
            tool_header_params=tool_header_params,
            write_timeout=self.limits.write_timeout,
            shutdown_grace=self.limits.shutdown_grace,
        )

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
        event_store: EventStore | None = None,
        task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve MCP over HTTP: Streamable HTTP (2026-07-28 and the 2025-03-26..2025-11-25
        session era) at ``path``, and legacy HTTP+SSE (2024-11-05) at ``sse_path`` with
        POSTs to ``messages_path`` (None turns either off). Until cancelled or
        :meth:`shutdown`; reports the bound address through ``task_status``.

        Host/Origin allow-lists default to the loopback names when bound to loopback
        (others get 403). ``authenticate(headers)`` returns the principal or raises
        ``runtime.transports.HttpError`` (e.g. 401); sessions are bound to their principal.
        """
        shutdown = self._new_shutdown_event()
        try:
            await _serve_http(
                self._transport_hooks(),
                port=port,
                host=host,
                path=path,
                sse_path=sse_path,
                messages_path=messages_path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                limits=http_limits,
                max_body_size=self.limits.max_frame_size,
                authenticate=authenticate,
                event_store=event_store,
                shutdown=shutdown,
                task_status=task_status,
            )
        finally:
            self._shutdown_events.discard(shutdown)

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
        task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve MCP over WebSocket (subprotocol ``mcp``) at ``path`` until cancelled or
        :meth:`shutdown` (connections then close with 1001 after the grace period)."""
        shutdown = self._new_shutdown_event()
        try:
            await _serve_websocket(
                self._transport_hooks(),
                port=port,
                host=host,
                path=path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                limits=http_limits,
                max_message_size=self.limits.max_frame_size,
                shutdown=shutdown,
                task_status=task_status,
            )
        finally:
            self._shutdown_events.discard(shutdown)

    async def _serve_listeners(
        self,
        listeners: list[trio.SocketListener],
        framing: FramingName,
        transport: str,
        address: Any,
        task_status: trio.TaskStatus[Any],
    ) -> None:
        make_framer(framing, 1)  # reject a bad framing name before accepting anything
        shutdown = self._new_shutdown_event()
        limits = self.limits

        async def handle(stream: trio.SocketStream) -> None:
            channel = FramedChannel(
                stream,
                stream,
                make_framer(framing, limits.max_frame_size),
                read_timeout=limits.read_timeout,
                idle_timeout=limits.idle_timeout,
            )
            await self.serve_connection(
                channel,
                session=Session(transport),
                connection_id=f"{transport}-{next(_stream_ids)}",
                shutdown=shutdown,
            )

        try:
            async with trio.open_nursery() as connections:
                with trio.CancelScope() as accept_scope:

                    async def stop_accepting() -> None:
                        await shutdown.wait()
                        accept_scope.cancel()

                    connections.start_soon(stop_accepting)
                    log.info("listening transport=%s address=%s", transport, address)
                    task_status.started(address)
                    await trio.serve_listeners(handle, listeners, handler_nursery=connections)
        finally:
            self._shutdown_events.discard(shutdown)
            with trio.CancelScope(shield=True):
                for listener in listeners:
                    await listener.aclose()

    def run(
        self,
        transport: Literal["stdio", "tcp", "unix", "http", "sse", "ws"] = "stdio",
        **options: Any,
    ) -> None:
        """Blocking convenience: serve with SIGINT/SIGTERM handled (see ``runtime._cli``)."""
        from ._cli import run_with_signals

        serve: dict[str, Callable[..., Any]] = {
            "stdio": self.serve_stdio,
            "tcp": self.serve_tcp,
            "unix": self.serve_unix,
            "http": self.serve_http,
            "sse": self.serve_sse,
            "ws": self.serve_websocket,
        }
        trio.run(run_with_signals, self, serve[transport], options)
