"""A TCP proxy the tests can cut: every connection through it is dropped on ``cut()``,
while the server behind it lives on (a network failure, not a server crash)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


class CuttableProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.connections = 0
        self._scopes: set[trio.CancelScope] = set()

    @property
    def open_connections(self) -> int:
        return len(self._scopes)

    def cut(self) -> int:
        """Drop every open connection; returns how many were cut."""
        scopes = list(self._scopes)
        for scope in scopes:
            scope.cancel()
        return len(scopes)

    async def _handle(self, client: trio.SocketStream) -> None:
        self.connections += 1
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                upstream = await trio.open_tcp_stream("127.0.0.1", self.upstream_port)
                async with upstream, client, trio.open_nursery() as nursery:

                    async def pipe(source: trio.SocketStream, sink: trio.SocketStream) -> None:
                        try:
                            while data := await source.receive_some(65536):
                                await sink.send_all(data)
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            pass
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(pipe, client, upstream)
                    nursery.start_soon(pipe, upstream, client)
            except OSError:
                pass
            finally:
                self._scopes.discard(scope)
        # A cut connection is reset, not closed politely, like a failed network path.
        with trio.CancelScope(shield=True):
            await client.aclose()


@asynccontextmanager
async def open_proxy(upstream_port: int) -> AsyncIterator[CuttableProxy]:
    proxy = CuttableProxy(upstream_port)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, proxy._handle, 0, host="127.0.0.1")
        )
        proxy.port = listeners[0].socket.getsockname()[1]
        yield proxy
        nursery.cancel_scope.cancel()
