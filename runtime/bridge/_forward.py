"""``Forward``: the middleware that answers a downstream request from the remote.

It is the innermost middleware of the proxy's server (placed there when serving starts), so
the server's own middleware sees every forwarded request. It answers ``initialize`` and
``server/discover`` with the remote's features, holds a 2026-07-28 ``subscriptions/listen``
on the remote, and sends every :data:`FORWARDED_METHODS` request (and a handshake-era
session's ``logging/setLevel`` and subscriptions) along the route of its pair of eras
(``_eras``), through the session's upstream session (handshake era, ``_session``) or the
shared one (2026-07-28, ``_shared``). What the client raises about the remote becomes one
precise JSON-RPC error here: unreachable (-32603 with the attempts), the deadline
``call_timeout`` (-32001 naming it), anything else -32603.
"""

from __future__ import annotations

from typing import Any, Final

from ..client import ClientError, PeerError, RequestTimeout, TransportLost
from ..middleware import Middleware, Next, Request
from ..protocol import (
    COMPLETION_COMPLETE,
    INITIALIZE,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    ROOTS_LIST_CHANGED,
    SERVER_DISCOVER,
    SUBSCRIPTIONS_LISTEN,
    TASKS_METHODS,
    TOOLS_CALL,
    TOOLS_LIST,
    upstream_error,
    upstream_timeout,
)
from ._eras import HANDSHAKE, SESSION_METHODS, Crossings
from ._hop import describe, strip_meta
from ._listen import serve_listen
from ._pool import DEFAULT_PARALLEL_IDLE_TIMEOUT, ProcessBudget, UpstreamPool
from ._relay import Addressee, requested_level
from ._rounds import Forwarding, Rounds
from ._send import DEFAULT_CALL_TIMEOUT, Call, Sender
from ._session import (
    DEFAULT_MAX_POLL_INTERVAL,
    DEFAULT_MAX_UPSTREAM_SESSIONS,
    DEFAULT_ROUND_TIMEOUT,
    UpstreamSession,
    UpstreamSessions,
)
from ._shared import SharedSession
from ._tasks import ModernClientTasks

__all__ = ["FORWARDED_METHODS", "Forward"]

#: The requests answered by the remote (2025-11-25 server/tools, server/resources,
#: server/prompts, server/utilities/completion; the same methods in 2026-07-28; the tasks
#: methods of both task protocols: a task lives on the remote, so its id is only meaningful
#: on the same upstream session).
FORWARDED_METHODS: Final = frozenset(
    {
        TOOLS_LIST,
        TOOLS_CALL,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        *TASKS_METHODS,
    }
)


class Forward(Middleware):
    """Answers :data:`FORWARDED_METHODS` (and subscriptions, log levels) from the remote:
    through the downstream session's :class:`UpstreamSession`, or the shared client (set
    while serving) for 2026-07-28 requests. Composed of the upstream sessions
    (``UpstreamSessions``), the shared session with its pool of turns (``SharedSession``),
    the sender (``Sender``), the input rounds (``Rounds``) and the routes of each pair of
    eras (``Crossings``)."""

    def __init__(
        self,
        max_upstream_sessions: int = DEFAULT_MAX_UPSTREAM_SESSIONS,
        *,
        round_timeout: float = DEFAULT_ROUND_TIMEOUT,
        max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
        max_parallel: int = 1,
        parallel_idle_timeout: float = DEFAULT_PARALLEL_IDLE_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        max_upstream_processes: int | None = None,
        streams_per_request: bool = True,
    ) -> None:
        #: Where each upstream session is a process (a stdio remote): how many may run.
        self.processes = (
            ProcessBudget(max_upstream_processes) if max_upstream_processes is not None else None
        )
        self.upstreams = UpstreamSessions(
            max_upstream_sessions,
            self.processes,
            round_timeout=round_timeout,
            max_poll_interval=max_poll_interval,
        )
        self.shared = SharedSession(
            UpstreamPool(max_parallel, parallel_idle_timeout, self.processes),
            ModernClientTasks(round_timeout=round_timeout),
            round_timeout=round_timeout,
            streams_per_request=streams_per_request,
        )
        sender = Sender(
            self.shared,
            call_timeout=call_timeout,
            round_timeout=round_timeout,
            max_poll_interval=max_poll_interval,
        )
        self.rounds = Rounds(self.shared, call_timeout=call_timeout, round_timeout=round_timeout)
        self.crossings = Crossings(sender, self.rounds, self.shared)
        #: The requests the proxy answers itself, with what it knows of the remote.
        self._own = {
            INITIALIZE: self._initialize,
            SERVER_DISCOVER: self._discover,
            SUBSCRIPTIONS_LISTEN: self._listen,
        }

    # What the proxy's parts hold, by the names its tests and operators read.

    @property
    def sessions(self) -> set[UpstreamSession]:
        """The upstream sessions open now (one per downstream handshake-era session)."""
        return self.upstreams.open

    @property
    def pool(self) -> UpstreamPool:
        return self.shared.pool

    @property
    def forwardings(self) -> list[Addressee]:
        """Input-round forwardings on the shared session now, oldest first."""
        return self.shared.forwardings

    @property
    def parked(self) -> dict[str, Forwarding]:
        """Input-round forwardings waiting for our client's retry, by ``requestState``."""
        return self.rounds.parked

    @property
    def streams_per_request(self) -> bool:
        """Whether the remote's link ties each message to its request (Streamable HTTP)."""
        return self.shared.streams_per_request

    async def on_notification(self, request: Request, call_next: Next) -> None:
        await call_next()
        if request.method == ROOTS_LIST_CHANGED and request.era == HANDSHAKE:
            await self.upstreams.roots_changed(request)

    async def on_request(self, request: Request, call_next: Next) -> Any:
        own = self._own.get(request.method)
        if own is not None:
            return await own(request, call_next)
        handshake = request.era == HANDSHAKE
        if request.method not in FORWARDED_METHODS and not (
            handshake and request.method in SESSION_METHODS
        ):
            # Ours: ping, and what the request's era does not have (-32601).
            return await call_next()
        upstream: UpstreamSession | None = None
        if handshake:
            upstream = await self.upstreams.of(request, self.shared.connect)
            client = upstream.client
            assert client is not None  # ``of`` returns open sessions only
        else:
            client = self.shared.require_client()
        call = Call(
            request,
            call_next,
            client,
            strip_meta(dict(request.params)),
            None if upstream is not None else requested_level(request),
            upstream,
        )
        try:
            return await self.crossings.route(request, client.era).forward(call)
        except TransportLost as exc:
            if upstream is not None:
                upstream.lost()
            raise upstream_error(
                f"the remote MCP server is unreachable: {exc}", {"attempts": exc.attempts}
            ) from None
        except PeerError:
            raise
        except RequestTimeout as exc:
            # The client cancelled it upstream (notifications/cancelled) when it expired.
            raise upstream_timeout(exc.method, exc.timeout, "call_timeout") from None
        except ClientError as exc:
            raise upstream_error(f"the remote MCP server: {exc}") from None

    async def _initialize(self, request: Request, call_next: Next) -> Any:
        opened = await self.upstreams.of(request, self.shared.connect)
        return describe(await call_next(), opened.client, modern=False)

    async def _discover(self, request: Request, call_next: Next) -> Any:
        return describe(await call_next(), self.shared.client, modern=True)

    async def _listen(self, request: Request, call_next: Next) -> Any:
        if request.era == HANDSHAKE:
            return await call_next()
        return await serve_listen(self.shared.require_client(), request)
