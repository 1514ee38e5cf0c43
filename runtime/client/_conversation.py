"""One client's conversation with its server: JSON-RPC over a link, composed of four parts.

- :class:`LinkKeeper` (``_keeper``): the link, held open and re-opened after a loss by the
  reconnection policy.
- :class:`RequestTable` (``_requests``, sans-IO): the client's requests waiting for
  answers, and the server's requests being served.
- :class:`Notifications` (``_notifications``): where the server's notifications go.
- :class:`ServerRequests` (``_serving``): the server's requests, admitted or refused, and
  answered.

This module reads the link and routes what arrives to those parts, and sends the client's
requests and batches. The MCP surface and the eras are :class:`Client`'s.

Task tree (in the nursery ``open_client`` opens)::

    open_client nursery
    ├── LinkKeeper.maintain     opens the link (and re-opens it after a loss, with backoff),
    │   └── Conversation.read   routes responses to waiting requests, notifications to
    │                           listeners and callbacks, server requests to handler tasks
    ├── one task per server-to-client request (sampling, elicitation, roots, ping), at
    │   most ``max_server_requests`` at once
    ├── Conversation.resume     after a reconnect: the client's step (a new handshake-era
    │                           session), then re-send the requests safe to repeat
    └── (HTTP link) its POST and GET tasks

A request waits in its caller's task: it enters the request table, is sent, and waits for
its outcome under its own timeout. Cancelling the caller (or the timeout) sends
``notifications/cancelled`` (MCP 2025-11-25 basic/utilities/cancellation; over 2026-07-28
HTTP the link closes the POST's response stream instead, which is how that revision cancels).

What the server sends is read by the server's own rules (``runtime.protocol``'s
``decode_messages``), and nothing it sends ends the conversation:

- A message that cannot be read (not JSON, nested deeper than the decoder follows, not
  JSON-RPC 2.0, over the size cap) is logged and dropped, and the answer that follows it
  still arrives. Which request it answered cannot be told (its id is inside what could not
  be read), so a request that then times out says what was dropped meanwhile
  (``RequestTimeout.dropped``). Over HTTP each answer comes on its request's own response,
  so there such an answer fails its request with :class:`BadMessage` (``_streamable``).
- A server-to-client request is admitted or refused at once (``_serving``).
- A message the routing fails on is logged with an excerpt, and reading goes on.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Any, Final

import msgspec
import trio

from ..framing import escape_excerpt, loggable
from ..protocol import Envelope, JSONRPCError, RequestId, decode_messages
from ._backoff import Backoff
from ._connectors import Connector
from ._decode import decode_value, params_of, peer_error
from ._errors import BadMessage, ClientError, RequestTimeout, TransportLost
from ._keeper import RAISED, LinkKeeper
from ._link import Failed, Link, OnStream, ReportsUnreached
from ._notifications import Listener, Notification, NotificationCallback, Notifications
from ._outgoing import Outgoing, cancellation
from ._requests import (
    DEFAULT_MAX_SERVER_REQUESTS,
    Outcome,
    Pending,
    ProgressCallback,
    RequestTable,
)
from ._serving import ServerRequestHandler, ServerRequests

__all__ = [
    "DEFAULT_MAX_SERVER_REQUESTS",
    "RAISED",
    "Conversation",
    "Listener",
    "Notification",
    "NotificationCallback",
    "ProgressCallback",
    "ServerRequestHandler",
]

log = logging.getLogger("mcp_runtime.client")

#: How long a ``notifications/cancelled`` may take to go out before it is given up.
_CANCEL_SEND_TIMEOUT: Final = 2.0


class Conversation:
    """The JSON-RPC side of one client (see the module docstring). Never raises from
    :meth:`maintain` after it started: a dead link fails the waiting requests instead.

    Its callers are the client's other parts: the ``Caller`` sends requests through
    :meth:`request`, the ``Client`` batches through :meth:`batch`, the ``Client`` and the
    ``Handshake`` send notifications through :meth:`send`; the keeper drives it as its
    ``LinkUser`` (:meth:`read`, :meth:`resume`, :meth:`lost`, :meth:`ended`). Every
    request that enters the table leaves it once (``RequestTable.close`` in a ``finally``),
    ending with its result, the server's error, the :class:`ClientError` that ended it (a
    timeout, a loss it cannot survive, the client's close) or its caller's cancellation, so
    no caller waits past its timeout or the client's close. :meth:`read` is the only reader
    of the link, and nothing a server sends makes it stop before the link ends.
    """

    def __init__(
        self,
        connector: Connector,
        nursery: trio.Nursery,
        backoff: Backoff,
        *,
        on_reconnect: Callable[[], Awaitable[None]],
        answer: ServerRequestHandler,
        on_notification: Callable[[Notification], Any] | None = None,
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
    ) -> None:
        self.table: RequestTable[trio.CancelScope] = RequestTable(max_server_requests)
        self.keeper = LinkKeeper(connector, backoff, nursery)
        self.notifications = Notifications(self.table, on_notification)
        self.serving = ServerRequests(self.table, nursery, self.send, answer)
        self.connector = connector
        self._on_reconnect = on_reconnect
        #: (when, why) of the last message dropped unread that named no request.
        self._dropped: tuple[float, str] | None = None

    # -- the parts' state, as the client reads it ---------------------------------------------

    @property
    def link(self) -> Link | None:
        return self.keeper.link

    @property
    def reconnects(self) -> int:
        """Times the link was re-opened after a loss."""
        return self.keeper.reconnects

    @property
    def listeners(self) -> list[Listener]:
        return self.notifications.listeners

    @property
    def most_serving(self) -> int:
        """The most server requests served at once (diagnostics and the tests)."""
        return self.table.most_serving

    def next_id(self) -> int:
        return self.table.next_id()

    def requests_may_go(self) -> None:
        """The client's start (or resume) is done: requests wait for this on each link."""
        self.keeper.ready.set()

    # -- the link's life (``LinkUser``) -----------------------------------------------------

    async def maintain(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the link open (``LinkKeeper.maintain``); never raises after started."""
        await self.keeper.maintain(self, task_status=task_status)

    def close(self) -> None:
        """Fail what still waits; the link closes when ``maintain`` is cancelled."""
        self.keeper.close()
        self.ended(TransportLost("the client is closed"))

    def ended(self, error: TransportLost) -> None:
        self.table.fail_all(error)
        self.notifications.close_listeners()

    def lost(self, reason: str, *, too_large: bool) -> None:
        if too_large:
            self.table.fail_sent(BadMessage(reason))
        self.table.fail_unrepeatable(reason)

    async def resume(self) -> None:
        """After a reconnect: the client's own step (a new handshake-era session), then
        re-send the requests that are safe to repeat."""
        try:
            await self._on_reconnect()
            self.requests_may_go()
            for pending in self.table.to_resend(self.keeper.generation):
                log.info("re-sending %s id=%r", pending.method, pending.out.request_id)
                await self.send(pending.out)
        except ClientError as exc:
            log.error("resuming after a reconnect failed: %s", loggable(exc))

    async def wait_usable(self, early: bool = False) -> None:
        await self.keeper.wait_usable(early)

    async def send(self, out: Outgoing) -> None:
        await self.keeper.send(out)

    # -- reading ----------------------------------------------------------------------------

    async def read(self, link: Link) -> None:
        while True:
            try:
                frame = await link.receive()
            except trio.EndOfChannel:
                return
            except BadMessage as exc:  # a frame the link skipped (over the size cap)
                log.warning("bad message from the server: %s", loggable(exc))
                self._dropped = (trio.current_time(), str(exc))
                continue
            related: Any = None
            if isinstance(frame, OnStream):
                related, frame = frame.request_id, frame.data
            if isinstance(frame, Failed):
                if frame.request_id is None:  # the link's notification stream is gone
                    log.error("%s", loggable(frame.error))
                    self.notifications.close_listeners()
                    continue
                self.table.fail(frame.request_id, frame.error)
                continue
            for item in decode_messages(frame):
                if isinstance(item, JSONRPCError):
                    self._unreadable(item.message, frame)
                    continue
                try:
                    await self._route(item, related)
                except Exception:  # one odd message must not end the conversation
                    log.exception(
                        "could not handle a message from the server: %s", escape_excerpt(frame)
                    )

    def _unreadable(self, reason: str, frame: bytes) -> None:
        log.warning("bad message from the server: %s: %s", loggable(reason), escape_excerpt(frame))
        self._dropped = (trio.current_time(), reason)

    async def _route(self, item: Envelope, related: Any = None) -> None:
        """``related``: the request on whose response stream ``item`` arrived, if known."""
        if item.method is msgspec.UNSET:  # a response (``classify``: it has an id)
            result, error = item.result, item.error
            if isinstance(error, msgspec.Raw):
                found = self.table.answer(item.id, None, error)
            else:
                found = self.table.answer(
                    item.id, result if isinstance(result, msgspec.Raw) else None, None
                )
            if found is None:
                log.debug("a response for no waiting request id=%r (late or cancelled)", item.id)
            return
        pending = self.table.get(related) if related is not None else None
        params = params_of(item.params)
        if item.id is msgspec.UNSET:
            if params is None:
                log.warning(
                    "dropped the server's %s: its params are nested too deeply",
                    loggable(item.method),
                )
                return
            self.notifications.deliver(Notification(str(item.method), params), pending)
            return
        request_id: RequestId = item.id  # type: ignore[assignment]  # (``classify``: not null)
        await self.serving.admit(request_id, str(item.method), params, pending)

    # -- the client's requests --------------------------------------------------------------

    async def request(
        self,
        out: Outgoing,
        *,
        timeout: float | None,
        progress: ProgressCallback | None = None,
        progress_token: str | None = None,
        early: bool = False,
        on_notification: NotificationCallback | None = None,
        on_request: ServerRequestHandler | None = None,
    ) -> msgspec.Raw:
        """Send the request ``out`` and wait for its result (raw). ``early``: it may go as
        soon as the link is up (the handshake itself). Raises as :class:`Client` documents;
        on timeout or cancellation the server is told (``notifications/cancelled``)."""
        keeper = self.keeper
        done = trio.Event()
        pending = Pending(
            out,
            done,
            progress=progress,
            notified=on_notification,
            answer=on_request,
        )
        self.table.open(pending, progress_token)
        sent = False
        sent_at = math.inf
        try:
            with trio.move_on_after(math.inf if timeout is None else timeout) as scope:
                while True:
                    await keeper.wait_usable(early)
                    generation = keeper.generation
                    if pending.generation < generation:
                        pending.generation = generation
                        try:
                            await self.send(out)
                            sent = True
                            sent_at = min(sent_at, trio.current_time())
                        except TransportLost:
                            if not out.repeatable:
                                raise
                            # The keeper notices the loss and reconnects.
                            await trio.lowlevel.checkpoint()
                            continue
                    await done.wait()
                    break
            if scope.cancelled_caught:
                unreached = self._unreached(pending, timeout)
                if unreached is not None:
                    raise unreached
                if sent:
                    await self._cancel_remote(out, "timeout")
                raise self._timeout(pending, timeout, sent_at)
        except trio.Cancelled:
            if sent and not done.is_set():
                with trio.CancelScope(shield=True):
                    await self._cancel_remote(out, "cancelled by the client")
            raise
        finally:
            self.table.close(pending, progress_token)
        outcome = pending.outcome
        if isinstance(outcome, ClientError):
            raise outcome
        assert outcome is not None
        if outcome.error is not None:
            raise peer_error(decode_value(outcome.error, f"{pending.method}: the error"))
        if outcome.result is None:
            raise BadMessage(f"{pending.method}: a response with neither result nor error")
        return outcome.result

    def _unreached(self, pending: Pending, timeout: float | None) -> TransportLost | None:
        """What a request that timed out ends with when it never reached the server: the
        link was still retrying its connection, so say why (a timeout shorter than the
        backoff budget, e.g. ``--timeout 2 --retry-for 30``, must not read as a silent
        server)."""
        link: object = self.keeper.link
        if not isinstance(link, ReportsUnreached):
            return None
        unreached = link.unreached(pending.out.request_id)
        if unreached is None:
            return None
        return TransportLost(
            f"{pending.method}: {unreached} (no connection within the {timeout:g} s timeout)"
        )

    def _timeout(self, pending: Pending, timeout: float | None, sent_at: float) -> RequestTimeout:
        """What a request that got no answer within ``timeout`` ends with, naming what the
        client dropped unread since it was sent (it may have been the answer)."""
        dropped = self._dropped
        return RequestTimeout(
            pending.method,
            float(timeout),  # type: ignore[arg-type]
            dropped=dropped[1] if dropped is not None and dropped[0] >= sent_at else None,
        )

    async def batch(
        self, items: Sequence[tuple[Any, str, bytes]], *, modern: bool, timeout: float | None
    ) -> list[Any]:
        """Send ``items`` ((request id, method, encoded request), ...) as one JSON-RPC batch
        and wait for every answer: each item's result (decoded) or its error
        (:class:`PeerError`, :class:`BadMessage` for an answer the client cannot read, or
        :class:`TransportLost` for one the link gave up on), in order.
        A batch is never re-sent (its items are not all safe to repeat). On timeout or
        cancellation the items still unanswered are cancelled at the server."""
        entries: list[Pending] = []
        answered: list[trio.Event] = []
        for request_id, method, _data in items:
            done = trio.Event()
            pending = Pending(Outgoing(b"", method, request_id, modern=modern), done)
            pending.generation = self.keeper.generation
            self.table.open(pending)
            entries.append(pending)
            answered.append(done)
        out = Outgoing(
            b"[" + b",".join(data for _id, _method, data in items) + b"]",
            "batch",
            None,
            batch_ids=[request_id for request_id, _method, _data in items],
            expects_response=True,
        )
        try:
            with trio.fail_after(math.inf if timeout is None else timeout):
                await self.send(out)
                for done in answered:
                    await done.wait()
        except trio.TooSlowError:
            await self._cancel_unanswered(entries, "timeout")
            raise RequestTimeout("batch", float(timeout or 0)) from None
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._cancel_unanswered(entries, "cancelled by the client")
            raise
        finally:
            for pending in entries:
                self.table.close(pending)
        return [_batch_result(pending) for pending in entries]

    async def _cancel_unanswered(self, entries: list[Pending], reason: str) -> None:
        """Tell the server to stop the items of a batch that have no answer yet."""
        for pending in entries:
            if not pending.done.is_set():
                await self._cancel_remote(pending.out, reason)

    async def _cancel_remote(self, out: Outgoing, reason: str) -> None:
        with trio.move_on_after(_CANCEL_SEND_TIMEOUT), suppress(TransportLost):
            await self.send(cancellation(out, reason))


def _batch_result(pending: Pending) -> Any:
    """One batch item's outcome: its result decoded, or the error it ends with."""
    outcome = pending.outcome
    try:
        if isinstance(outcome, ClientError):
            return outcome
        if not isinstance(outcome, Outcome) or outcome.error is not None:
            error = outcome.error if outcome else None
            what = f"{pending.method}: the error"
            return peer_error(decode_value(error, what) if error else None)
        result = outcome.result
        return decode_value(result, f"{pending.method}: the result") if result else None
    except BadMessage as exc:
        return exc
