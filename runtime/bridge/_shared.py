"""The shared upstream session: the one client every 2026-07-28 request is forwarded through.

2026-07-28 requests are stateless, so they share one upstream client, connected when serving
starts (it also tells at start-up that the remote is reachable) and closed when serving
ends. What the remote sends on it naming no request of ours, over a link without per-request
streams (stdio, TCP, Unix, WebSocket, legacy SSE), has to be given to the right forwarded
request: :class:`SharedSession` keeps the forwarded requests that may be asked or logged to
(their input-round forwardings, their relays) and routes the remote's questions and log
messages to them. Requests that must not share it take a turn from the pool (``_pool``): the
shared session's own turn, or an extra session with its log level.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from ..client import Client, Notification, PeerError
from ..framing import loggable
from ..middleware import Request
from ..protocol import (
    ELICITATION_CREATE,
    LOG_LEVELS,
    LOG_MESSAGE,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    TOOLS_LIST_CHANGED,
)
from ._pool import Connect, PooledSession, UpstreamPool
from ._relay import Addressee, Relay, nobody_to_ask
from ._tasks import ModernClientTasks

__all__ = ["SharedSession"]

log = logging.getLogger("mcp_runtime.bridge")


class SharedSession:
    """The proxy's shared upstream session (see the module docstring): its client, open
    while serving; the turns on it and on the pool's extra sessions; the log level set on it
    for a handshake-era remote; who gets what the remote sends on it without naming a
    request."""

    def __init__(
        self,
        pool: UpstreamPool,
        tasks: ModernClientTasks,
        *,
        round_timeout: float,
        streams_per_request: bool,
    ) -> None:
        #: Set while serving (``serving``), None otherwise.
        self.client: Client | None = None
        self.connect: Connect | None = None
        #: Where forwardings run that outlive a downstream request (input rounds, the
        #: watchers of translated tasks, the pool's extra sessions).
        self.nursery: trio.Nursery | None = None
        #: Turns for forwardings that must not share an upstream session: the shared
        #: session's (the pool's lane), or an extra session of their own.
        self.pool = pool
        #: 2026-07-28 clients' tasks on a handshake-era remote, translated (``_tasks``).
        self.tasks = tasks
        self.round_timeout = round_timeout
        #: Whether the remote's link ties each message to its request (Streamable HTTP:
        #: per-request response streams).
        self.streams_per_request = streams_per_request
        #: The log level set on a handshake-era remote's shared session: the lowest any
        #: 2026-07-28 request asked for (each request's own level is applied when relaying).
        self.level: str | None = None
        #: Forwardings of 2026-07-28 requests that can be asked (input rounds, ``_rounds``) on
        #: this session, oldest first: its questions go to the newest.
        self.forwardings: list[Addressee] = []
        #: 2026-07-28 requests on this session that carry a log level, and the relay passing
        #: the remote's log messages on to each.
        self.relays: dict[Request, Relay] = {}

    def handlers(self) -> dict[str, Any]:
        """The shared client's handlers (``open_client`` keyword arguments)."""
        return {
            "sampling": self._asked(SAMPLING_CREATE_MESSAGE),
            "elicitation": self._asked(ELICITATION_CREATE),
            "roots": self._asked(ROOTS_LIST),
            "on_notification": self.on_notification,
        }

    def serving(self, client: Client, connect: Connect, nursery: trio.Nursery) -> None:
        """Serving started: ``client`` is open, ``connect`` opens more, ``nursery`` runs
        what outlives a downstream request."""
        self.client, self.connect, self.nursery = client, connect, nursery

    def stopped(self) -> None:
        self.client = self.connect = self.nursery = None
        self.level = None

    def require_client(self) -> Client:
        if self.client is None:
            raise RuntimeError("the proxy is not connected to its remote server")
        return self.client

    def require_nursery(self) -> trio.Nursery:
        if self.nursery is None:
            raise RuntimeError("the proxy is not serving")
        return self.nursery

    async def lower_level(self, client: Client, level: str) -> None:
        """A handshake-era remote logs at its session's level: the shared session is set to
        the lowest level a 2026-07-28 request asked for (each request then gets only what
        its own level lets through, see ``Relay``)."""
        current = self.level
        if current is not None and LOG_LEVELS.index(current) <= LOG_LEVELS.index(level):
            return
        self.level = level
        try:
            await client.set_logging_level(level)  # re-applied by the client on reconnect
        except PeerError as exc:
            log.warning("the remote refused logging/setLevel %s: %s", level, loggable(exc))

    async def take_turn(self) -> PooledSession | None:
        """A turn for a forwarding (``UpstreamPool.take_turn``): None for the shared
        session, else an extra upstream session (with the shared session's log level);
        given back with ``pool.give_turn_back``."""
        nursery, connect = self.nursery, self.connect
        if nursery is None or connect is None:
            raise RuntimeError("the proxy is not serving")
        pooled = await self.pool.take_turn(connect, nursery)
        if pooled is None:
            return None
        try:
            level = self.level
            if level is not None and pooled.level != level and pooled.client is not None:
                await pooled.client.set_logging_level(level)
                pooled.level = level
        except PeerError as exc:
            log.warning("the remote refused logging/setLevel %s: %s", level, loggable(exc))
        except BaseException:
            self.pool.give_turn_back(pooled)
            raise
        return pooled

    def on_notification(self, note: Notification) -> None:
        """The shared client's notifications (synchronously). Over a link without
        per-request streams a handshake-era remote's log message names no request: it goes to
        the one 2026-07-28 forwarding in flight (the lane makes it the only one)."""
        if note.method == TOOLS_LIST_CHANGED:
            self.tasks.support.clear()  # tools' taskSupport is read again on next use
        if self.streams_per_request or note.method != LOG_MESSAGE:
            return
        if len(self.forwardings) == 1:
            self.forwardings[0].note(note)
        elif not self.forwardings and len(self.relays) == 1:
            # A 2026-07-28 remote (or a request that cannot be asked): the one request in
            # flight that wants log messages (the lane keeps it the only one).
            next(iter(self.relays.values())).note(note)

    def _asked(self, method: str) -> Any:
        """The shared client's handler for the remote's ``method`` requests."""

        async def forward(params: dict[str, Any]) -> Any:
            # Only 2026-07-28 requests use the shared client: such a client can only be
            # asked in an input round of its own request. A question that arrived on a
            # forwarded request's stream went to its forwarding already; one over a link
            # that cannot tell (stdio, TCP, WebSocket, legacy SSE) goes to the newest
            # forwarding, as a handshake-era session's do (UpstreamSession.handler).
            bridged = await self.tasks.ask_for(params)
            if bridged is not None:  # a translated task's question (related-task _meta)
                return await bridged.ask(method, params, self.round_timeout)
            if self.forwardings:
                return await self.forwardings[-1].ask(method, params)
            raise nobody_to_ask(method)

        return forward
