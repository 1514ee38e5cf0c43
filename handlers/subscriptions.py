"""Change notifications in both eras, fed by the registry's :class:`~runtime.features.Broadcast`.

Handshake era (MCP 2025-11-25 server/resources "Subscriptions", server/tools|prompts|resources
"List Changed Notification"): once a session is initialized, a per-connection task delivers
``notifications/{tools,prompts,resources}/list_changed`` for the features its capabilities
announced, and ``notifications/resources/updated`` for the URIs it ``resources/subscribe``-d to.

Modern era (2026-07-28 basic/patterns/subscriptions): ``subscriptions/listen`` is a long-lived
request. It sends ``notifications/subscriptions/acknowledged`` with the honored subset of the
filter first, then only the requested kinds, every one tagged with the listen request's id in
``_meta["io.modelcontextprotocol/subscriptionId"]`` and sent as related to that request (so HTTP
routes them to its response stream). The client ends it with ``notifications/cancelled`` (no
response); the server ends it gracefully on shutdown with a result carrying the subscription id.
A listen holds one of the connection's ``max_in_flight`` slots for as long as it is open.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
import trio

from runtime.core import Handler, NotificationHandler, Peer, RequestContext, Session
from runtime.features import REPLICA_COPY, TASK_KEY, App, Change, ListKind, Registry, Subscriber
from runtime.protocol import (
    INITIALIZED,
    INVALID_PARAMS,
    LIST_CHANGED,
    META_SUBSCRIPTION_ID,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    RESOURCES_UPDATED,
    SUBSCRIPTIONS_ACKNOWLEDGED,
    SUBSCRIPTIONS_LISTEN,
    TASKS_CHANGED,
    TASKS_EXTENSION,
    JSONRPCError,
    encode_notification,
    missing_capability,
    resource_not_found,
    unknown_task,
)

from ._common import decode_params
from .lifecycle import capabilities
from .tasks import owner as task_owner

__all__ = [
    "MAX_RESOURCE_SUBSCRIPTIONS",
    "methods",
    "open_session_feed",
]

#: Resource URIs one handshake session, or one listen request, may watch. The spec sets no
#: number; this caps the watch set and with it the subscriber's coalescing mailbox (which
#: holds at most one pending change per watched URI). Past it: -32602 with ``maxSubscriptions``.
MAX_RESOURCE_SUBSCRIPTIONS: Final = 256
#: A listen under a request timeout ends gracefully this long (at most) before the deadline,
#: so the client gets the closing result instead of -32001.
_DEADLINE_MARGIN: Final = 1.0
_FEED_KEY: Final = "mcp.subscriptions"
_FILTER_FIELDS: Final[dict[ListKind, str]] = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}


class _UriParams(msgspec.Struct):
    uri: str


class _Filter(msgspec.Struct, rename="camel"):
    tools_list_changed: bool = False
    prompts_list_changed: bool = False
    resources_list_changed: bool = False
    resource_subscriptions: list[str] | None = None
    #: Tasks extension (SEP-2663): notifications/tasks for these task ids.
    task_ids: list[str] | None = None


class _ListenParams(msgspec.Struct):
    notifications: _Filter


_uri_decoder: Final = msgspec.json.Decoder(_UriParams)
_listen_decoder: Final = msgspec.json.Decoder(_ListenParams)


def _notification(
    change: Change, meta: dict[str, Any] | None, server: App | None = None
) -> tuple[str, Any]:
    what, key = change
    params: dict[str, Any] = {} if meta is None else {"_meta": meta}
    if what == "task" and server is not None:
        # Each notification carries the full DetailedTask, as tasks/get would (SEP-2663).
        # A task here, or (shared store) the last state heard from the replica running it.
        task = server.tasks.latest(key)
        if task is None:
            raise unknown_task(key)
        return TASKS_CHANGED, {**task, **params}
    if what == "updated":
        params["uri"] = key
        return RESOURCES_UPDATED, params
    return LIST_CHANGED[key], params or None


#: Stands for a listen's id while its notification is encoded once for every listen.
_SPLICE: Final = "\x00subscription\x00"
_SPLICE_JSON: Final = msgspec.json.encode(_SPLICE)


@functools.lru_cache(maxsize=256)
def _encoded(change: Change) -> bytes:
    """A list change or resource update as a handshake session gets it: encoded once for
    all of them, however many sessions watch."""
    return encode_notification(*_notification(change, None))


@functools.lru_cache(maxsize=256)
def _encoded_around_id(change: Change) -> tuple[bytes, bytes]:
    """A list change or resource update as a listen gets it, encoded once for all listens:
    the bytes before and after its subscription id (``_meta`` is encoded first, so the
    first occurrence of the stand-in is the id's place whatever the URI holds)."""
    data = encode_notification(*_notification(change, {META_SUBSCRIPTION_ID: _SPLICE}))
    head, _, tail = data.partition(_SPLICE_JSON)
    return head, tail


def _known(registry: Registry, uri: str) -> bool:
    return uri in registry.resources or registry.find_template(uri) is not None


async def _task_known(server: App, task_id: str, owner: object | None) -> bool:
    """Whether ``owner`` may watch the task: one here, or (with a shared store) one another
    replica runs, whose changes then reach this listen through the store's bus."""
    try:
        await server.tasks.find(task_id, owner)
    except JSONRPCError as exc:
        if exc.code != INVALID_PARAMS:
            raise  # the store is unreachable: say so rather than drop the id silently
        return False
    return True


def _too_many() -> JSONRPCError:
    return JSONRPCError.invalid_params(
        f"Too many resource subscriptions (at most {MAX_RESOURCE_SUBSCRIPTIONS})",
        {"maxSubscriptions": MAX_RESOURCE_SUBSCRIPTIONS},
    )


def _offered(server: App) -> set[ListKind]:
    """The list kinds whose ``listChanged`` the server advertises right now."""
    caps = capabilities(server)
    return {kind for kind in _FILTER_FIELDS if caps.get(kind, {}).get("listChanged")}


class _SessionDelivery:
    """A handshake session's delivery of unsolicited notifications (``related=None``, the
    session's standalone stream on HTTP): a task only while there is something to deliver,
    started by the first change offered (an idle session holds none: memory at rest).
    Waiting on a full write queue only delays this session; its changes coalesce meanwhile
    (runtime.features). The subscriber ends when the connection does. One slotted object
    with bound methods, not four closures and their cells: it is held by every idle
    session (``benchmarks/README.md``, "Features and handlers")."""

    __slots__ = ("delivering", "peer", "send_nowait", "subscriber")

    def __init__(self, subscriber: Subscriber, peer: Peer) -> None:
        self.subscriber = subscriber
        self.peer = peer
        self.delivering = False
        # A peer that can write without waiting (runtime.core Connection) takes a change
        # straight from the publisher while no delivery task runs (no task switch).
        self.send_nowait: Callable[[bytes], bool] | None = getattr(peer, "send_nowait", None)
        subscriber.on_offer = self.offered
        if self.send_nowait is not None:
            subscriber.take = self.take
        peer.at_close(self.closed)

    async def deliver(self) -> None:
        subscriber = self.subscriber
        try:
            while subscriber.pending:  # receive() returns at once while changes are pending
                for change in await subscriber.receive():
                    method, params = _notification(change, None)
                    await self.peer.notify(method, params)
        except BaseException:
            subscriber.end("connection closed")
            raise
        finally:
            self.delivering = False

    def offered(self) -> None:
        if self.delivering or self.subscriber.end_reason is not None:
            return
        self.delivering = True
        try:
            self.peer.start_soon(self.deliver, name="subscriptions")
        except RuntimeError:  # the connection is ending
            self.delivering = False
            self.subscriber.end("connection closed")

    def take(self, change: Change) -> bool:
        if self.delivering or self.send_nowait is None:  # (earlier changes go first)
            return False
        return self.send_nowait(_encoded(change))

    def closed(self) -> None:
        self.subscriber.end("connection closed")


def open_session_feed(
    server: App, session: Session, peer: Peer, lists: bool = True, reloaded: bool = False
) -> Subscriber:
    """A handshake session's subscriber, opened (with its delivery on ``peer``) on first
    use; with the list kinds unless ``lists`` is False. Also opened by the composition root
    for a session adopted by the one version that now serves it (``mcp-runtime dev``
    after a reload: no ``notifications/initialized`` comes again); with ``reloaded`` the
    session is then told that each list it follows changed: the new version's tools,
    prompts or resources may not be the old one's, and the client lists them again
    (2025-11-25 server/tools "List Changed Notification": sent when the list changed)."""
    feed = session.state.get(_FEED_KEY)
    if isinstance(feed, Subscriber):
        return feed
    kinds = _offered(server) if lists else ()
    feed = server.registry.changes.open(kinds, label=peer.connection_id)
    session.state[_FEED_KEY] = feed
    try:
        _SessionDelivery(feed, peer)
    except RuntimeError:
        feed.end("connection closed")
    if reloaded:
        for kind in sorted(feed.kinds):
            feed.offer(("list", kind))
    return feed


def methods(server: App) -> tuple[dict[str, Handler], dict[str, NotificationHandler]]:
    registry = server.registry
    changes = registry.changes

    def session_feed(ctx: RequestContext, lists: bool = True) -> Subscriber:
        return open_session_feed(server, ctx.session, ctx.peer, lists)

    async def initialized(ctx: RequestContext) -> None:
        # 2025-11-25 basic/lifecycle: no notifications but pings and logging before this.
        ctx.session.state.pop(REPLICA_COPY, None)
        session_feed(ctx)

    async def subscribe(ctx: RequestContext) -> dict[str, Any]:
        uri = decode_params(ctx, _uri_decoder, b"{}").uri
        if not _known(registry, uri):
            # Same answer as resources/read of that URI (2025-11-25 server/resources
            # "Error Handling"); the spec does not say subscribe must check, we do so that a
            # typo fails loudly instead of never firing.
            raise resource_not_found(uri)
        # A replica's copy of a session another replica initialized: that one delivers the
        # session's list changes; this copy only its resource updates (runtime.stores).
        feed = session_feed(ctx, lists=REPLICA_COPY not in ctx.session.state)
        if uri not in feed.uris and len(feed.uris) >= MAX_RESOURCE_SUBSCRIPTIONS:
            raise _too_many()
        feed.watch(uri)
        return {}

    async def unsubscribe(ctx: RequestContext) -> dict[str, Any]:
        # Idempotent: unsubscribing from a URI not subscribed to is not an error.
        uri = decode_params(ctx, _uri_decoder, b"{}").uri
        feed = ctx.session.state.get(_FEED_KEY)
        if isinstance(feed, Subscriber):
            feed.unwatch(uri)
        return {}

    async def open_listen(
        ctx: RequestContext, meta: dict[str, Any]
    ) -> tuple[Subscriber, list[str]]:
        """A listen's subscriber, acknowledged, and the task ids it watches: all that the
        waiting listen keeps of its filter (the filter's readings end with this frame, so
        an idle listen does not hold them)."""
        wanted = decode_params(ctx, _listen_decoder, b"{}").notifications
        offered = _offered(server)
        requested: dict[ListKind, bool] = {
            "tools": wanted.tools_list_changed,
            "prompts": wanted.prompts_list_changed,
            "resources": wanted.resources_list_changed,
        }
        kinds = [kind for kind, asked in requested.items() if asked and kind in offered]
        honored: dict[str, Any] = {_FILTER_FIELDS[kind]: True for kind in kinds}
        uris: list[str] = []
        if wanted.resource_subscriptions is not None and capabilities(server).get(
            "resources", {}
        ).get("subscribe"):
            # Unknown URIs are left out of the acknowledged subset (the server does not
            # agree to honor them), as unsupported kinds are.
            uris = [u for u in dict.fromkeys(wanted.resource_subscriptions) if _known(registry, u)]
            if len(uris) > MAX_RESOURCE_SUBSCRIPTIONS:
                raise _too_many()
            honored["resourceSubscriptions"] = uris
        task_ids: list[str] = []
        if wanted.task_ids is not None:
            extensions = ctx.client_capabilities.get("extensions")
            if not (isinstance(extensions, dict) and TASKS_EXTENSION in extensions):
                raise missing_capability(
                    "Missing required client capability", {"extensions": {TASKS_EXTENSION: {}}}
                )
            who = task_owner(ctx)
            asked = list(dict.fromkeys(wanted.task_ids))
            if len(asked) > MAX_RESOURCE_SUBSCRIPTIONS:
                raise _too_many()
            task_ids = [t for t in asked if await _task_known(server, t, who)]
            honored["taskIds"] = task_ids
        peer = ctx.peer
        # Not a context manager: its generator frame would be held by every idle listen.
        sub = changes.open(kinds, label=f"{peer.connection_id}/{ctx.id!r}")
        try:
            for uri in uris:
                sub.watch(uri)
            for task_id in task_ids:
                sub.watch(TASK_KEY + task_id)
            # Subscribed before acknowledging, so nothing published in between is lost;
            # nothing is delivered before the acknowledgment (basic/patterns/subscriptions).
            await peer.notify(
                SUBSCRIPTIONS_ACKNOWLEDGED,
                {"_meta": meta, "notifications": honored},
                related=ctx.id,
            )
        except BaseException:
            sub.end("closed")
            raise
        return sub, task_ids

    async def listen(ctx: RequestContext) -> dict[str, Any]:
        request_id = ctx.id
        assert request_id is not None
        meta = {META_SUBSCRIPTION_ID: request_id}
        peer = ctx.peer
        end_at = math.inf
        deadline = trio.current_effective_deadline()
        if deadline != math.inf:
            end_at = deadline - min(_DEADLINE_MARGIN, (deadline - trio.current_time()) / 10)
        sub, task_ids = await open_listen(ctx, meta)
        try:
            # The current state of each watched task first: a transition that happened
            # before this listen must not leave the client waiting for the next one.
            for task_id in task_ids:
                method, params = _notification(("task", task_id), meta, server)
                await peer.notify(method, params, related=request_id)
            # While this task waits, the publisher writes a change straight to the stream
            # (``take``): no task switch per listen in a fan-out; what cannot be written
            # at once queues for this task as before.
            send_nowait: Callable[[bytes, Any], bool] | None = getattr(peer, "send_nowait", None)
            # A peer that serves the listen in its connection's own task (2026-07-28 HTTP)
            # waits there while nothing comes, instead of this task parking (one task per
            # idle listen, not two).
            idle: Callable[[trio.CancelScope], Awaitable[object]] | None = getattr(
                peer, "idle", None
            )
            id_json = msgspec.json.encode(request_id)

            def take(change: Change) -> bool:
                if send_nowait is None:
                    return False
                if change[0] != "task":
                    head, tail = _encoded_around_id(change)
                    return send_nowait(head + id_json + tail, request_id)
                try:
                    method, params = _notification(change, meta, server)
                except JSONRPCError:
                    return True  # the task expired meanwhile: nothing to send (as below)
                return send_nowait(encode_notification(method, params), request_id)

            # No scope without a deadline (most listens): an idle listen holds less.
            with trio.move_on_at(end_at) if end_at != math.inf else contextlib.nullcontext():
                try:
                    while True:
                        if send_nowait is not None:
                            sub.take = take
                        try:
                            taken = await sub.receive(idle)
                        finally:
                            sub.take = None
                        for change in taken:
                            try:
                                method, params = _notification(change, meta, server)
                            except JSONRPCError:
                                continue  # the task expired meanwhile
                            await peer.notify(method, params, related=request_id)
                except trio.EndOfChannel:
                    pass
        finally:
            sub.end("closed")
        # Ended by the server (shutdown, or the request deadline): "Graceful Closure".
        return {"_meta": dict(meta)}

    return (
        {
            RESOURCES_SUBSCRIBE: subscribe,
            RESOURCES_UNSUBSCRIBE: unsubscribe,
            SUBSCRIPTIONS_LISTEN: listen,
        },
        {INITIALIZED: initialized},
    )
