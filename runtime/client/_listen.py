"""Change notifications for as long as the caller listens, in either era.

2026-07-28 (basic/utilities/subscriptions): one ``subscriptions/listen`` request held open
for the body, naming what to hear (list changes, resource URIs, task ids); its
notifications carry its id as their subscription id. It is safe to repeat, so after a
reconnect it is sent again and the server acknowledges it again: changes made while the link
was down are not replayed (re-read the lists on a new
``notifications/subscriptions/acknowledged``). When it ends (the server ends it, or the link
is gone for good), the channel ends.

Handshake era: ``resources/subscribe`` for each URI (``unsubscribe`` on the way out, shielded
and bounded), then the session's notifications of the requested kinds.

A listener that falls ``buffer`` notifications behind loses the newest ones (logged).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import trio

from ..framing import loggable
from ..protocol import (
    PROMPTS_LIST_CHANGED,
    RESOURCES_LIST_CHANGED,
    RESOURCES_UPDATED,
    SUBSCRIPTIONS_LISTEN,
    TASKS_CHANGED,
    TASKS_STATUS,
    TOOLS_LIST_CHANGED,
)
from ._caller import Caller
from ._errors import ClientError
from ._handshake import Handshake
from ._notifications import Listener, Notification, Notifications

__all__ = ["listen"]

log = logging.getLogger("mcp_runtime.client")

#: How long unsubscribing on the way out of a handshake-era listen may take.
_UNSUBSCRIBE_TIMEOUT: Final = 2.0


@asynccontextmanager
async def listen(
    caller: Caller,
    handshake: Handshake,
    notifications: Notifications,
    *,
    tools: bool = False,
    prompts: bool = False,
    resources: bool = False,
    resource_uris: Sequence[str] = (),
    task_ids: Sequence[str] = (),
    buffer: int = 256,
) -> AsyncIterator[trio.MemoryReceiveChannel[Notification]]:
    """The notifications asked for, on a channel, for the body (see the module docstring)."""
    send, receive = trio.open_memory_channel[Notification](buffer)
    kinds = set()
    if tools:
        kinds.add(TOOLS_LIST_CHANGED)
    if prompts:
        kinds.add(PROMPTS_LIST_CHANGED)
    if resources:
        kinds.add(RESOURCES_LIST_CHANGED)
    if resource_uris:
        kinds.add(RESOURCES_UPDATED)
    if task_ids:
        kinds.update((TASKS_CHANGED, TASKS_STATUS))
    if not caller.modern:
        listener = Listener(send, frozenset(kinds))
        notifications.listeners.append(listener)
        try:
            for uri in resource_uris:
                await handshake.subscribe(uri)
            async with receive:
                yield receive
        finally:
            notifications.listeners.remove(listener)
            with trio.CancelScope(shield=True), trio.move_on_after(_UNSUBSCRIBE_TIMEOUT):
                for uri in resource_uris:
                    with suppress(ClientError):
                        await handshake.unsubscribe(uri)
        return
    request_id = caller.conversation.next_id()  # the listen's id is its subscription id
    listener = Listener(send, frozenset(kinds), subscription_id=request_id)
    notifications.listeners.append(listener)
    filter_: dict[str, Any] = {
        "toolsListChanged": tools,
        "promptsListChanged": prompts,
        "resourcesListChanged": resources,
    }
    if resource_uris:
        filter_["resourceSubscriptions"] = list(resource_uris)
    if task_ids:
        filter_["taskIds"] = list(task_ids)
    try:
        async with trio.open_nursery() as nursery:

            async def hold() -> None:
                try:
                    await caller.raw(
                        SUBSCRIPTIONS_LISTEN,
                        {"notifications": filter_},
                        timeout=None,
                        request_id=request_id,
                    )
                except ClientError as exc:
                    log.warning("subscriptions/listen ended: %s", loggable(exc))
                send.close()

            nursery.start_soon(hold)
            async with receive:
                yield receive
            nursery.cancel_scope.cancel()
    finally:
        notifications.listeners.remove(listener)
