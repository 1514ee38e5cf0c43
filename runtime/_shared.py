"""What a server shares with its other replicas while it serves over a shared store
(``runtime.stores``; docs/deploy.md): list-changed and resource-updated events fanned out
through the store's bus, and the ``requestState`` sealing secret (2026-07-28 MRTR: state
sealed on one replica opens on another). Sessions and SSE events are shared by the HTTP
transport itself (``serve_http(store=...)``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .features import Broadcast, Change, StateSealer
from .stores import Store, StoreUnavailable

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["sharing"]

log = logging.getLogger("mcp_runtime.stores")

#: Changes waiting to be published; past it they are dropped (logged). Every change is
#: level-triggered ("read it again"), so a burst says no more than its last item.
RELAY_QUEUE = 1024
CHANGES_CHANNEL = "changes"


@contextlib.asynccontextmanager
async def sharing(server: Server, store: Store) -> AsyncIterator[None]:
    """Run ``store`` and, when it is shared, relay ``server``'s changes through it."""
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
            try:
                yield
            finally:
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
