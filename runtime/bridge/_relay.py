"""What the remote says while a request is forwarded, passed on to the downstream request.

The remote's progress and log messages for one forwarded request reach the proxy's client
on that request's own stream (Streamable HTTP) or, over links without per-request streams,
on the upstream session with no request named; either way a :class:`Relay` passes them on,
in order, to the downstream request they belong to: progress re-keyed to that request's own
``progressToken``, a log message only at or above the level that request carries (2026-07-28
server/utilities/logging). A handshake-era downstream session gets its log messages from its
upstream session instead (``_session``).

Over a link without per-request streams the remote's questions and log messages name no
request: they go to the one forwarded request an upstream session carries at the time, an
:class:`Addressee` (the pool's and the shared session's rule, ``_pool``, ``_shared``).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

import trio

from ..client import Notification, PeerError
from ..framing import loggable
from ..middleware import Request
from ..protocol import LOG_LEVELS, LOG_MESSAGE, META_LOG_LEVEL, METHOD_NOT_FOUND, PROGRESS

__all__ = ["RELAY_QUEUE", "Addressee", "Relay", "nobody_to_ask", "passes", "requested_level"]

log = logging.getLogger("mcp_runtime.bridge")

#: A relayed message waits at most this many deep (a forwarded request's progress and log
#: messages, a downstream session's notifications, a listen's): past it the newest are
#: dropped (logged), so a downstream client that stops reading cannot make the proxy buffer
#: without bound.
RELAY_QUEUE: Final = 256


class Addressee(Protocol):
    """The forwarded request an upstream session carries, as the remote's messages that name
    no request reach it (a link without per-request streams)."""

    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        """The remote's question (sampling, elicitation, roots), answered by this request's
        client; raises ``PeerError`` to answer the remote with an error."""

    def note(self, note: Notification) -> None:
        """The remote's notification (synchronously: queued, never awaited)."""


def nobody_to_ask(method: str) -> PeerError:
    """The remote's answer when it asks on a session that carries no 2026-07-28 request:
    such a client can be asked only in an input round of its own request."""
    return PeerError(
        METHOD_NOT_FOUND, f"Method not found: {method} (no 2026-07-28 request being forwarded)"
    )


class Relay:
    """The remote's progress and log messages for one forwarded request, passed on in order
    to the downstream request ``target()`` returns (None: held until one is attached, the
    client being between two input rounds, ``_rounds``)."""

    def __init__(self, target: Callable[[], Request | None]) -> None:
        self._target = target
        #: Received, not yet passed on (waiting for a downstream request to be attached).
        self.held: collections.deque[tuple[str, dict[str, Any]]] = collections.deque()
        self._send, self._receive = trio.open_memory_channel[tuple[str, dict[str, Any]]](
            RELAY_QUEUE
        )

    def _put(self, method: str, params: dict[str, Any]) -> None:
        try:
            self._send.send_nowait((method, params))
        except trio.WouldBlock:
            log.warning("downstream request not reading: dropped %s", loggable(method))
        except trio.ClosedResourceError:
            pass

    def progress(self, value: float, total: float | None, message: str | None) -> None:
        note: dict[str, Any] = {"progress": value}
        if total is not None:
            note["total"] = total
        if message is not None:
            note["message"] = message
        self._put(PROGRESS, note)

    def note(self, note: Notification) -> None:
        if note.method == LOG_MESSAGE:
            self._put(note.method, dict(note.params))

    def close(self) -> None:
        self._send.close()

    def attached(self) -> None:
        """A downstream request was attached (``target()`` is no longer None): what was held
        while none was goes to it now."""
        self._put("", {})

    async def run(self) -> None:
        async for method, params in self._receive:
            if method:
                self.held.append((method, params))
            request = self._target()
            if request is None:
                # Between two input rounds (2026-07-28 basic/patterns/mrtr): no downstream
                # request is attached; held for the next round's request (or the final
                # reply's stream), at most RELAY_QUEUE (the oldest dropped past it).
                while len(self.held) > RELAY_QUEUE:
                    dropped, _ = self.held.popleft()
                    log.warning(
                        "no downstream request between rounds: dropped %s", loggable(dropped)
                    )
                continue
            await self.deliver(request)

    async def deliver(self, request: Request) -> None:
        """Pass what is held on to ``request``, in order."""
        while self.held:
            method, params = self.held.popleft()
            if method == PROGRESS:
                token = request.meta.get("progressToken")
                if not isinstance(token, str | int):
                    continue
                params = {"progressToken": token, **params}
            elif not passes(params.get("level"), requested_level(request)):
                continue
            await request.context.peer.notify(method, params, related=request.id)


def requested_level(request: Request) -> str | None:
    """The log level a 2026-07-28 request asks for (2026-07-28 server/utilities/logging:
    ``_meta["io.modelcontextprotocol/logLevel"]``; none: no log messages)."""
    level = request.meta.get(META_LOG_LEVEL)
    return level if level in LOG_LEVELS else None


def passes(level: Any, threshold: str | None) -> bool:
    """A message at ``level`` goes to a request that asked for ``threshold``."""
    if threshold is None or level not in LOG_LEVELS:
        return False
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)
