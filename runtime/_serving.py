"""One server served over each transport (``Server.serve_*``).

Every serve holds the server serving (``Lifetime.running``: the outermost enters the
lifespan) and registers a shutdown signal for its body (``Server.shutdown`` sets it: stop
reading and accepting, then give in-flight requests ``Limits.shutdown_grace``). Stream
transports (stdio, TCP, Unix sockets, named pipes) end as one ``Connection`` per client; the
network transports (HTTP, WebSocket) are given the server's port (``_compose``) and run
with its store, shared with the other replicas when it is shared (``runtime.ensemble``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio

from ._lifetime import Lifetime, ServerCrashed
from .core import Connection, Session
from .transports import FramedChannel, FramingName, make_framer, open_stdio_channel

if TYPE_CHECKING:
    import socket

    from ._compose import Composed
    from ._pipeline import Pipeline
    from .auth import AuthConfig
    from .ensemble import Shares
    from .middleware import Metrics
    from .stores import Store
    from .transports import EventStore, HttpLimits, ServerPort

    # Declared for the type checker only: ``Shares`` lives beside the store, which a stdio
    # server never loads.
    class Served(Shares, Composed, Protocol):
        """What serving needs of a server (``runtime.Server`` is one)."""

        #: ``runtime.stores``: a URL or a ``Store`` (opened when a network serve starts).
        store: Store | str | None
        #: What the network transports use when their serve is given none of its own.
        http_limits: HttpLimits | None
        event_store: EventStore | None


__all__ = ["Serving"]

log = logging.getLogger("mcp_runtime.server")
_stream_ids = itertools.count(1)
#: Seconds after serving stdio on past a fault within which another fault ends the server
#: (``Serving.stdio``): a fault that comes back at once would otherwise be served on in a loop.
_FAULT_AGAIN: Final = 1.0


class Serving:
    """The transports' side of one server: ``server`` (its dispatcher, limits, store and
    connections) under ``lifetime`` (the lifespan, the count of serves, shutdown), with
    ``pipeline`` (its middleware: an HTTP serve's metrics join it)."""

    def __init__(self, server: Served, lifetime: Lifetime, pipeline: Pipeline) -> None:
        self._server = server
        self._lifetime = lifetime
        self._pipeline = pipeline

    async def stdio(self, framing: FramingName, task_status: trio.TaskStatus[None]) -> None:
        server = self._server
        limits = server.limits
        async with self._lifetime.running():
            with self._lifetime.shutdown_signal() as shutdown:
                async with open_stdio_channel(
                    framing=framing,
                    max_frame_size=limits.max_frame_size,
                    read_timeout=limits.read_timeout,
                    idle_timeout=limits.idle_timeout,
                ) as channel:
                    task_status.started()
                    session = Session("stdio")
                    last_fault = -math.inf
                    while True:
                        served: list[Connection] = []
                        try:
                            await server.serve_connection(
                                channel,
                                session=session,
                                connection_id="stdio",
                                shutdown=shutdown,
                                started=served.append,
                            )
                        except Exception:  # a fault of ours the connection did not catch
                            log.exception("stdio connection failed")
                        else:
                            if not served or served[0].close_reason != "crashed":
                                break  # the end of input, shutdown, a read timeout...
                        # The one connection is the server. As a TCP, WebSocket or HTTP
                        # connection's fault costs that connection, this one's costs the
                        # connection (logged with its traceback, requests it cut short
                        # answered -32603), and a new one serves on over the same pipes and
                        # session. A fault again within a second is one that serving on
                        # cannot get past (the same input, the same start): the process
                        # must then not look like it ended well.
                        now = trio.current_time()
                        if shutdown.is_set() or now - last_fault < _FAULT_AGAIN:
                            raise ServerCrashed("the stdio connection crashed (see the log above)")
                        last_fault = now
                        log.warning("serving stdio on after a fault (see the log above)")

    async def tcp(
        self,
        port: int,
        host: str,
        framing: FramingName,
        sock: socket.socket | None,
        task_status: trio.TaskStatus[tuple[Any, ...]],
    ) -> None:
        async with self._lifetime.running():
            if sock is not None:
                listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(sock))]
            else:
                listeners = await trio.open_tcp_listeners(port, host=host)
            address = listeners[0].socket.getsockname()
            await self._listeners(listeners, framing, "tcp", address, task_status)

    async def unix(
        self,
        path: str,
        framing: FramingName,
        sock: socket.socket | None,
        task_status: trio.TaskStatus[str],
    ) -> None:
        async with self._lifetime.running():
            if sock is not None:
                shared = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
                await self._listeners([shared], framing, "unix", path, task_status)
                return
            from .transports import open_unix_listener  # on first use (start-up time)

            listener = await open_unix_listener(path)
            try:
                await self._listeners([listener], framing, "unix", path, task_status)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)

    async def pipe(
        self, directory: str, framing: FramingName, task_status: trio.TaskStatus[str]
    ) -> None:
        from .transports import serve_pipe  # on first use (start-up time)

        server = self._server
        limits = server.limits
        async with self._lifetime.running():
            with self._lifetime.shutdown_signal() as shutdown:

                async def handle(channel: FramedChannel) -> None:
                    await server.serve_connection(
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
                        await serve_pipe(
                            directory,
                            handle,
                            framing=framing,
                            max_frame_size=limits.max_frame_size,
                            read_timeout=limits.read_timeout,
                            idle_timeout=limits.idle_timeout,
                            task_status=task_status,
                        )

    async def http(
        self,
        *,
        port: int,
        host: str,
        path: str | None,
        sse_path: str | None,
        messages_path: str,
        allowed_origins: Iterable[str] | None,
        allowed_hosts: Iterable[str] | None,
        http_limits: HttpLimits | None,
        authenticate: Callable[[dict[str, str]], Awaitable[Any]] | None,
        auth: AuthConfig | None,
        event_store: EventStore | None,
        sock: Any,
        metrics: Metrics | None,
        metrics_path: str,
        metrics_token: str | None,
        sockets: Sequence[socket.socket] | None,
        task_status: trio.TaskStatus[tuple[Any, ...]],
    ) -> None:
        """``Server.serve_http``: the server's own ``http_limits`` and ``event_store`` when
        the call gives none; ``metrics`` counts every request, so it is the outermost
        middleware."""
        if metrics is not None:
            self._pipeline.put_first(metrics)
        from .transports import serve_http

        server = self._server
        async with self.network() as (server_port, store, shutdown):
            await serve_http(
                server_port,
                port=port,
                host=host,
                path=path,
                sse_path=sse_path,
                messages_path=messages_path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                limits=http_limits or server.http_limits,
                max_body_size=server.limits.max_frame_size,
                authenticate=authenticate,
                auth=auth,
                event_store=event_store or server.event_store,
                store=store,
                sock=sock,
                sockets=sockets,
                metrics=metrics.render if metrics is not None else None,
                metrics_path=metrics_path,
                metrics_token=metrics_token,
                shutdown=shutdown,
                task_status=task_status,
            )

    async def websocket(
        self,
        *,
        port: int,
        host: str,
        path: str,
        allowed_origins: Iterable[str] | None,
        allowed_hosts: Iterable[str] | None,
        http_limits: HttpLimits | None,
        auth: AuthConfig | None,
        authenticate: Callable[[dict[str, str]], Awaitable[Any]] | None,
        sock: socket.socket | None,
        task_status: trio.TaskStatus[tuple[Any, ...]],
    ) -> None:
        """``Server.serve_websocket``: the server's own ``http_limits`` when the call gives
        none; a message is at most a frame (``Limits.max_frame_size``)."""
        from .transports import serve_websocket

        server = self._server
        async with self.network() as (server_port, _store, shutdown):
            await serve_websocket(
                server_port,
                port=port,
                host=host,
                path=path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                limits=http_limits or server.http_limits,
                max_message_size=server.limits.max_frame_size,
                auth=auth,
                authenticate=authenticate,
                shutdown=shutdown,
                sock=sock,
                task_status=task_status,
            )

    @contextlib.asynccontextmanager
    async def network(self) -> AsyncIterator[tuple[ServerPort, Store, trio.Event]]:
        """For HTTP and WebSocket, held for their whole serve: the port they are given
        (``_compose``), the server's store, running (shared with the other replicas when
        it is shared: list changes, resource updates, sealing keys, tasks), and the
        shutdown signal."""
        from .ensemble import sharing
        from .stores import open_store

        async with self._lifetime.running():
            store = open_store(self._server.store)
            with self._lifetime.shutdown_signal() as shutdown:
                from ._compose import transport_port

                async with sharing(self._server, store):
                    yield transport_port(self._server), store, shutdown

    async def _listeners(
        self,
        listeners: list[trio.SocketListener],
        framing: FramingName,
        transport: str,
        address: Any,
        task_status: trio.TaskStatus[Any],
    ) -> None:
        make_framer(framing, 1)  # reject a bad framing name before accepting anything
        server = self._server
        limits = server.limits
        stack = contextlib.ExitStack()
        shutdown = stack.enter_context(self._lifetime.shutdown_signal())

        # One task watches shutdown for every connection (stop_accepting), and connections
        # are served directly (this serve already holds the server running): an idle
        # connection costs no watcher task and no context manager.
        live: set[Connection] = set()

        def started(connection: Connection) -> None:
            live.add(connection)
            if shutdown.is_set():
                connection.stop_reading()

        async def handle(stream: trio.SocketStream) -> None:
            channel = FramedChannel.over_socket(
                stream,
                make_framer(framing, limits.max_frame_size),
                read_timeout=limits.read_timeout,
                idle_timeout=limits.idle_timeout,
            )
            connection = Connection(
                channel,
                server.dispatcher,
                limits=limits,
                session=Session(transport),
                connection_id=f"{transport}-{next(_stream_ids)}",
            )
            try:
                await connection.serve(started=started)
            except Exception:  # a fault of ours costs this connection, never the server
                log.exception("%s connection failed conn=%s", transport, connection.connection_id)
                with trio.CancelScope(shield=True):
                    await channel.aclose()
            finally:
                live.discard(connection)

        from .ensemble import sharing
        from .stores import open_store

        try:
            # With a shared store (--store, e.g. under --workers): list changes, resource
            # updates, sealing keys and 2026-07-28 tasks reach the other workers/replicas.
            async with (
                sharing(server, open_store(server.store)),
                trio.open_nursery() as connections,
            ):
                with trio.CancelScope() as accept_scope:

                    async def stop_accepting() -> None:
                        await shutdown.wait()
                        accept_scope.cancel()
                        for connection in list(live):
                            connection.stop_reading()

                    connections.start_soon(stop_accepting)
                    log.info("listening transport=%s address=%s", transport, address)
                    task_status.started(address)
                    await trio.serve_listeners(handle, listeners, handler_nursery=connections)
        finally:
            stack.close()
            with trio.CancelScope(shield=True):
                for listener in listeners:
                    await listener.aclose()
