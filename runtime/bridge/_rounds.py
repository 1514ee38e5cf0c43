"""The bridge's input rounds: a handshake-era remote asking a 2026-07-28 client.

A handshake-era server asks its client (sampling, elicitation, roots) with a server-to-client
request and waits for the answer while the request it serves is still open (2025-11-25
client/*). A 2026-07-28 client can only be asked in an input round of its own request
(2026-07-28 basic/patterns/mrtr): the server answers ``resultType: "input_required"`` with
``inputRequests`` and a ``requestState``, and the client re-sends the request with
``inputResponses`` and that ``requestState``.

So the proxy runs such a forwarded request as a :class:`Forwarding` in a task of its own
(not the downstream request's): when the remote asks, the downstream request is answered with
an input round whose ``requestState`` names the forwarding (:class:`Rounds` parks it under
that name); the client's retry finds it, hands the answers to the remote's waiting requests,
and waits for the result (or the next round) on the same upstream request. A forwarding
nobody comes back to is cancelled after ``input_timeout`` seconds (the remote's question is
answered with an error, its request cancelled upstream).

Progress and log messages the remote sends while no downstream request is attached (the
client is between two rounds) are held by the forwarding's ``Relay`` and passed on the next
attached request's stream (the retry: 2026-07-28 basic/patterns/mrtr makes it the request
the server is still working on), in order and before its result; one that ends while the
client is between rounds gives its outcome, and what it said meanwhile, to the retry.

Over a link without per-request streams what the remote asks or logs names no request, so
such forwardings go one at a time per upstream session: each takes a turn (the shared
session's, or an extra session of its own, ``_pool``) and holds it until the remote's
request ends, input rounds included.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from ..client import Client, Notification, PeerError, TransportLost
from ..middleware import Request
from ..protocol import INTERNAL_ERROR, INVALID_PARAMS, invalid_params
from ._hop import per_hop_removed, remote_error
from ._pool import PooledSession
from ._relay import Relay
from ._send import Call
from ._shared import SharedSession

__all__ = ["STATE_PREFIX", "Forwarding", "Rounds"]

#: Our ``requestState`` values start with this (the rest is a random token): a retry whose
#: state does not is the remote's own round, passed on as is.
STATE_PREFIX: Final = "mcp-runtime-bridge:"


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
        on its request's stream (a link without per-request streams: the package's rule,
        ``runtime.bridge``)."""
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
                self.error = PeerError(INTERNAL_ERROR, "the forwarded request was cancelled")
            for ask in self.asks.values():
                if not ask.answered.is_set():
                    ask.error = PeerError(INTERNAL_ERROR, "the forwarded request ended")
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
            raise PeerError(INTERNAL_ERROR, f"the client did not answer {method} in time")
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
                ask.error = PeerError(INVALID_PARAMS, f"Invalid params: no inputResponses[{key!r}]")
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


class Rounds:
    """2026-07-28 requests to a handshake-era remote that may be asked questions, each run
    as a :class:`Forwarding` (see the module docstring): started by the downstream request,
    parked between input rounds under its ``requestState``, resumed by the retry."""

    def __init__(self, shared: SharedSession, *, call_timeout: float, round_timeout: float):
        self.shared = shared
        self.call_timeout = call_timeout
        self.round_timeout = round_timeout
        #: Forwardings waiting for our client's retry, by their ``requestState``.
        self.parked: dict[str, Forwarding] = {}

    async def forward(self, call: Call) -> Any:
        """The downstream answer to ``call``: the remote's result, or an input round."""
        state = call.params.get("requestState")
        if isinstance(state, str) and state.startswith(STATE_PREFIX):
            forwarding = self.parked.pop(state, None)
            if forwarding is None:
                raise invalid_params("requestState is unknown or its request ended")
            forwarding.linger.cancel()
            forwarding.answer(call.params.get("inputResponses"))
        else:
            forwarding = await self._start(call)
        try:
            finished, value = await forwarding.outcome(call.request)
        except PeerError as exc:
            raise remote_error(exc) from None
        if finished:
            return per_hop_removed(value)
        self.parked[forwarding.state] = forwarding
        return {
            "resultType": "input_required",
            "inputRequests": value,
            "requestState": forwarding.state,
        }

    async def _start(self, call: Call) -> Forwarding:
        shared = self.shared
        client = call.client
        pooled: PooledSession | None = None
        if not shared.streams_per_request:
            # No per-request streams to the remote: one such forwarding at a time on an
            # upstream session, so what the remote sends meanwhile is its; up to
            # max_parallel on sessions of their own.
            pooled = await shared.take_turn()
            if pooled is not None:
                client = pooled.client or client
        try:
            return self._run(call, client, pooled)
        except BaseException:
            if not shared.streams_per_request:
                shared.pool.give_turn_back(pooled)
            raise

    def _run(self, call: Call, client: Client, pooled: PooledSession | None) -> Forwarding:
        """The forwarding of ``call`` through ``client``, run in the shared nursery."""
        shared = self.shared
        nursery = shared.require_nursery()
        forwarding = Forwarding(call.request, self.round_timeout)
        relay = Relay(lambda: forwarding.current)
        if pooled is not None:
            pooled.forwarding = forwarding  # its session's questions and log messages
            pooled.sink = forwarding.note

        async def send() -> Any:
            return await client.request(
                call.method,
                call.params,
                # The whole forwarding, input rounds included; a round nobody comes back to
                # ends sooner (round_timeout).
                timeout=self.call_timeout,
                progress=relay.progress,
                on_notification=relay.note,
                on_request=forwarding.ask,
            )

        async def run() -> None:
            # The shared session's forwardings (its questions go to the newest of them).
            on_shared = pooled is None
            if on_shared:
                shared.forwardings.append(forwarding)
            try:
                await forwarding.run(send, relay)
            finally:
                if on_shared:
                    shared.forwardings.remove(forwarding)
                if not shared.streams_per_request:
                    shared.pool.give_turn_back(
                        pooled, lost=isinstance(forwarding.error, TransportLost)
                    )
            try:
                if forwarding.state in self.parked and not forwarding.abandoned:
                    # The remote answered while our client was between two rounds: its
                    # retry gets the outcome (and what the remote said meanwhile), if it
                    # comes within round_timeout.
                    with forwarding.linger, trio.move_on_after(self.round_timeout):
                        await trio.sleep_forever()
            finally:
                self.parked.pop(forwarding.state, None)

        nursery.start_soon(run)
        return forwarding
