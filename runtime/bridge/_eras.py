"""Era translation: how a forwarded request crosses from our client's era to the remote's.

Each pair (downstream era, upstream era) has a :class:`Route`, chosen by the pair when the
request arrives: a handler for each method the pair must translate, a default for the
others (``Crossings.table`` shows all four side by side). What each pair translates:

- handshake -> handshake: nothing on the way; the session's own state (log level,
  subscriptions) is set on its upstream session, whose client keeps it across reconnections.
- handshake -> 2026-07-28: tasks, 2025-11-25's to the extension's (``HandshakeClientTasks``);
  the remote's input rounds asked as server-to-client requests and a task the remote makes
  unasked run to its end (``Sender.send``); subscriptions held as listens
  (``UpstreamSession.subscribe``).
- 2026-07-28 -> handshake: the remote's questions become input rounds of the request
  (``Rounds``); tasks, the extension's to 2025-11-25's (``ModernClientTasks``); the log
  level set on the shared session (lowered to the lowest asked; each request gets its own).
- 2026-07-28 -> 2026-07-28: the log level travels in ``_meta``; over a link without
  per-request streams a request that wants log messages takes a turn, so the messages on its
  session are its own.

A handshake-era request's questions go to its own client (``asking``) and its relayed
messages to its session, in every pair.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from ..client import PeerError
from ..middleware import Request
from ..protocol import (
    LOGGING_SET_LEVEL,
    META_LOG_LEVEL,
    PROMPTS_GET,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    TASKS_METHODS,
    TOOLS_CALL,
)
from ._hop import remote_error
from ._rounds import Rounds
from ._send import Call, Handler, Sender
from ._session import asking
from ._shared import SharedSession

__all__ = ["HANDSHAKE", "MODERN", "SESSION_METHODS", "Crossings", "Route"]

HANDSHAKE: Final = "handshake"
MODERN: Final = "modern"

#: Per-session requests of the handshake era the proxy answers itself after setting them on
#: the session's upstream session.
SESSION_METHODS: Final = frozenset({LOGGING_SET_LEVEL, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE})


class Route:
    """How requests cross between one pair of eras: ``methods[method]`` forwards that
    method, ``default`` every other; ``before`` (if any) runs first for every request."""

    __slots__ = ("before", "default", "methods")

    def __init__(
        self,
        default: Handler,
        methods: Mapping[str, Handler] | None = None,
        *,
        before: Callable[[Call], Awaitable[None]] | None = None,
    ) -> None:
        self.default = default
        self.methods: Mapping[str, Handler] = methods or {}
        self.before = before

    async def forward(self, call: Call) -> Any:
        if self.before is not None:
            await self.before(call)
        return await self.methods.get(call.method, self.default)(call)


class Crossings:
    """The four routes (see the module docstring), built once per proxy."""

    def __init__(self, sender: Sender, rounds: Rounds, shared: SharedSession) -> None:
        self.sender = sender
        self.rounds = rounds
        self.shared = shared
        session = {
            LOGGING_SET_LEVEL: self._set_level,
            RESOURCES_SUBSCRIBE: self._subscribe,
            RESOURCES_UNSUBSCRIBE: self._unsubscribe,
        }
        #: (downstream era, upstream era) -> its route.
        self.table: dict[tuple[str, str], Route] = {
            (HANDSHAKE, HANDSHAKE): Route(self._in_session, session),
            (HANDSHAKE, MODERN): Route(
                self._in_session,
                {
                    **session,
                    **dict.fromkeys(TASKS_METHODS, self._handshake_tasks),
                    TOOLS_CALL: self._handshake_tool_call,
                },
            ),
            (MODERN, HANDSHAKE): Route(
                sender.relaying,
                {
                    **dict.fromkeys(TASKS_METHODS, self._modern_tasks),
                    TOOLS_CALL: self._modern_tool_call,
                    RESOURCES_READ: rounds.forward,
                    PROMPTS_GET: rounds.forward,
                },
                before=self._lower_level,
            ),
            (MODERN, MODERN): Route(self._level_in_meta),
        }

    def route(self, request: Request, upstream_era: str) -> Route:
        return self.table[request.era, upstream_era]

    # -- handshake-era clients -----------------------------------------------------------

    async def _in_session(self, call: Call) -> Any:
        """Forward on the session's upstream session; its remote's questions meanwhile
        relate to this request (``UpstreamSession.handler``)."""
        in_flight = call.session.in_flight
        in_flight.append(call.request)
        try:
            return await self.sender.relaying(call)
        finally:
            in_flight.remove(call.request)

    async def _set_level(self, call: Call) -> Any:
        result = await call.call_next()  # ours validates the level and records it
        try:
            await call.client.set_logging_level(str(call.request.params.get("level")))
        except PeerError as exc:
            raise remote_error(exc) from None
        return result

    async def _subscribe(self, call: Call) -> Any:
        try:
            await call.session.subscribe(call.client, str(call.request.params.get("uri")))
        except PeerError as exc:
            raise remote_error(exc) from None
        return {}

    async def _unsubscribe(self, call: Call) -> Any:
        try:
            await call.session.unsubscribe(call.client, str(call.request.params.get("uri")))
        except PeerError as exc:
            raise remote_error(exc) from None
        return {}

    async def _handshake_tasks(self, call: Call) -> Any:
        """``tasks/*`` of a 2025-11-25 client, served from the remote's extension tasks."""
        tasks = call.session.tasks
        assert tasks is not None  # a 2026-07-28 remote's session has them
        ask = asking(call.request, self.sender.round_timeout)
        return await tasks.handle(call.method, call.params, ask)

    async def _handshake_tool_call(self, call: Call) -> Any:
        """A ``tools/call``; with ``params.task`` (2025-11-25), the remote decides whether it
        is one and the answer is a task either way (``HandshakeClientTasks.call``)."""
        if "task" not in call.params:
            return await self._in_session(call)
        tasks = call.session.tasks
        assert tasks is not None

        async def send(sent: dict[str, Any]) -> Any:
            return await self.sender.send(dataclasses.replace(call, params=sent), keep_task=True)

        return await tasks.call(call.params, send)

    # -- 2026-07-28 clients --------------------------------------------------------------

    async def _lower_level(self, call: Call) -> None:
        if call.level is not None:
            await self.shared.lower_level(call.client, call.level)

    async def _modern_tasks(self, call: Call) -> Any:
        """``tasks/*`` of the extension, served from the remote's 2025-11-25 tasks."""
        return await self.shared.tasks.handle(call.client, call.method, call.params)

    async def _modern_tool_call(self, call: Call) -> Any:
        """A ``tools/call``: a task of the remote's where the extension can carry one, else
        a forwarding the remote may ask questions in (input rounds)."""
        tasks = self.shared.tasks
        caps = call.request.context.client_capabilities
        if await tasks.runs_as_task(call.client, call.params, caps):
            return await tasks.call(call.client, call.params, self.shared.require_nursery())
        return await self.rounds.forward(call)

    async def _level_in_meta(self, call: Call) -> Any:
        """2026-07-28 server/utilities/logging: the level travels with the request. Over a
        link without per-request streams its log messages name no request, so one that
        wants them goes in a turn (and gets what arrives on its session meanwhile)."""
        if call.level is None:
            return await self.sender.relaying(call)
        call.params["_meta"] = {**(call.params.get("_meta") or {}), META_LOG_LEVEL: call.level}
        if self.shared.streams_per_request:
            return await self.sender.relaying(call)
        return await self.sender.in_turn(call)
