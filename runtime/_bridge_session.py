"""The upstream session of one downstream handshake-era session.

Each downstream handshake-era session (an HTTP session, a stdio/TCP/WebSocket connection) gets
an upstream client of its own, an :class:`UpstreamSession`: opened by its ``initialize`` and
closed when the session ends, so what the remote keeps per session (log level, subscriptions,
roots, tasks, who answers its elicitations) is never shared between our clients. The remote's
notifications on it go to that session only (queued at most ``RELAY_QUEUE`` deep); the
remote's requests (sampling, elicitation, roots: 2025-11-25 client/*) are asked of that
session's client, related to the request being forwarded.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from ._bridge_hop import declared, without_subscription
from ._bridge_listen import LIST_KINDS, RELAY_QUEUE, relay_listen
from ._bridge_pool import Connect, client_error
from ._bridge_tasks import HandshakeClientTasks, related_task
from .client import Client, ClientError, Notification, PeerError, TransportLost
from .framing import loggable
from .middleware import Request
from .protocol import JSONRPCError

if TYPE_CHECKING:
    from .core import Peer

__all__ = [
    "DEFAULT_MAX_POLL_INTERVAL",
    "DEFAULT_ROUND_TIMEOUT",
    "RELAYED_NOTIFICATIONS",
    "UpstreamSession",
]

log = logging.getLogger("mcp_runtime.bridge")

#: The remote's notifications passed on to the downstream session they were sent to.
RELAYED_NOTIFICATIONS: Final = frozenset(
    {
        "notifications/message",
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/updated",
        "notifications/tasks/status",
        "notifications/tasks",
    }
)

#: The default of ``round_timeout`` (``--upstream-round-timeout``): how long a remote's
#: question (a forwarded server-to-client request, or an input round of a 2026-07-28 client)
#: may wait for our client's answer before it is answered with an error.
DEFAULT_ROUND_TIMEOUT: Final = 300.0

#: The default of ``max_poll_interval`` (``--upstream-poll-max``): the longest wait, in
#: seconds, between two polls of a remote's task the proxy runs for its client (the task's
#: own ``pollIntervalMs``/``pollInterval`` is honored up to this).
DEFAULT_MAX_POLL_INTERVAL: Final = 5.0


def _related_request(in_flight: list[Request], params: Any) -> Any:
    """The downstream request a remote's question relates to (UpstreamSession.handler)."""
    task_id = related_task(params)
    if task_id is not None:
        for request in in_flight:
            if request.method == "tasks/result" and request.params.get("taskId") == task_id:
                return request.id
    return in_flight[-1].id if in_flight else None


class UpstreamSession:
    """The upstream client of one downstream handshake-era session: its own session with the
    remote, the remote's notifications relayed to that session only, the remote's requests
    asked of that session's client."""

    def __init__(
        self,
        peer: Peer,
        capabilities: Mapping[str, Any],
        round_timeout: float = DEFAULT_ROUND_TIMEOUT,
        max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
    ) -> None:
        self.peer = peer
        self.round_timeout = round_timeout
        self.max_poll_interval = max_poll_interval
        #: A 2026-07-28 remote: this session's 2025-11-25 tasks translated (_bridge_tasks).
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
            try:
                return await self.peer.request(
                    method, params, timeout=self.round_timeout, related=related
                )
            except JSONRPCError as exc:
                raise PeerError(exc.code, exc.message, exc.data) from None

        return ask

    def on_notification(self, note: Notification) -> None:
        """From the client (synchronously): queue what the downstream session should see."""
        client = self.client
        if note.method not in RELAYED_NOTIFICATIONS:
            return
        # A 2026-07-28 remote's list changes and updates arrive on listens (relayed there);
        # only its log messages come here.
        if client is not None and client.era == "modern" and note.method != "notifications/message":
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
                        sampling=self.handler("sampling/createMessage")
                        if "sampling" in caps
                        else None,
                        elicitation=self.handler("elicitation/create")
                        if "elicitation" in caps
                        else None,
                        roots=self.handler("roots/list") if "roots" in caps else None,
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
