"""Server-wide fan-out of change events: list changes and resource updates.

One :class:`Broadcast` per server (it lives on the ``Registry``, which publishes a list change
whenever a tool, resource, template or prompt is added or removed). Each interested party (a
handshake-era session, a modern ``subscriptions/listen`` request) holds a :class:`Subscriber`
and drains it from its own task, so delivery to one never waits for another.

Slow subscribers: neither dropped nor closed, **coalesced**. Every event here is level-triggered
("this list / this resource changed, read it again": MCP 2025-11-25 server/resources,
``notifications/resources/updated``; server/tools "List Changed Notification"), so ten pending
changes of one thing say no more than one. A subscriber's mailbox is therefore an ordered set
keyed by what changed, bounded by its interest (three list kinds plus the URIs it watches, itself
capped by the caller); publishing is a synchronous set insertion that never blocks, never
allocates past that bound and loses nothing a client could act on. What remains is the
connection's own bounded write queue, where the write timeout closes a peer that stopped reading
(logged with its reason) and with it that peer's subscriber.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import Any, Final, Literal, cast

import trio

__all__ = [
    "LIST_KINDS",
    "REPLICA_COPY",
    "TASK_KEY",
    "Broadcast",
    "Change",
    "ListKind",
    "Subscriber",
]

log = logging.getLogger("mcp_runtime.broadcast")

ListKind = Literal["tools", "prompts", "resources"]
LIST_KINDS: Final[tuple[ListKind, ...]] = ("tools", "prompts", "resources")
#: ``("list", kind)`` for a list change, ``("updated", uri)`` for a resource update,
#: ``("task", task_id)`` for a task status change (tasks extension, SEP-2663).
Change = tuple[Literal["list", "updated", "task"], str]
#: Task ids share the URI index under this prefix; a space cannot occur in a URI.
TASK_KEY: Final = " task "
#: ``Session.state`` key set on a handshake session's copy on a replica other than the one
#: that saw ``notifications/initialized`` (runtime.stores): that one delivers the session's
#: list changes; a copy's resource subscriptions must not deliver them a second time.
REPLICA_COPY: Final = "mcp.replica_copy"
_KIND_SETS: dict[frozenset[ListKind], frozenset[ListKind]] = {}
_NO_URIS: Final[frozenset[str]] = frozenset()


class Subscriber:
    """One party's interest and its coalescing mailbox. Made by :meth:`Broadcast.subscribe`.

    ``receive()`` is for a single consumer task. Cancellation-safe: a cancelled ``receive``
    loses nothing (pending changes stay pending).
    """

    __slots__ = (
        "_hub",
        "_pending",
        "_waiter",
        "end_reason",
        "kinds",
        "label",
        "on_offer",
        "take",
        "uris",
    )

    def __init__(self, hub: Broadcast, kinds: Iterable[ListKind], label: str) -> None:
        self._hub = hub
        self.label = label
        # One shared frozenset per combination of kinds (eight at most), and no set of
        # URIs until one is watched: every idle listen and session holds a subscriber, so
        # what one holds at rest is paid ten thousand times over.
        kind_set = frozenset(kinds)
        self.kinds: frozenset[ListKind] = _KIND_SETS.setdefault(kind_set, kind_set)
        #: Resource URIs watched for ``notifications/resources/updated`` (see :meth:`watch`);
        #: read-only (a shared empty one until the first ``watch``).
        self.uris: AbstractSet[str] = _NO_URIS
        # dict as an ordered set: first-changed first-delivered, duplicates coalesce.
        self._pending: dict[Change, None] = {}
        #: The consumer task waiting in ``receive``, if any: woken by rescheduling it, so
        #: a subscriber holds no Event (and its parking lot) while idle (memory per idle
        #: listen and per session); or, for a ``receive(idle)``, the scope
        #: its ``idle`` waits in, woken by cancelling it.
        self._waiter: trio.lowlevel.Task | trio.CancelScope | None = None
        #: None while live; why it ended ("shutdown", "closed", ...) once ended.
        self.end_reason: str | None = None
        #: Called (synchronously, in the trio thread) with each change offered: a consumer
        #: that starts a task only when there is something to deliver, instead of one
        #: waiting in ``receive`` all the time (a task's frame and stack are memory at rest).
        self.on_offer: Callable[[], None] | None = None
        #: Set by a consumer while it waits: instead of waking it, the hub hands it its
        #: pending changes (oldest first) once the publishing task has yielded, all
        #: subscribers in one pass of one task (``Broadcast._flush``): one change to many
        #: subscribers then costs no task switch per subscriber (fan-out), and a
        #: burst published at once still coalesces. True: delivered; False: it stays
        #: pending, with what follows it, and the consumer is woken as usual.
        self.take: Callable[[Change], bool] | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def watch(self, uri: str) -> None:
        """Also deliver updates of ``uri``. The caller bounds how many (per session/listen)."""
        if uri not in self.uris and self.end_reason is None:
            if not isinstance(self.uris, set):
                self.uris = set()
            self.uris.add(uri)
            self._hub._by_uri.setdefault(uri, set()).add(self)

    def unwatch(self, uri: str) -> None:
        if uri in self.uris:
            assert isinstance(self.uris, set)  # (the shared empty one holds none)
            self.uris.discard(uri)
            self._hub._unindex(uri, self)
            self._pending.pop(("updated", uri), None)

    def offer(self, change: Change) -> None:
        """A change for this subscriber alone (the hub's publishers reach all of them): what
        a session adopted by a reloaded server (``mcp-runtime dev``) is told, because its
        lists may differ from the version that served it before."""
        if self.end_reason is None:
            self._offer(change)

    def _offer(self, change: Change) -> None:
        self._pending[change] = None
        if self.take is not None:
            self._hub._defer(self)
            return
        self._wake()
        if self.on_offer is not None:
            self.on_offer()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if type(waiter) is trio.CancelScope:
                waiter.cancel()
            else:
                trio.lowlevel.reschedule(waiter)

    def _abort(self, raise_cancel: Any) -> trio.lowlevel.Abort:
        self._waiter = None  # cancelled while waiting: nothing is lost (pending stays)
        return trio.lowlevel.Abort.SUCCEEDED

    def _flush(self) -> None:
        """Hand what is pending to ``take`` in order; wake the consumer for the rest."""
        pending = self._pending
        take = self.take
        try:
            while pending and take is not None and self.end_reason is None:
                change = next(iter(pending))
                if not take(change):
                    break
                del pending[change]
        except Exception:  # (a bug in a consumer: it gets the change the usual way)
            log.exception("subscriber take failed subscriber=%s", self.label)
        if pending or self.end_reason is not None:
            self._untaken()

    def _untaken(self) -> None:
        """What ``take`` left (or a subscriber ended meanwhile): the consumer's usual way."""
        self._wake()
        if self.on_offer is not None:
            self.on_offer()

    async def receive(
        self, idle: Callable[[trio.CancelScope], Awaitable[object]] | None = None
    ) -> list[Change]:
        """Wait for changes and take all of them (oldest first, each once).

        ``idle(wake)``, when given, is awaited to wait instead of parking the task: what
        else the task must do while nothing comes (a 2026-07-28 listen served in its HTTP
        connection's own task watches the socket and writes keep-alives: one task per idle
        listen, not two), under ``wake``, a cancel scope the subscriber cancels
        when a change arrives (that ``take`` did not take) or it ends; ``idle`` may set
        its deadline or cancel it too, to be awaited again in a fresh one. Raises
        ``trio.EndOfChannel`` once the subscriber ended and nothing is pending.
        """
        while not self._pending:
            if self.end_reason is not None:
                raise trio.EndOfChannel(self.end_reason)
            if idle is None:
                self._waiter = trio.lowlevel.current_task()
                await trio.lowlevel.wait_task_rescheduled(self._abort)
                continue
            with trio.CancelScope() as wake:
                self._waiter = wake
                try:
                    await idle(wake)
                finally:
                    if self._waiter is wake:
                        self._waiter = None
        changes = list(self._pending)
        self._pending.clear()
        return changes

    def end(self, reason: str) -> None:
        """Stop receiving new changes; ``receive`` delivers what is pending, then ends."""
        if self.end_reason is not None:
            return
        self.end_reason = reason
        self._hub._remove(self)
        self._wake()

    def __repr__(self) -> str:
        return f"<Subscriber {self.label} kinds={sorted(self.kinds)} uris={len(self.uris)}>"


class Broadcast:
    """Publishes changes to the subscribers interested in them; see the module docstring.

    Publishing is synchronous and never blocks. Call it from any task of the trio run that
    serves the server, or from a worker thread that run started (a sync tool function): the
    change then hops to the trio thread. With no subscribers it is a no-op anywhere (so
    registering at import time, before serving, costs nothing).
    """

    def __init__(self) -> None:
        self._by_kind: dict[ListKind, set[Subscriber]] = {kind: set() for kind in LIST_KINDS}
        self._by_uri: dict[str, set[Subscriber]] = {}
        self._subscribers: set[Subscriber] = set()
        self._token: trio.lowlevel.TrioToken | None = None
        #: Subscribers with changes for their ``take``, handed over by ``_flush``.
        self._due: dict[Subscriber, None] = {}
        #: Set by :meth:`end_all` (server shutdown): new subscribers start ended.
        self.closed_reason: str | None = None
        #: Called (in the trio thread) with each list change and resource update published
        #: here, to pass it on to other replicas (``runtime.ensemble._sharing``); those deliver it
        #: with :meth:`deliver`, which does not relay again.
        self.relay: Callable[[Change], None] | None = None
        #: Called with every list change and resource update, synchronously in the
        #: publishing thread, subscribers or not: a server that mounts this one
        #: (``Server.mount``) keeps its namespaced copies and subscriptions in step.
        self.relays: list[Callable[[Change], None]] = []

    def __len__(self) -> int:
        return len(self._subscribers)

    def open(self, kinds: Iterable[ListKind] = (), *, label: str = "") -> Subscriber:
        """A subscriber for the list ``kinds`` (add URIs with ``watch``); ``end()`` it when
        done. Call from the trio thread. After :meth:`end_all` it starts ended."""
        sub = Subscriber(self, kinds, label)
        self._token = trio.lowlevel.current_trio_token()
        if self.closed_reason is not None:
            sub.end_reason = self.closed_reason
        else:
            self._subscribers.add(sub)
            for kind in sub.kinds:
                self._by_kind[kind].add(sub)
        return sub

    @contextmanager
    def subscribe(self, kinds: Iterable[ListKind] = (), *, label: str = "") -> Iterator[Subscriber]:
        """:meth:`open` as a context manager: the subscriber ends on exit."""
        sub = self.open(kinds, label=label)
        try:
            yield sub
        finally:
            sub.end("closed")

    def reopen(self) -> None:
        """Accept subscribers again after :meth:`end_all` (a server that serves again)."""
        self.closed_reason = None

    def end_all(self, reason: str = "shutdown") -> None:
        """End every subscriber gracefully (pending changes are still delivered)."""
        self._hop(self._end_all, reason)

    def list_changed(self, kind: ListKind) -> None:
        """Publish ``notifications/{kind}/list_changed``."""
        if self.relay is not None:
            self._hop(self.relay, ("list", kind))
        for relay in self.relays:
            relay(("list", kind))
        if self._by_kind[kind]:
            self._hop(self._publish, ("list", kind))

    def resource_updated(self, uri: str) -> None:
        """Publish ``notifications/resources/updated`` for ``uri`` (exact match)."""
        if self.relay is not None:
            self._hop(self.relay, ("updated", uri))
        for relay in self.relays:
            relay(("updated", uri))
        if uri in self._by_uri:
            self._hop(self._publish, ("updated", uri))

    def set_relay(self, relay: Callable[[Change], None] | None) -> None:
        """Pass every change published here to ``relay`` too (None: stop). Call from the
        trio thread that serves: changes published from worker threads hop to it."""
        self.relay = relay
        self._token = trio.lowlevel.current_trio_token()

    def deliver(self, change: Change) -> None:
        """A change another replica published: to this replica's subscribers only (call
        from the trio thread)."""
        if change[0] in ("list", "updated", "task"):
            self._publish(change)

    def watched(self, uri: str) -> bool:
        """Whether a subscriber watches ``uri`` (or, under ``TASK_KEY``, a task id)."""
        return uri in self._by_uri

    def task_changed(self, task_id: str) -> None:
        """Publish ``notifications/tasks`` for a task watched by a listen (``taskIds``)."""
        if TASK_KEY + task_id in self._by_uri:
            self._hop(self._publish, ("task", task_id))

    # -- internals --------------------------------------------------------------------------

    def _hop(self, fn: Callable[..., None], *args: object) -> None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            # Not in the trio thread: a worker thread (sync tool) or another thread entirely.
            if self._token is None:
                return
            try:
                trio.from_thread.run_sync(fn, *args, trio_token=self._token)
            except trio.RunFinishedError:
                return
            return
        fn(*args)

    def _publish(self, change: Change) -> None:
        what, key = change
        targets: Iterable[Subscriber]
        if what == "updated":
            targets = self._by_uri.get(key, ())
        elif what == "task":
            targets = self._by_uri.get(TASK_KEY + key, ())
        else:
            targets = self._by_kind[cast(ListKind, key)]
        # ``Subscriber._offer`` inlined for the subscribers that ``take``: in a fan-out to
        # many listens, each costs two dict insertions here and no call.
        due = self._due
        scheduled = bool(due)
        for sub in tuple(targets):
            if sub.take is None:
                sub._offer(change)
                continue
            sub._pending[change] = None
            due[sub] = None
        if due and not scheduled:
            # Once the publishing task yields: a burst published at once is one pass.
            assert self._token is not None  # (set by open, in this trio run)
            self._token.run_sync_soon(self._flush)

    def _defer(self, sub: Subscriber) -> None:
        if not self._due:
            # Once the publishing task yields: a burst published at once is one pass.
            assert self._token is not None  # (set by open, in this trio run)
            self._token.run_sync_soon(self._flush)
        self._due[sub] = None

    def _flush(self) -> None:
        due, self._due = self._due, {}
        for sub in due:
            # The usual case inlined (one change pending, taken at once): the fan-out loop.
            pending = sub._pending
            take = sub.take
            if len(pending) != 1 or take is None or sub.end_reason is not None:
                sub._flush()
                continue
            (change,) = pending
            try:
                taken = take(change)
            except Exception:  # (a bug in a consumer: it gets the change the usual way)
                log.exception("subscriber take failed subscriber=%s", sub.label)
                taken = False
            if taken:
                pending.clear()
            else:
                sub._untaken()

    def _end_all(self, reason: str) -> None:
        self.closed_reason = reason
        count = len(self._subscribers)
        for sub in tuple(self._subscribers):
            sub.end(reason)
        if count:
            log.info("ended subscribers count=%d reason=%s", count, reason)

    def _remove(self, sub: Subscriber) -> None:
        self._subscribers.discard(sub)
        for kind in sub.kinds:
            self._by_kind[kind].discard(sub)
        for uri in sub.uris:
            self._unindex(uri, sub)

    def _unindex(self, uri: str, sub: Subscriber) -> None:
        subs = self._by_uri.get(uri)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._by_uri[uri]
