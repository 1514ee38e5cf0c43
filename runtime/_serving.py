"""``Server``'s serving side (a mixin): ``serve_*`` for every transport, ``run``, and
``shutdown``; the lifespan and task nursery every serve holds. The transports are wired to
the dispatcher by ``runtime._hooks``."""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar, cast

import trio

from ._registry import Registry
from ._tasks import TaskTable
from .core import (
    Connection,
    Dispatcher,
    Limits,
    MessageChannel,
    Session,
)
from .transports import FramedChannel, FramingName, make_framer, open_stdio_channel
from .transports import open_unix_listener as _open_unix_listener
from .transports import serve_pipe as _serve_pipe

if TYPE_CHECKING:
    # The network transports and auth load on first use (start-up time of stdio servers).
    from ._server import Lifespan, Server
    from .auth import AuthConfig
    from .transports import EventStore, HttpLimits

__all__ = ["Serving"]

log = logging.getLogger("mcp_runtime.server")
P = ParamSpec("P")
R = TypeVar("R")
_stream_ids = itertools.count(1)


def _holding_running(
    method: Callable[Concatenate[Serving, P], Awaitable[R]],
) -> Callable[Concatenate[Serving, P], Awaitable[R]]:
    """Run a ``serve_*`` method inside ``Server._running`` (lifespan, serve count)."""

    @functools.wraps(method)
    async def serve(self: Serving, /, *args: P.args, **kwargs: P.kwargs) -> R:
        async with self._running():
            return await method(self, *args, **kwargs)

    return serve


