"""Subscriptions across the bridge: listens held on the remote, relayed to our clients.

A 2026-07-28 client subscribes with ``subscriptions/listen`` (basic/patterns/subscriptions):
:func:`serve_listen` holds one listen on the proxy's shared upstream client for each of ours
and relays what arrives with our request's subscription id. A handshake-era session of a
2026-07-28 remote gets its list changes and resource updates from listens its upstream session
holds (:func:`relay_listen`), relayed as handshake-era notifications.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import trio

from ..client import Client, Notification
from ..framing import loggable
from ..middleware import Request
from ..protocol import META_SUBSCRIPTION_ID, SUBSCRIPTIONS_ACKNOWLEDGED
from ._hop import declared, with_subscription
from ._relay import RELAY_QUEUE

__all__ = ["LIST_KINDS", "listen_filter", "relay_listen", "serve_listen"]

log = logging.getLogger("mcp_runtime.bridge")

#: The kinds whose list changes a listen can ask for (``<kind>ListChanged``).
LIST_KINDS: Final = ("tools", "prompts", "resources")


async def relay_listen(
    client: Client,
    send: trio.MemorySendChannel[Notification],
    filter_: dict[str, Any],
    *,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Hold ``client.listen(**filter_)`` and pass its notifications to ``send``. Started
    (``nursery.start``) once the remote is listening: a 2026-07-28 remote's acknowledgment
    (its honored filter is the started value), at once for a handshake-era remote (whose
    subscriptions are made before the listen yields). So nothing the remote publishes after
    we acknowledge our own client is missed (basic/patterns/subscriptions)."""
    async with client.listen(**filter_) as notes:
        started = False
        if client.era != "modern":
            task_status.started(None)
            started = True
        async for note in notes:
            if note.method == SUBSCRIPTIONS_ACKNOWLEDGED:
                if not started:
                    honored = note.params.get("notifications")
                    task_status.started(honored if isinstance(honored, dict) else None)
                    started = True
                continue
            try:
                send.send_nowait(note)
            except trio.WouldBlock:
                log.warning("downstream not reading: dropped %s", loggable(note.method))
        if not started:
            task_status.started(None)


def listen_filter(
    wanted: Any, capabilities: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a downstream listen asks (its ``notifications``) that the remote declares:
    ``(honored, filter_)``, the acknowledgment's ``notifications`` and the arguments of the
    listen on our client (basic/patterns/subscriptions)."""
    wanted = wanted if isinstance(wanted, dict) else {}
    honored: dict[str, Any] = {}
    filter_: dict[str, Any] = {}
    for kind in LIST_KINDS:
        field = f"{kind}ListChanged"
        if wanted.get(field) and declared(capabilities, kind, "listChanged"):
            honored[field] = True
            filter_[kind] = True
    uris = wanted.get("resourceSubscriptions")
    if isinstance(uris, list) and declared(capabilities, "resources", "subscribe"):
        honored["resourceSubscriptions"] = [str(u) for u in uris]
        filter_["resource_uris"] = honored["resourceSubscriptions"]
    task_ids = wanted.get("taskIds")
    if isinstance(task_ids, list):
        honored["taskIds"] = [str(t) for t in task_ids]
        filter_["task_ids"] = honored["taskIds"]
    return honored, filter_


async def serve_listen(client: Client, request: Request) -> Any:
    """2026-07-28 ``subscriptions/listen`` (basic/patterns/subscriptions): one listen on
    the shared client for each of ours, its notifications carrying our request's id."""
    caps = client.description.capabilities if client.description else {}
    honored, filter_ = listen_filter(request.params.get("notifications"), caps)
    meta = {META_SUBSCRIPTION_ID: request.id}
    peer = request.context.peer

    async def acknowledge(notifications: dict[str, Any]) -> None:
        await peer.notify(
            SUBSCRIPTIONS_ACKNOWLEDGED,
            {"_meta": meta, "notifications": notifications},
            related=request.id,
        )

    if not filter_:
        await acknowledge(honored)
        await trio.sleep_forever()
    send, receive = trio.open_memory_channel[Notification](RELAY_QUEUE)
    async with trio.open_nursery() as nursery:

        async def listen(*, task_status: trio.TaskStatus[Any]) -> None:
            try:
                await relay_listen(client, send, filter_, task_status=task_status)
            finally:
                send.close()

        # Acknowledged once the remote listens, with what it honored (a 2026-07-28
        # remote's acknowledgment; else what its capabilities promise).
        upstream_honored = await nursery.start(listen)
        await acknowledge(upstream_honored if upstream_honored is not None else honored)
        async for note in receive:
            await peer.notify(
                note.method, with_subscription(note.params, request.id), related=request.id
            )
    # The remote ended its listen: so do we ("Graceful Closure").
    return {"_meta": dict(meta)}
