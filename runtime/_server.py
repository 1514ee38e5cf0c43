"""``Server``: the user's app object: decorators to register features, ``serve_*`` to run.

This module and ``_serving`` (the ``serve_*`` side, a mixin of ``Server``) are the
composition root: the one place in ``runtime`` that imports the ``handlers`` package (which
implements MCP semantics against the registry) and wires it to the core dispatcher and the
transports. See docs/architecture.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, TypeVar, overload

import trio

from ._context import Context
from ._output import output_spec
from ._pagination import CursorCodec
from ._registry import Completer, PromptDef, Registry, ResourceDef, TemplateDef, ToolDef
from ._serving import Serving
from ._signature import doc_summary, inspect_signature
from ._state import StateSealer
from ._tasks import TaskTable
from ._threads import WorkerThreads
from ._uritemplate import UriTemplate, is_template
from .core import Dispatcher, Limits

__all__ = ["Lifespan", "Server"]

log = logging.getLogger("mcp_runtime.server")
F = TypeVar("F", bound=Callable[..., Any])
#: ``lifespan(app)`` -> an async context manager whose value becomes ``app.state``.
Lifespan = Callable[["Server"], AbstractAsyncContextManager[Any]]
C = TypeVar("C", bound=Completer)


class Server(Serving):
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
        """
        if cache_ttl_ms < 0:
            raise ValueError("cache_ttl_ms must be >= 0")
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        #: Icons (MCP 2025-11-25 ``Icon``: ``{"src", "mimeType"?, "sizes"?, "theme"?}``).
        self.icons = icons
        self.website_url = website_url
        self.limits = limits or Limits()
        self.registry = Registry()
        self.cursors = CursorCodec(page_size)
        self._completer: Completer | None = None
        self.state_sealer = StateSealer(state_secret, ttl_seconds=state_ttl)
        #: Tasks (both task protocols): bounded, with TTLs; see ``runtime._tasks``.
        self.tasks = TaskTable(on_change=self.registry.changes.task_changed)
        #: Worker threads for plain ``def`` handlers, bounded by ``limits`` (issue 16).
        self.worker_threads = WorkerThreads(lambda: self.limits)
        self._cache_default = (cache_ttl_ms, cache_scope)
        self._cache_hints: dict[str, tuple[int, str]] = dict(cache_hints or {})
        self._dispatcher: Dispatcher | None = None
        self._shutdown_events: set[trio.Event] = set()
        self._lifespan = lifespan
        #: What ``lifespan`` yielded, while serving (else None).
        self.state: Any = None
        self._serving = 0
        self._all_served: trio.Event | None = None

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

        ``task``: the tool may run as a task ("optional") or must ("required", 2025-11-25
        clients must then ask for a task). Modern clients that declare the
        ``io.modelcontextprotocol/tasks`` extension get a task handle at once and poll it.
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
                    icons=icons,
                    meta=meta,
                    output=output,
                    output_schema=output_schema,
                    task_support=task,
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
                    TemplateDef(
                        template=template,
                        name=res_name,
                        fn=func,
                        signature=sig,
                        title=title,
                        description=desc,
                        mime_type=mime_type,
                        icons=icons,
                        cache=cache,
                    )
                )
            else:
                if sig.required:
                    raise TypeError(
                        f"{res_name}: a static resource takes no arguments "
                        f"(got {list(sig.required)}); use a URI template"
                    )
                self.registry.add_resource(
                    ResourceDef(
                        uri=uri,
                        name=res_name,
                        fn=func,
                        signature=sig,
                        title=title,
                        description=desc,
                        mime_type=mime_type,
                        icons=icons,
                        cache=cache,
                    )
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
            prompt_name = name or func.__name__
            sig = inspect_signature(func, name=prompt_name, context_type=Context, lax=True)
            self.registry.add_prompt(
                PromptDef(prompt_name, func, sig, title, description or doc_summary(func), icons)
            )
            return func

        return register(fn) if fn is not None else register

    @property
    def completer(self) -> Completer | None:
        return self._completer

    def completion(self, fn: C) -> C:
        """Register the server's completer for ``completion/complete``:
        ``async def complete(ref_type, ref, argument, value, context) -> list[str]`` where
        ``ref_type`` is ``"ref/prompt"`` or ``"ref/resource"``, ``ref`` the prompt name or
        template URI, and ``context`` the arguments already filled in. Without one,
        ``Literal``/``Enum`` annotations are completed by prefix.
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
        per subscriber (runtime._broadcast). Call it from any task of the server's trio run,
        or from a sync tool's worker thread (it hops to the trio thread).
        """
        self.registry.changes.resource_updated(uri)

    def notify_list_changed(self, kind: Literal["tools", "prompts", "resources"]) -> None:
        """Send ``notifications/{kind}/list_changed`` yourself, for lists computed outside
        the registry (registry changes send it already). Same contract as
        :meth:`notify_resource_updated`."""
        self.registry.changes.list_changed(kind)

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
        """The Implementation object (serverInfo): name, version, title, icons, websiteUrl."""
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        if self.icons:
            info["icons"] = self.icons
        if self.website_url is not None:
            info["websiteUrl"] = self.website_url
        return info