class Serving:
    """The serving side of ``Server`` (a mixin; ``Server`` provides the attributes)."""

    if TYPE_CHECKING:  # provided by Server
        limits: Limits
        registry: Registry
        tasks: TaskTable
        state: Any
        _serving: int
        _all_served: trio.Event | None
        _shutdown_events: set[trio.Event]
        _lifespan: Lifespan | None

        @property
        def dispatcher(self) -> Dispatcher: ...

    def shutdown(self) -> None:
        """Begin a graceful shutdown of everything this server is serving: stop reading and
        accepting, give in-flight requests ``limits.shutdown_grace`` seconds, then cancel.
        Safe to call from any task of the server's trio run.
        """
        for event in self._shutdown_events:
            event.set()
        # 2026-07-28 subscriptions "Graceful Closure": open listens complete with a result.
        self.registry.changes.end_all("shutdown")

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[None]:
        """Hold the server "serving" for the body: the first (outermost) entry enters the
        ``lifespan``; nested or concurrent entries (connections inside ``serve_tcp``, a
        ``serve_unix`` beside it) only count. The lifespan exits in the task that entered it
        (trio scopes are task-bound), so that first entry waits at its exit for the others.
        Every ``serve_*`` method holds it (the ``_holding_running`` decorator).
        """
        self._serving += 1
        if self._serving > 1:
            try:
                yield
            finally:
                self._serving -= 1
                if self._serving == 0 and self._all_served is not None:
                    self._all_served.set()
            return
        all_served = self._all_served = trio.Event()
        self.registry.changes.reopen()
        try:
            if self._lifespan is None:
                async with self._task_nursery():
                    yield
            else:
                async with self._lifespan(cast("Server", self)) as state, self._task_nursery():
                    self.state = state
                    try:
                        yield
                    finally:
                        self._serving -= 1
                        try:
                            if self._serving:
                                # Shielded: a cancelled first serve must not pull the
                                # lifespan from under serves still running on it.
                                log.info("lifespan waits for serve_* count=%d", self._serving)
                                with trio.CancelScope(shield=True):
                                    await all_served.wait()
                        finally:
                            self._serving += 1
        finally:
            self._serving -= 1
            self.state = None
            self._all_served = None

    @contextlib.asynccontextmanager
    async def _task_nursery(self) -> AsyncIterator[None]:
        """The nursery tasks (``@app.tool(task=...)``) run in while the server serves: they
        outlive the request and connection that created them, and are cancelled when the
        outermost serve ends. A lone exception from the body is re-raised unwrapped."""
        try:
            async with trio.open_nursery() as nursery:
                self.tasks.nursery = nursery
                try:
                    yield
                finally:
                    self.tasks.nursery = None
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    @contextlib.contextmanager
    def _shutdown_signal(self) -> Iterator[trio.Event]:
        """An event that :meth:`shutdown` sets, registered for the body of one serve call."""
        event = trio.Event()
        self._shutdown_events.add(event)
        try:
            yield event
        finally:
            self._shutdown_events.discard(event)

    @_holding_running
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
        await connection.serve(started=started)

    @_holding_running
    async def serve_stdio(
        self,
        *,
        framing: FramingName = "ndjson",
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve stdin/stdout until stdin reaches EOF or :meth:`shutdown` is called.

        While serving, anything else written to stdout (``print``) goes to stderr.
        """
        limits = self.limits
        with self._shutdown_signal() as shutdown:
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

    @_holding_running
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

    @_holding_running
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

    @_holding_running
    async def serve_pipe(
        self,
        directory: str,
        *,
        framing: FramingName = "ndjson",
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve over a named pipe pair (POSIX FIFOs ``to-server`` and ``from-server`` in
        ``directory``), one client at a time, until cancelled or shut down."""
        limits = self.limits
        with self._shutdown_signal() as shutdown:

            async def handle(channel: FramedChannel) -> None:
                await self.serve_connection(
                    channel,
                    session=Session("pipe"),
                    connection_id=f"pipe-{next(_stream_ids)}",
                    shutdown=shutdown,
                )

            with trio.CancelScope() as scope:

                async def stop() -> None:
                    await shutdown.wait()
                    scope.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(stop)
                    await _serve_pipe(
                        directory,
                        handle,
                        framing=framing,
                        max_frame_size=limits.max_frame_size,
                        read_timeout=limits.read_timeout,
                        idle_timeout=limits.idle_timeout,
                        task_status=task_status,
                    )

    @_holding_running
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
        """
        with self._shutdown_signal() as shutdown:
            from ._hooks import transport_hooks
            from .transports import serve_http as _serve_http

            await _serve_http(
                transport_hooks(self),
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
                auth=auth,
                event_store=event_store,
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

    @_holding_running
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
        task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve MCP over WebSocket (subprotocol ``mcp``) at ``path`` until cancelled or
        :meth:`shutdown` (connections then close with 1001 after the grace period).
        ``auth`` / ``authenticate`` as for :meth:`serve_http`, checked on the upgrade."""
        with self._shutdown_signal() as shutdown:
            from ._hooks import transport_hooks
            from .transports import serve_websocket as _serve_websocket

            await _serve_websocket(
                transport_hooks(self),
                port=port,
                host=host,
                path=path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                limits=http_limits,
                max_message_size=self.limits.max_frame_size,
                auth=auth,
                authenticate=authenticate,
                shutdown=shutdown,
                task_status=task_status,
            )

    async def _serve_listeners(
        self,
        listeners: list[trio.SocketListener],
        framing: FramingName,
        transport: str,
        address: Any,
        task_status: trio.TaskStatus[Any],
    ) -> None:
        make_framer(framing, 1)  # reject a bad framing name before accepting anything
        limits = self.limits
        stack = contextlib.ExitStack()
        shutdown = stack.enter_context(self._shutdown_signal())

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
            stack.close()
            with trio.CancelScope(shield=True):
                for listener in listeners:
                    await listener.aclose()

    def run(
        self,
        transport: Literal["stdio", "tcp", "unix", "http", "sse", "ws", "pipe"] = "stdio",
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
            "pipe": self.serve_pipe,
        }
        trio.run(run_with_signals, cast("Server", self), serve[transport], options)
