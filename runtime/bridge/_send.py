"""One downstream request sent to the remote, and the remote's answer read for our client.

A :class:`Call` is what the proxy knows of a downstream request on its way up: the request,
the upstream client it goes through, its params without what belongs to our client's hop,
its log level. The :class:`Sender` sends it with the deadline ``call_timeout`` and reads the
answer in the downstream client's era: a 2026-07-28 client gets the remote's input rounds
and tasks as they are (``resultType`` kept); a handshake-era client, which has neither, gets
each round's questions as server-to-client requests (the request sent again with the
answers) and a task the remote chose to make run to its end (``_remote_task``). While the
request is out, the remote's progress and log messages for it are relayed (``_relay``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from ..client import Client, PeerError, TransportLost
from ..middleware import Next, Request
from ..protocol import TASKS_RESULT, upstream_error
from ._hop import per_hop_removed, remote_error
from ._pool import PooledSession
from ._relay import Relay
from ._remote_task import await_remote_task
from ._session import UpstreamSession, asking
from ._shared import SharedSession

__all__ = ["DEFAULT_CALL_TIMEOUT", "MAX_INPUT_ROUNDS", "Call", "Handler", "Sender"]

#: Seconds the proxy waits for the remote's answer to one request (``call_timeout``,
#: ``--upstream-call-timeout``): as long as ``round_timeout``, since a remote's question to
#: our client (answered by a person, perhaps) is part of its request's time.
DEFAULT_CALL_TIMEOUT: Final = 300.0

#: Input rounds answered for one forwarded request (as the client's own limit).
MAX_INPUT_ROUNDS: Final = 10


@dataclasses.dataclass(frozen=True, slots=True)
class Call:
    """One downstream request on its way to the remote."""

    request: Request
    #: The rest of the server's chain (our own handler), for what the proxy answers itself.
    call_next: Next
    #: The upstream client it goes through: its session's (handshake era) or the shared one.
    client: Client
    #: Its params without what belongs to our client's hop (``strip_meta``).
    params: dict[str, Any]
    #: The log level a 2026-07-28 request asks for (None: none, or the handshake era).
    level: str | None
    #: A handshake-era request's upstream session (None in the 2026-07-28 era).
    upstream: UpstreamSession | None

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def session(self) -> UpstreamSession:
        """The upstream session of a handshake-era request."""
        if self.upstream is None:
            raise RuntimeError(f"{self.method}: a 2026-07-28 request has no upstream session")
        return self.upstream


#: A route's handler: forwards a call (or answers it), its result the downstream answer.
Handler = Callable[[Call], Awaitable[Any]]


class Sender:
    """Sends calls to the remote (see the module docstring)."""

    def __init__(
        self,
        shared: SharedSession,
        *,
        call_timeout: float,
        round_timeout: float,
        max_poll_interval: float,
    ) -> None:
        self.shared = shared
        #: The deadline of each request to the remote (``tasks/result`` excepted).
        self.call_timeout = call_timeout
        self.round_timeout = round_timeout
        self.max_poll_interval = max_poll_interval

    async def relaying(self, call: Call, *, pooled: PooledSession | None = None) -> Any:
        """Send ``call``, passing on the remote's progress (when the request has a
        ``progressToken``) and, for a 2026-07-28 request that carries a log level, the log
        messages the remote sends on the forwarded request's stream (or, on ``pooled``, on
        that session)."""
        request, level = call.request, call.level
        token = request.meta.get("progressToken")
        if not isinstance(token, str | int) and level is None:
            return await self.send(call)
        relay = Relay(lambda: request)
        if pooled is not None:
            pooled.sink = relay.note  # what the remote logs on its session is this request's
        elif level is not None:
            self.shared.relays[request] = relay
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.run)
            try:
                return await self.send(
                    call,
                    relay.progress if isinstance(token, str | int) else None,
                    relay.note if level is not None else None,
                )
            finally:
                self.shared.relays.pop(request, None)
                relay.close()

    async def in_turn(self, call: Call) -> Any:
        """Send ``call`` in a turn (a 2026-07-28 request that carries a log level, to a
        2026-07-28 remote over a link without per-request streams): on the shared session or
        an extra one of its own, so the log messages on that session are this request's."""
        pooled = await self.shared.take_turn()
        lost = False
        try:
            if pooled is None:
                return await self.relaying(call)
            assert pooled.client is not None
            return await self.relaying(
                dataclasses.replace(call, client=pooled.client), pooled=pooled
            )
        except TransportLost:
            lost = True
            raise
        finally:
            self.shared.pool.give_turn_back(pooled, lost=lost)

    async def send(
        self,
        call: Call,
        progress: Any = None,
        on_notification: Any = None,
        *,
        keep_task: bool = False,
    ) -> Any:
        """Send ``call`` and read the answer in its client's era; ``keep_task``: a
        handshake-era client asked for a task (translated, ``_tasks``), so a task the remote
        makes is answered as one."""
        if call.request.era == "modern":
            result = await self._request(call, call.params, progress, on_notification, None)
            kind = result.get("resultType") if isinstance(result, dict) else None
            # 2026-07-28 tasks extension: the remote's task id is polled through us with
            # tasks/get (forwarded). basic/patterns/mrtr: our client answers the round and
            # retries with inputResponses and the remote's requestState, forwarded as is.
            return per_hop_removed(result, keep_result_type=kind in ("task", "input_required"))
        ask = asking(call.request, self.round_timeout)
        params = call.params
        for _round in range(MAX_INPUT_ROUNDS + 1):
            # A question on this request's own stream (Streamable HTTP) is this request's:
            # asked of its client, related to it.
            result = await self._request(call, params, progress, on_notification, ask)
            kind = result.get("resultType") if isinstance(result, dict) else None
            if kind == "task" and keep_task:
                return per_hop_removed(result, keep_result_type=True)
            if kind == "task":
                # A handshake-era client did not ask for a task (the 2026-07-28 tasks
                # extension is not declared across eras): run it to its end for it.
                return await await_remote_task(
                    call.client, result, ask, max_poll_interval=self.max_poll_interval
                )
            if kind != "input_required":
                return per_hop_removed(result)
            # Each input request of the round becomes a server-to-client request.
            answers: dict[str, Any] = {}
            for key, asked in (result.get("inputRequests") or {}).items():
                answers[key] = await ask(str(asked.get("method")), asked.get("params"))
            params = {**params, "inputResponses": answers}
            if "requestState" in result:
                params["requestState"] = result["requestState"]
            else:
                params.pop("requestState", None)
        raise upstream_error(f"{call.method}: the remote asked for input {MAX_INPUT_ROUNDS} times")

    async def _request(
        self,
        call: Call,
        params: dict[str, Any],
        progress: Any,
        on_notification: Any,
        on_request: Any,
    ) -> Any:
        try:
            # The downstream request's cancel scope bounds it too. A 2025-11-25 tasks/result
            # waits for its task to end, however long it runs: the task's ttl bounds it,
            # not our deadline.
            return await call.client.request(
                call.method,
                params,
                timeout=None if call.method == TASKS_RESULT else self.call_timeout,
                progress=progress,
                on_notification=on_notification,
                on_request=on_request,
            )
        except PeerError as exc:
            raise remote_error(exc) from None
