"""The bridge's input rounds: a handshake-era remote asking a 2026-07-28 client.

A handshake-era server asks its client (sampling, elicitation, roots) with a server-to-client
request and waits for the answer while the request it serves is still open (2025-11-25
client/*). A 2026-07-28 client can only be asked in an input round of its own request
(2026-07-28 basic/patterns/mrtr): the server answers ``resultType: "input_required"`` with
``inputRequests`` and a ``requestState``, and the client re-sends the request with
``inputResponses`` and that ``requestState``.

So the proxy runs such a forwarded request as a :class:`Forwarding` in a task of its own
(not the downstream request's): when the remote asks, the downstream request is answered with
an input round whose ``requestState`` names the forwarding; the client's retry finds it,
hands the answers to the remote's waiting requests, and waits for the result (or the next
round) on the same upstream request. A forwarding nobody comes back to is cancelled after
``input_timeout`` seconds (the remote's question is answered with an error, its request
cancelled upstream).

Progress and log messages the remote sends while no downstream request is attached (the
client is between two rounds) are held by the :class:`Relay` and passed on the next
attached request's stream (the retry: 2026-07-28 basic/patterns/mrtr makes it the request
the server is still working on), in order and before its result; one that ends while the
client is between rounds gives its outcome, and what it said meanwhile, to the retry.
"""

from __future__ import annotations

import collections
import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from ._context import LOG_LEVELS
from .client import Notification, PeerError
from .framing import loggable
from .middleware import Request
from .protocol import META_LOG_LEVEL

__all__ = ["RELAY_QUEUE", "STATE_PREFIX", "Forwarding", "Relay", "passes", "requested_level"]

log = logging.getLogger("mcp_runtime.bridge")

#: Progress and log messages of one forwarded request waiting to be passed on, at most: past
#: it the newest are dropped (logged), so a stalled downstream cannot make us buffer.
RELAY_QUEUE: Final = 256

#: Our ``requestState`` values start with this (the rest is a random token): a retry whose
#: state does not is the remote's own round, passed on as is.
STATE_PREFIX: Final = "mcp-runtime-bridge:"

#: The remote's ``-32603`` when the client never answered the round in time.
_NO_ANSWER: Final = -32603


class _Ask:
    """One server-to-client request of the remote, waiting for the client's answer."""

    __slots__ = ("answer", "answered", "error", "method", "params", "sent")

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        self.method = method
        self.params = params
        self.sent = False
        self.answered = trio.Event()
        self.answer: Any = None
        self.error: PeerError | None = None


class Forwarding:
    """One upstream request of a 2026-07-28 downstream request, possibly over several of the
    downstream client's retries (see the module docstring). ``current`` is the downstream
    request attached now (progress and log messages go to it)."""

    def __init__(self, request: Request, input_timeout: float) -> None:
        self.current: Request | None = request
        self.state = STATE_PREFIX + secrets.token_urlsafe(24)
        self.input_timeout = input_timeout
        self.asks: dict[str, _Ask] = {}
        self.scope = trio.CancelScope()
        self.done = False
        #: Ended because the client never came back for a round (``input_timeout``).
        self.abandoned = False
        #: Cancelled when a retry claims a forwarding that ended while parked.
        self.linger = trio.CancelScope()
        self.result: Any = None
        self.error: BaseException | None = None
        self._keys = itertools.count(1)
        self._changed = trio.Event()
        self._relay: Relay | None = None

    def _wake(self) -> None:
        self._changed.set()

    def note(self, note: Notification) -> None:
        """A remote's notification that belongs to this forwarding though it did not arrive
        on its request's stream (a link without per-request streams: see
        ``runtime.bridge``'s rule)."""
        if self._relay is not None:
            self._relay.note(note)

    async def run(self, send: Callable[[], Awaitable[Any]], relay: Relay) -> None:
        """Run the upstream request (``send``) to its end and record its result or error,
        once ``relay`` passed on what came before it (so they precede the response)."""
        self._relay = relay
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(relay.run)
                try:
                    with self.scope:
                        self.result = await send()
                except Exception as exc:  # given to the downstream request waiting for it
                    self.error = exc
                finally:
                    relay.close()
        finally:
            self.done = True
            if self.scope.cancelled_caught and self.error is None:
                self.error = PeerError(_NO_ANSWER, "the forwarded request was cancelled")
            for ask in self.asks.values():
                if not ask.answered.is_set():
                    ask.error = PeerError(_NO_ANSWER, "the forwarded request ended")
                    ask.answered.set()
            self._wake()

    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        """The upstream request's ``on_request``: the remote's question, answered by the
        downstream client in an input round."""
        key = f"bridge-{next(self._keys)}"
        ask = _Ask(method, params)
        self.asks[key] = ask
        self._wake()
        with trio.move_on_after(self.input_timeout):
            await ask.answered.wait()
        self.asks.pop(key, None)
        if not ask.answered.is_set():
            self.abandoned = True
            self.scope.cancel()  # nobody came back: give up the forwarded request
            raise PeerError(_NO_ANSWER, f"the client did not answer {method} in time")
        if ask.error is not None:
            raise ask.error
        return ask.answer

    def answer(self, responses: Any) -> None:
        """The client's retry: its ``inputResponses`` for the questions it was sent."""
        responses = responses if isinstance(responses, dict) else {}
        for key, ask in list(self.asks.items()):
            if not ask.sent or ask.answered.is_set():
                continue
            if key in responses:
                ask.answer = responses[key]
            else:
                ask.error = PeerError(-32602, f"Invalid params: no inputResponses[{key!r}]")
            ask.answered.set()

    async def outcome(self, request: Request) -> tuple[bool, Any]:
        """Wait, for downstream ``request``, until the upstream request ended (``(True,
        result)``, or its error raised) or the remote asked something new (``(False,
        input_requests)``: an input round to answer)."""
        self.current = request
        relay = self._relay
        if relay is not None:
            relay.attached()
        try:
            while True:
                if self.done:
                    if relay is not None:
                        # What arrived after the last round and before the end, while no
                        # request was attached: on the final reply's stream, before it.
                        await relay.deliver(request)
                    if self.error is not None:
                        raise self.error
                    return True, self.result
                fresh = {k: a for k, a in self.asks.items() if not a.sent}
                if fresh:
                    for ask in fresh.values():
                        ask.sent = True
                    return False, {
                        key: {"method": ask.method, "params": ask.params}
                        for key, ask in fresh.items()
                    }
                self._changed = trio.Event()
                await self._changed.wait()
        except trio.Cancelled:
            # The downstream request went away while the forwarding was running (not parked
            # for an input round): cancel it upstream as well.
            self.scope.cancel()
            raise
        finally:
            self.current = None


class Relay:
    """The remote's progress and log messages for one forwarded request, passed on in order
    to the downstream request ``target()`` returns (None: dropped). Progress is re-keyed to
    that request's own ``progressToken``; a log message goes only at or above the level
    that request carries (2026-07-28 ``io.modelcontextprotocol/logLevel``; a handshake-era
    downstream session gets its log messages from its upstream session instead)."""

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
        self._put("notifications/progress", note)

    def note(self, note: Notification) -> None:
        if note.method == "notifications/message":
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
            if method == "notifications/progress":
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
