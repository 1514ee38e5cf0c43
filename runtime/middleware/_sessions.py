"""Counting open handshake-era sessions from inside a middleware.

A middleware sees requests, not connections: the first request of a connection (stdio,
TCP, WebSocket, an HTTP session) starts a task beside its requests (``Peer.start_soon``)
that holds the count until the connection ends and cancels it. Modern (2026-07-28) requests
are stateless: they open no session.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from ._chain import Request

__all__ = ["SessionCounter"]


class SessionCounter:
    """Calls ``on_change(+1)`` when a connection is first seen, ``on_change(-1)`` when it
    ends. ``open`` is the current count."""

    def __init__(self, on_change: Callable[[int], None] | None = None) -> None:
        self.on_change = on_change
        self._seen: set[str] = set()

    @property
    def open(self) -> int:
        return len(self._seen)

    def saw(self, request: Request) -> None:
        if request.context.modern:
            return
        key = request.connection_id
        if key in self._seen:
            return
        self._seen.add(key)
        if self.on_change is not None:
            self.on_change(1)

        async def hold() -> None:
            try:
                await trio.sleep_forever()
            finally:
                self._seen.discard(key)
                if self.on_change is not None:
                    self.on_change(-1)

        try:
            request.context.peer.start_soon(hold, name=f"session-count {key}")
        except Exception:  # a peer that cannot hold a task (one request): not a session
            self._seen.discard(key)
            if self.on_change is not None:
                self.on_change(-1)
