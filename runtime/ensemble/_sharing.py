"""What a server shares with its other replicas while it serves over a shared store
(``runtime.stores``; docs/deploy.md): list-changed and resource-updated events fanned out
through the store's bus, the ``requestState`` sealing secret (2026-07-28 MRTR: state sealed
on one replica opens on another), and its tasks (``_task_mirror``). Sessions and SSE events
are shared by the HTTP transport itself (``serve_http(store=...)``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

import msgspec
import trio

from ..features import Broadcast, Change, Registry, StateSealer, TaskTable
from ..stores import Store, StoreUnavailable
from ._task_mirror import TaskMirror

__all__ = ["Shares", "sharing"]

log = logging.getLogger("mcp_runtime.stores")

#: Changes waiting to be published; past it they are dropped (logged). Every change is
#: level-triggered ("read it again"), so a burst says no more than its last item.
RELAY_QUEUE = 1024
CHANGES_CHANNEL = "changes"


class Shares(Protocol):
    """What sharing needs of a server (``runtime.Server`` is one)."""

    #: Whether its ``requestState`` secret was given (then it is kept, not shared).
    state_secret_given: bool
    #: Replaced by one keyed with the store's shared secret while sharing.
    state_sealer: StateSealer

    @property
    def registry(self) -> Registry: ...

    @property
    def tasks(self) -> TaskTable: ...


@contextlib.asynccontextmanager
async def sharing(server: Shares, store: Store) -> AsyncIterator[None]:
    """Run ``store`` and, when it is shared, relay ``server``'s changes through it, share
    its ``requestState`` key (unless it was given one) and mirror its tasks there."""
    async with store.running():
        if not store.shared:
            yield
            return
        if not server.state_secret_given:
            try:
                secret = await store.shared_secret("request-state")
            except StoreUnavailable as exc:
                # Sealed state then opens only on the replica that sealed it.
                log.warning("requestState key not shared (store unavailable): %s", exc)
            else:
                server.state_sealer = StateSealer(
                    secret, ttl_seconds=server.state_sealer.ttl_seconds
                )
        async with trio.open_nursery() as nursery:
            await _relay(server.registry.changes, store, nursery)
            mirror = TaskMirror(store, server.tasks, server.registry.changes)
            await mirror.start(nursery)
            server.tasks.mirror = mirror
            try:
                yield
            finally:
                server.tasks.mirror = None
                server.registry.changes.set_relay(None)
                nursery.cancel_scope.cancel()


async def _relay(changes: Broadcast, store: Store, nursery: trio.Nursery) -> None:
    send, receive = trio.open_memory_channel[Change](RELAY_QUEUE)
    mine = store.replica

    def relay(change: Change) -> None:
        try:
            send.send_nowait(change)
        except trio.WouldBlock:
            log.warning("change not relayed to other replicas (queue full): %r", change)

    def deliver(data: bytes) -> None:
        try:
            origin, what, key = msgspec.json.decode(data, type=tuple[str, str, str])
        except (msgspec.DecodeError, ValueError):
            return
        log.debug("change from replica=%s %s %s", origin, what, key)
        if origin != mine and what in ("list", "updated"):
            change: Any = (what, key)
            changes.deliver(change)

    async def publish() -> None:
        async for what, key in receive:
            try:
                await store.bus.publish(CHANGES_CHANNEL, msgspec.json.encode([mine, what, key]))
            except StoreUnavailable as exc:
                log.warning("change not relayed to other replicas: %s", exc)

    try:
        unsubscribe = await store.bus.subscribe(CHANGES_CHANNEL, deliver)
    except StoreUnavailable as exc:
        log.warning("not receiving other replicas' changes yet: %s", exc)
        unsubscribe = None

    async def keep_subscribed() -> None:
        nonlocal unsubscribe
        try:
            while unsubscribe is None:
                await trio.sleep(1.0)
                with contextlib.suppress(StoreUnavailable):
                    unsubscribe = await store.bus.subscribe(CHANGES_CHANNEL, deliver)
            await trio.sleep_forever()
        finally:
            if unsubscribe is not None:
                unsubscribe()

    changes.set_relay(relay)
    nursery.start_soon(publish)
    nursery.start_soon(keep_subscribed)
