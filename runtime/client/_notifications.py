"""Where the server's notifications go: one router, in the reading task.

A notification is never answered (JSON-RPC 2.0 section 4.1), so nothing here can fail the
conversation: a callback that raises is logged, a listener that cannot keep up loses the
newest ones (logged), and one whose channel is closed is skipped.

- ``notifications/progress``: to the progress callback of the request its token names
  (basic/utilities/progress), and nowhere else.
- ``notifications/cancelled``: cancels the server's request it names, if it is still being
  served (basic/utilities/cancellation; no answer is sent then), and nowhere else.
- ``notifications/message``: logged on ``mcp_runtime.client.server`` at the level it names
  (server/utilities/logging), then delivered like any other.
- Any other: to each :class:`Listener` that asked for its method (or, 2026-07-28, whose
  subscription id it carries in ``_meta``), to the client's ``on_notification``, and to the
  ``on_notification`` of the request on whose response stream it arrived.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import msgspec
import trio

from ..framing import loggable
from ..protocol import CANCELLED, LOG_MESSAGE, META_SUBSCRIPTION_ID, PROGRESS
from ._requests import Pending, RequestTable

__all__ = ["Listener", "Notification", "NotificationCallback", "Notifications"]

log = logging.getLogger("mcp_runtime.client")

#: MCP logging levels (RFC 5424 severities, 2025-11-25 server/utilities/logging) -> Python's.
_LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class Notification(msgspec.Struct, frozen=True):
    """A notification from the server (``params`` decoded)."""

    method: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


#: Per request: the server's notifications that arrived on that request's response stream.
NotificationCallback = Callable[[Notification], Any]


class Listener:
    """A ``Client.listen`` consumer: the notification kinds it wants, or (2026-07-28) the
    subscription id its notifications carry."""

    def __init__(
        self,
        send: trio.MemorySendChannel[Notification],
        kinds: frozenset[str],
        subscription_id: Any = None,
    ) -> None:
        self.send = send
        self.kinds = kinds
        self.subscription_id = subscription_id


class Notifications:
    """The router (see the module docstring) of one conversation.

    :meth:`deliver` is called by the conversation's reader, one notification at a time, and
    never waits: listeners get theirs with ``send_nowait`` and the callbacks are called in
    the reading task, so a callback that blocks holds up everything the server sends after
    it (docs/client.md says they are called synchronously). The listeners are added and removed by
    ``listen`` (``_listen``); :meth:`close_listeners` is called once no notification can
    come again, so that every ``listen`` loop ends rather than waits.
    """

    def __init__(
        self,
        table: RequestTable[Any],
        on_notification: NotificationCallback | None = None,
    ) -> None:
        self._table = table
        self.on_notification = on_notification
        self.listeners: list[Listener] = []

    def close_listeners(self) -> None:
        """No more notifications will come (the link is gone for good, or the standing
        stream that carried them): every listener's channel ends."""
        for listener in self.listeners:
            listener.send.close()

    def deliver(self, note: Notification, related: Pending | None = None) -> None:
        method = note.method
        params = note.params
        if method == PROGRESS:
            pending = self._table.by_token(params.get("progressToken"))
            if pending is not None and pending.progress is not None:
                try:
                    pending.progress(
                        float(params.get("progress", 0)), params.get("total"), params.get("message")
                    )
                except Exception:
                    log.exception("the progress callback of %s failed", pending.method)
            return
        if method == CANCELLED:
            scope = self._table.cancel(params.get("requestId"))
            if scope is not None:
                scope.cancel()
            return
        if method == LOG_MESSAGE:
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            logging.getLogger("mcp_runtime.client.server").log(
                level, "%s %s", loggable(params.get("logger", "")), loggable(params.get("data"))
            )
        meta = params.get("_meta")
        subscription = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        for listener in self.listeners:
            if listener.subscription_id is not None:
                if subscription != listener.subscription_id:
                    continue
            elif method not in listener.kinds:
                continue
            try:
                listener.send.send_nowait(note)
            except trio.WouldBlock:
                log.warning("a listener is not keeping up: dropped %s", loggable(method))
            except trio.ClosedResourceError:
                pass
        if self.on_notification is not None:
            try:
                self.on_notification(note)
            except Exception:
                log.exception("on_notification failed for %s", loggable(method))
        if related is not None and related.notified is not None:
            try:
                related.notified(note)
            except Exception:
                log.exception("the on_notification callback of %s failed", related.method)
