"""The upstream session of each downstream handshake-era session.

Each downstream handshake-era session (an HTTP session, a stdio/TCP/WebSocket connection) gets
an upstream client of its own, an :class:`UpstreamSession`: opened by its ``initialize`` and
closed when the session ends, so what the remote keeps per session (log level, subscriptions,
roots, tasks, who answers its elicitations) is never shared between our clients. The remote's
notifications on it go to that session only (queued at most ``RELAY_QUEUE`` deep); the
remote's requests (sampling, elicitation, roots: 2025-11-25 client/*) are asked of that
session's client, related to the request being forwarded. :class:`UpstreamSessions` opens
them, within ``max_upstream_sessions`` and, where each is a process, the process budget.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Final, Protocol

import trio

from ..client import Client, ClientError, Notification, PeerError, TransportLost
from ..framing import loggable
from ..middleware import Request
from ..protocol import (
    ELICITATION_CREATE,
    INITIALIZE,
    LOG_MESSAGE,
    PROMPTS_LIST_CHANGED,
    RESOURCES_LIST_CHANGED,
    RESOURCES_UPDATED,
    ROOTS_LIST,
    ROOTS_LIST_CHANGED,
    SAMPLING_CREATE_MESSAGE,
    TASKS_CHANGED,
    TASKS_RESULT,
    TASKS_STATUS,
    TOOLS_LIST_CHANGED,
    JSONRPCError,
    RequestId,
    overloaded,
    upstream_error,
)
from ._hop import declared, without_subscription
from ._listen import LIST_KINDS, relay_listen
from ._pool import Connect, ProcessBudget, client_error
from ._relay import RELAY_QUEUE
from ._tasks import Ask, HandshakeClientTasks, related_task

__all__ = [
    "DEFAULT_MAX_POLL_INTERVAL",
    "DEFAULT_MAX_UPSTREAM_SESSIONS",
    "DEFAULT_ROUND_TIMEOUT",
    "RELAYED_NOTIFICATIONS",
    "Downstream",
    "UpstreamSession",
    "UpstreamSessions",
    "ask_client",
    "asking",
]

log = logging.getLogger("mcp_runtime.bridge")

#: The remote's notifications passed on to the downstream session they were sent to.
RELAYED_NOTIFICATIONS: Final = frozenset(
    {
        LOG_MESSAGE,
        TOOLS_LIST_CHANGED,
        RESOURCES_LIST_CHANGED,
        PROMPTS_LIST_CHANGED,
        RESOURCES_UPDATED,
        TASKS_STATUS,
        TASKS_CHANGED,
    }
)

#: Upstream sessions held at once (one per downstream handshake-era session).
DEFAULT_MAX_UPSTREAM_SESSIONS: Final = 64

#: The default of ``round_timeout`` (``--upstream-round-timeout``): how long a remote's
#: question (a forwarded server-to-client request, or an input round of a 2026-07-28 client)
#: may wait for our client's answer before it is answered with an error.
DEFAULT_ROUND_TIMEOUT: Final = 300.0

#: The default of ``max_poll_interval`` (``--upstream-poll-max``): the longest wait, in
#: seconds, between two polls of a remote's task the proxy runs for its client (the task's
#: own ``pollIntervalMs``/``pollInterval`` is honored up to this).
DEFAULT_MAX_POLL_INTERVAL: Final = 5.0

#: Where a downstream session keeps its upstream session (``Session.state``).
_SESSION_KEY: Final = "mcp.bridge.upstream"


class Downstream(Protocol):
    """What the bridge needs of a downstream connection (a request's ``context.peer``)."""

    async def notify(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> None:
        """Send our client a notification, ``related`` to one of its requests."""

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float = 60.0,
        related: RequestId | None = None,
    ) -> Any:
        """Ask our client (a server-to-client request); raises ``JSONRPCError`` when it
        answers with an error, -32001 when it does not answer within ``timeout``."""


async def ask_client(
    peer: Downstream, method: str, params: Any, *, timeout: float, related: RequestId | None
) -> Any:
    """A question of the remote asked of our client: its answer, or its JSON-RPC error
    raised as the remote's client error (the upstream client answers the remote with it)."""
    try:
        return await peer.request(method, params, timeout=timeout, related=related)
    except JSONRPCError as exc:
        raise PeerError(exc.code, exc.message, exc.data) from None


def asking(request: Request, timeout: float) -> Ask:
    """``ask(method, params)``: a server-to-client request to the client of ``request``
    (handshake era), related to it."""

    async def ask(method: str, params: Any) -> Any:
        return await ask_client(
            request.context.peer, method, params, timeout=timeout, related=request.id
        )

    return ask


def _related_request(in_flight: list[Request], params: Any) -> Any:
    """The downstream request a remote's question relates to (UpstreamSession.handler)."""
    task_id = related_task(params)
    if task_id is not None:
        for request in in_flight:
            if request.method == TASKS_RESULT and request.params.get("taskId") == task_id:
                return request.id
    return in_flight[-1].id if in_flight else None


class UpstreamSession:
    """The upstream client of one downstream handshake-era session: its own session with the
    remote, the remote's notifications relayed to that session only, the remote's requests
    asked of that session's client."""

    def __init__(
        self,
        peer: Downstream,
        capabilities: Mapping[str, Any],
        round_timeout: float = DEFAULT_ROUND_TIMEOUT,
        max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
    ) -> None:
        self.peer = peer
        self.round_timeout = round_timeout
        self.max_poll_interval = max_poll_interval
        #: A 2026-07-28 remote: this session's 2025-11-25 tasks translated (``_tasks``).
        self.tasks: HandshakeClientTasks | None = None
        #: What the downstream client declared: the upstream client declares the same
        #: sampling/elicitation/roots, so the remote asks only what can be answered.
        self.capabilities = dict(capabilities)
        self.client: Client | None = None
        self.ready = trio.Event()
        self.failure: str | None = None
        #: Requests of this session being forwarded now, oldest first.
        self.in_flight: list[Request] = []
        #: 2026-07-28 remote: one ``listen`` per subscribed URI (resources/subscribe).
        self.listens: dict[str, trio.CancelScope] = {}
        self._nursery: trio.Nursery | None = None
        self._scope = trio.CancelScope()
        self._probing = False
        self._send, self._receive = trio.open_memory_channel[Notification](RELAY_QUEUE)

    def handler(self, method: str) -> Any:
        async def ask(params: dict[str, Any]) -> Any:
            # A question that did not arrive on a forwarded request's stream (a remote link
            # without them, or the session's own stream): related (2025-11-25
            # basic/transports) to the tasks/result waiting for the task it names
            # (related-task _meta), else to the request of this session being forwarded
            # (the only one, or with several the newest: any of them reaches the same
            # client, only the stream differs); else unrelated.
            related = _related_request(self.in_flight, params)
            return await ask_client(
                self.peer, method, params, timeout=self.round_timeout, related=related
            )

        return ask

    def on_notification(self, note: Notification) -> None:
        """From the client (synchronously): queue what the downstream session should see."""
        client = self.client
        if note.method not in RELAYED_NOTIFICATIONS:
            return
        # A 2026-07-28 remote's list changes and updates arrive on listens (relayed there);
        # only its log messages come here.
        if client is not None and client.era == "modern" and note.method != LOG_MESSAGE:
            return
        try:
            self._send.send_nowait(note)
        except trio.WouldBlock:
            log.warning("downstream session not reading: dropped %s", loggable(note.method))

    async def run(
        self, connect: Connect, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Open the upstream client and hold it until cancelled (the downstream session
        ended); ``ready`` is set once it is open or could not be."""
        caps = self.capabilities
        try:
            with self._scope:
                await self._run(connect, caps)
        except (ClientError, BaseExceptionGroup) as exc:
            reason = client_error(exc)
            if reason is None:
                raise
            # The remote is gone for this session; the downstream session lives on.
            log.warning("an upstream session ended: %s", loggable(reason))
        finally:
            self.client = None
            self.ready.set()

    async def _run(self, connect: Connect, caps: Mapping[str, Any]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            try:
                client = await stack.enter_async_context(
                    connect(
                        sampling=self.handler(SAMPLING_CREATE_MESSAGE)
                        if "sampling" in caps
                        else None,
                        elicitation=self.handler(ELICITATION_CREATE)
                        if "elicitation" in caps
                        else None,
                        roots=self.handler(ROOTS_LIST) if "roots" in caps else None,
                        on_notification=self.on_notification,
                    )
                )
            except (ClientError, BaseExceptionGroup) as exc:
                reason = client_error(exc)
                if reason is None:
                    raise
                self.failure = f"cannot reach the remote MCP server: {reason}"
                return
            self.client = client
            if client.era == "modern":
                self.tasks = HandshakeClientTasks(client, max_poll_interval=self.max_poll_interval)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if client.era == "modern":
                    nursery.start_soon(self._listen_lists, client)
                self.ready.set()
                async for note in self._receive:
                    await self.peer.notify(note.method, without_subscription(note.params))

    def lost(self) -> None:
        """A forwarded request found the link lost: if the client gave up reconnecting
        (its backoff policy ran out), end this upstream session, so that the downstream
        session's next request opens a new one; if it is reconnecting, nothing to do."""
        client, nursery = self.client, self._nursery
        if client is None or nursery is None or self._probing:
            return
        self._probing = True

        async def probe() -> None:
            try:
                await client.ping()  # waits while reconnecting; fails at once when dead
            except TransportLost:
                log.warning("the upstream session is lost for good: a new one opens on demand")
                self._scope.cancel()
            except ClientError:
                pass
            finally:
                self._probing = False

        nursery.start_soon(probe)

    async def _listen_lists(self, client: Client) -> None:
        """A 2026-07-28 remote sends list changes only on a listen: hold one for the kinds
        it declares, relayed to the session as handshake-era notifications."""
        caps = client.description.capabilities if client.description else {}
        kinds = {k: bool(declared(caps, k, "listChanged")) for k in LIST_KINDS}
        if not any(kinds.values()):
            return
        await relay_listen(client, self._send, kinds)

    def subscribe(self, client: Client, uri: str) -> Any:
        if client.era != "modern":
            return client.subscribe(uri)
        return self._listen_uri(client, uri)

    async def _listen_uri(self, client: Client, uri: str) -> None:
        if uri in self.listens or self._nursery is None:
            return
        scope = trio.CancelScope()
        self.listens[uri] = scope

        async def hold(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            with scope:
                await relay_listen(
                    client, self._send, {"resource_uris": [uri]}, task_status=task_status
                )

        await self._nursery.start(hold)  # subscribed once the remote acknowledged

    async def unsubscribe(self, client: Client, uri: str) -> None:
        if client.era != "modern":
            await client.unsubscribe(uri)
            return
        scope = self.listens.pop(uri, None)
        if scope is not None:
            scope.cancel()


class UpstreamSessions:
    """The upstream sessions of the downstream handshake-era sessions, one each: opened on
    first use (the session's ``initialize``, or the first request of a session the proxy did
    not see initialize), held in the downstream connection's task group until its process
    or connection is gone. At most ``limit`` at once, and where each is a process (a stdio
    remote) within ``processes``: past either a new session is refused with -32010 naming
    the limit, never queued (a session holds what it takes until it ends, which may be half
    an hour away)."""

    def __init__(
        self,
        limit: int,
        processes: ProcessBudget | None,
        *,
        round_timeout: float,
        max_poll_interval: float,
    ) -> None:
        self.limit = limit
        self.processes = processes
        self.round_timeout = round_timeout
        self.max_poll_interval = max_poll_interval
        #: The upstream sessions open now.
        self.open: set[UpstreamSession] = set()

    async def of(self, request: Request, connect: Connect | None) -> UpstreamSession:
        """The upstream session of ``request``'s downstream session, opened with ``connect``
        on first use; raises -32603 (the reason it could not open) when it is not open."""
        state = request.session.state
        upstream = state.get(_SESSION_KEY)
        if not isinstance(upstream, UpstreamSession):
            if connect is None:
                raise RuntimeError("the proxy is not serving")
            upstream = self._open(request, connect)
        await upstream.ready.wait()
        if upstream.client is None:
            raise upstream_error(upstream.failure or "the upstream session ended")
        return upstream

    def _open(self, request: Request, connect: Connect) -> UpstreamSession:
        if len(self.open) >= self.limit:
            raise overloaded(
                f"the proxy holds {len(self.open)} upstream sessions (max_upstream_sessions)",
                limit="max_upstream_sessions",
                max=self.limit,
            )
        processes = self.processes
        if processes is not None and not processes.try_take():
            raise overloaded(
                f"the proxy runs {processes.used} upstream processes (max_upstream_processes)",
                limit="max_upstream_processes",
                max=processes.limit,
            )
        caps = request.session.client_capabilities
        if request.method == INITIALIZE:
            asked = request.params.get("capabilities")
            caps = asked if isinstance(asked, dict) else {}
        state = request.session.state
        upstream = UpstreamSession(
            request.context.peer, caps, self.round_timeout, self.max_poll_interval
        )
        state[_SESSION_KEY] = upstream
        self.open.add(upstream)

        def gone() -> None:
            self.open.discard(upstream)
            state.pop(_SESSION_KEY, None)
            if processes is not None:
                processes.give_back()

        async def hold() -> None:
            try:
                await upstream.run(connect)  # returns once its process is gone
            finally:
                gone()

        try:
            request.context.peer.start_soon(hold, name="bridge upstream session")
        except RuntimeError:
            gone()
            raise
        return upstream

    async def roots_changed(self, request: Request) -> None:
        """A downstream ``notifications/roots/list_changed``, passed on to the remote on the
        session's upstream session (whose client declared the downstream client's roots)."""
        upstream = request.session.state.get(_SESSION_KEY)
        if isinstance(upstream, UpstreamSession) and upstream.client is not None:
            with contextlib.suppress(ClientError):
                await upstream.client.notify(ROOTS_LIST_CHANGED)
