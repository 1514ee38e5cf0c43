"""One client's conversation with its server: the link, the request table, the routing.

Task tree (in the nursery ``open_client`` opens)::

    open_client nursery
    ├── Conversation.maintain   opens the link (and re-opens it after a loss, with backoff),
    │   └── reads it            routes responses to waiting requests, notifications to
    │                           listeners and callbacks, server requests to handler tasks
    ├── one task per server-to-client request (sampling, elicitation, roots, ping)
    ├── Conversation._resume    after a reconnect: the client's step (a new handshake-era
    │                           session), then re-send the requests safe to repeat
    └── (HTTP link) its POST and GET tasks

A request waits in its caller's task: it registers in the request table, sends, and waits
for its outcome under its own timeout. Cancelling the caller (or the timeout) sends
``notifications/cancelled`` (MCP 2025-11-25 basic/utilities/cancellation; over 2026-07-28
HTTP the link closes the POST's response stream instead, which is how that revision cancels).
This object knows JSON-RPC and links; the MCP surface and the eras are :class:`Client`'s.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Any, Final

import msgspec
import trio

from ._backoff import Backoff
from ._connectors import Connector
from ._errors import BadMessage, ClientError, PeerError, RequestTimeout, TransportLost
from ._link import Failed, Link, OnStream, Outgoing, ReportsUnreached
from ._wire import INTERNAL_ERROR, META_SUBSCRIPTION_ID, Incoming, decode_incoming, loggable

__all__ = [
    "Conversation",
    "Listener",
    "Notification",
    "NotificationCallback",
    "Pending",
    "ProgressCallback",
    "ServerRequestHandler",
    "peer_error",
]

log = logging.getLogger("mcp_runtime.client")

ProgressCallback = Callable[[float, float | None, str | None], Any]
#: Per request: the server's notifications that arrived on that request's response stream.
NotificationCallback = Callable[["Notification"], Any]
#: Per request: answers the server's requests that arrived on that request's response stream.
ServerRequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
_CANCEL_SEND_TIMEOUT: Final = 2.0
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
_encode: Final = msgspec.json.encode


class Notification(msgspec.Struct, frozen=True):
    """A notification from the server (``params`` decoded)."""

    method: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class _Outcome(msgspec.Struct):
    result: msgspec.Raw | None = None
    error: Any = None


class Pending:
    """One request waiting for its answer: what to re-send after a reconnect (``out``,
    when ``repeatable``), the link generation it went out on, and its outcome once known."""

    __slots__ = (
        "answer",
        "done",
        "generation",
        "method",
        "notified",
        "out",
        "outcome",
        "progress",
        "repeatable",
    )

    def __init__(
        self,
        method: str,
        out: Outgoing,
        repeatable: bool,
        progress: ProgressCallback | None,
        notified: NotificationCallback | None = None,
        answer: ServerRequestHandler | None = None,
    ) -> None:
        self.method = method
        self.out = out
        self.repeatable = repeatable
        self.progress = progress
        self.notified = notified
        self.answer = answer
        self.done = trio.Event()
        self.outcome: _Outcome | ClientError | None = None
        self.generation = -1  # the link generation it was last sent on

    def deliver(self, outcome: _Outcome | ClientError) -> None:
        if not self.done.is_set():
            self.outcome = outcome
            self.done.set()


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


class Conversation:
    """The JSON-RPC side of one client (see the module docstring). Never raises from
    :meth:`maintain` after it started: a dead link fails the waiting requests instead."""

    def __init__(
        self,
        connector: Connector,
        nursery: trio.Nursery,
        backoff: Backoff,
        *,
        on_reconnect: Callable[[], Awaitable[None]],
        answer: Callable[[str, dict[str, Any]], Awaitable[Any]],
        on_notification: Callable[[Notification], Any] | None = None,
    ) -> None:
        self.connector = connector
        self._nursery = nursery
        self.backoff = backoff
        self._on_reconnect = on_reconnect
        self._answer = answer
        self.on_notification = on_notification
        #: Times the link was re-opened after a loss.
        self.reconnects = 0
        self.requests: dict[Any, Pending] = {}
        self._by_token: dict[str, Pending] = {}
        self.listeners: list[Listener] = []
        self._serving: dict[Any, trio.CancelScope] = {}
        self.link: Link | None = None
        #: Counts links opened: a request remembers the generation it was sent on.
        self.generation = 0
        #: Set while a link is up; ``ready`` while requests may go (after the handshake).
        self.connected = trio.Event()
        self.ready = trio.Event()
        self.dead: TransportLost | None = None
        self.closing = False
        #: Set by the client while its era probe is out on a link that does not reconnect:
        #: a loss then re-opens the link once, at once (the probe itself is not re-sent).
        self.reopen_once = False

    def close(self) -> None:
        """Fail what still waits; the link closes when ``maintain`` is cancelled."""
        self.closing = True
        self._fail_all(TransportLost("the client is closed"))

    async def maintain(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the link open; after a loss re-open it per the backoff policy (when the
        connector allows), else fail every waiting request. Never raises after started."""
        started = False
        run = None
        while True:
            reason: str
            lost: TransportLost
            try:
                async with self.connector.open() as link:
                    self.link = link
                    self.generation += 1
                    self.connected.set()
                    if run is not None:
                        self.reconnects += 1
                        log.warning(
                            "reconnected to %s after %d attempt(s) in %.3f s",
                            self.connector.description,
                            run.attempts,
                            trio.current_time() - run.started,
                        )
                        self._nursery.start_soon(self._resume)
                    run = None
                    if not started:
                        started = True
                        task_status.started()
                    try:
                        await self._read(link)
                        # Raised inside the link's context so the connector can explain
                        # (a stdio server's exit status and last stderr lines).
                        raise TransportLost("the server closed the connection")
                    finally:
                        self.link = None
                        self.connected = trio.Event()
                        self.ready = trio.Event()
            except TransportLost as exc:
                reason = str(exc)
                lost = exc
                if not started and not self.connector.reconnects:
                    raise
            if self.closing:
                self._fail_all(TransportLost("the client is closed"))
                return
            self._fail_unrepeatable(reason)
            if not self.connector.reconnects and self.reopen_once:
                self.reopen_once = False
                log.warning(
                    "%s closed during the era probe (%s): starting it once more",
                    self.connector.description,
                    loggable(reason),
                )
                continue
            if not self.connector.reconnects:
                self._die(lost.restated(f"{self.connector.description}: {reason}"))
                return
            if run is None:
                run = self.backoff.start(clock=trio.current_time())
                log.warning(
                    "lost %s: %s; reconnecting", self.connector.description, loggable(reason)
                )
            delay = run.next_wait(trio.current_time())
            if delay is None:
                error = TransportLost(
                    f"{self.connector.description}: gave up reconnecting after "
                    f"{run.attempts} attempt(s) in {run.elapsed:.1f} s: {reason}",
                    attempts=run.attempts,
                )
                if not started:
                    raise error
                self._die(error)
                return
            await trio.sleep(delay)

    def _die(self, error: TransportLost) -> None:
        log.error("%s", loggable(error))
        self.dead = error
        self._fail_all(error)
        self.connected.set()  # wake waiters: they find _dead
        self.ready.set()

    def _fail_all(self, error: ClientError) -> None:
        for pending in list(self.requests.values()):
            pending.deliver(error)
        for listener in self.listeners:
            listener.send.close()

    def _fail_unrepeatable(self, reason: str) -> None:
        for pending in list(self.requests.values()):
            if not pending.repeatable and pending.generation >= 0:
                pending.deliver(
                    TransportLost(
                        f"{pending.method}: the connection was lost before the answer "
                        f"({reason}); not re-sent, it is not safe to repeat"
                    )
                )

    async def _resume(self) -> None:
        """After a reconnect: the client's own step (a new handshake-era session), then
        re-send the requests that are safe to repeat."""
        try:
            await self._on_reconnect()
            self.ready.set()
            generation = self.generation
            for pending in list(self.requests.values()):
                if pending.repeatable and pending.generation < generation:
                    pending.generation = generation
                    log.info("re-sending %s id=%r", pending.method, pending.out.request_id)
                    await self.send(pending.out)
        except ClientError as exc:
            log.error("resuming after a reconnect failed: %s", loggable(exc))

    async def send(self, out: Outgoing) -> None:
        link = self.link
        if link is None:
            raise TransportLost(f"{self.connector.description}: not connected")
        await link.send(out)

    async def _read(self, link: Link) -> None:
        while True:
            try:
                frame = await link.receive()
            except trio.EndOfChannel:
                return
            except BadMessage as exc:
                log.warning("bad message from the server: %s", loggable(exc))
                continue
            related: Any = None
            if isinstance(frame, OnStream):
                related, frame = frame.request_id, frame.data
            if isinstance(frame, Failed):
                if frame.request_id is None:  # the link's notification stream is gone
                    log.error("%s", loggable(frame.error))
                    for listener in self.listeners:
                        listener.send.close()
                    continue
                pending = self.requests.get(frame.request_id)
                if pending is not None:
                    pending.deliver(frame.error)
                continue
            try:
                items = decode_incoming(frame)
            except (msgspec.DecodeError, ValueError) as exc:
                log.warning("bad message from the server: %s: %.200r", loggable(exc), frame)
                continue
            for item in items:
                try:
                    self._route(item, related)
                except Exception:  # one odd message must not end the conversation
                    log.exception("could not handle a message from the server: %.200r", frame)

    def _route(self, item: Incoming, related: Any = None) -> None:
        """``related``: the request on whose response stream ``item`` arrived, if known."""
        if item.method is msgspec.UNSET:
            pending = self.requests.get(item.id)
            if pending is None:
                log.debug("a response for no waiting request id=%r (late or cancelled)", item.id)
                return
            if item.error is not msgspec.UNSET:
                pending.deliver(_Outcome(error=item.error))
            else:
                result = item.result
                pending.deliver(
                    _Outcome(result=result if isinstance(result, msgspec.Raw) else None)
                )
            return
        params: dict[str, Any] = {}
        if isinstance(item.params, msgspec.Raw):
            try:
                decoded = msgspec.json.decode(item.params)
            except msgspec.DecodeError:
                decoded = None
            if isinstance(decoded, dict):
                params = decoded
        pending = self.requests.get(related) if related is not None else None
        if item.id is not msgspec.UNSET and item.id is not None:
            answer = pending.answer if pending is not None else None
            self._nursery.start_soon(
                self._serve_request, item.id, item.method, params, answer or self._answer
            )
            return
        self._notification(Notification(str(item.method), params), pending)

    def _notification(self, note: Notification, related: Pending | None = None) -> None:
        method = note.method
        params = note.params
        if method == "notifications/progress":
            pending = self._by_token.get(str(params.get("progressToken")))
            if pending is not None and pending.progress is not None:
                try:
                    pending.progress(
                        float(params.get("progress", 0)), params.get("total"), params.get("message")
                    )
                except Exception:
                    log.exception("the progress callback of %s failed", pending.method)
            return
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            scope = self._serving.get(request_id) if isinstance(request_id, (int, str)) else None
            if scope is not None:
                scope.cancel()
            return
        if method == "notifications/message":
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

    async def _serve_request(
        self,
        request_id: Any,
        method: Any,
        params: dict[str, Any],
        answer: ServerRequestHandler,
    ) -> None:
        """Answer a server-to-client request (handshake era) with ``answer``: the handler of
        the request on whose stream it arrived (``Client.request(on_request=...)``), else
        the client's."""
        with trio.CancelScope() as scope:
            self._serving[request_id] = scope
            try:
                message = {"jsonrpc": "2.0", "id": request_id}
                if method == "ping":
                    message["result"] = {}
                else:
                    try:
                        message["result"] = await answer(str(method), params)
                    except PeerError as exc:
                        message["error"] = {"code": exc.code, "message": exc.message}
                        if exc.data is not None:
                            message["error"]["data"] = exc.data
                    except Exception:
                        log.exception("the handler for %s failed", loggable(method))
                        message["error"] = {"code": INTERNAL_ERROR, "message": "Internal error"}
                try:
                    await self.send(Outgoing(_encode(message)))
                except TransportLost as exc:
                    log.warning(
                        "could not answer the server's %s: %s", loggable(method), loggable(exc)
                    )
            finally:
                del self._serving[request_id]

    async def wait_usable(self, early: bool = False) -> None:
        """Wait until requests may be sent (``early``: the link is up, for the handshake
        itself); raise :class:`TransportLost` when the client died or closed."""
        while True:
            if self.dead is not None:
                raise self.dead.restated(str(self.dead))
            if self.closing:
                raise TransportLost("the client is closed")
            event = self.connected if early else self.ready
            if event.is_set():
                return
            await event.wait()

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
        method = str(out.method)
        request_id = out.request_id
        safe = out.repeatable
        pending = Pending(method, out, safe, progress, on_notification, on_request)
        self.requests[request_id] = pending
        token = progress_token
        if token is not None:
            self._by_token[token] = pending
        sent = False
        try:
            with trio.move_on_after(math.inf if timeout is None else timeout) as scope:
                while True:
                    await self.wait_usable(early)
                    generation = self.generation
                    if pending.generation < generation:
                        pending.generation = generation
                        try:
                            await self.send(out)
                            sent = True
                        except TransportLost:
                            if not safe:
                                raise
                            await (
                                trio.lowlevel.checkpoint()
                            )  # the maintainer notices and reconnects
                            continue
                    await pending.done.wait()
                    break
            if scope.cancelled_caught:
                link: object = self.link
                unreached = None
                if isinstance(link, ReportsUnreached):
                    unreached = link.unreached(request_id)
                if unreached is not None:
                    # The link was still retrying the connection: the server never had the
                    # request, so say why (a timeout shorter than the backoff budget, e.g.
                    # ``--timeout 2 --retry-for 30``, must not read as a silent server).
                    raise TransportLost(
                        f"{method}: {unreached} (no connection within the {timeout:g} s timeout)"
                    )
                if sent:
                    await self._cancel_remote(out, "timeout")
                raise RequestTimeout(method, float(timeout))  # type: ignore[arg-type]
        except trio.Cancelled:
            if sent and not pending.done.is_set():
                with trio.CancelScope(shield=True):
                    await self._cancel_remote(out, "cancelled by the client")
            raise
        finally:
            self.requests.pop(request_id, None)
            if token is not None:
                self._by_token.pop(token, None)
        outcome = pending.outcome
        if isinstance(outcome, ClientError):
            raise outcome
        assert outcome is not None
        if outcome.error is not None:
            raise peer_error(outcome.error)
        if outcome.result is None:
            raise BadMessage(f"{method}: a response with neither result nor error")
        return outcome.result

    async def batch(
        self, items: Sequence[tuple[Any, str, bytes]], *, modern: bool, timeout: float | None
    ) -> list[Any]:
        """Send ``items`` ((request id, method, encoded request), ...) as one JSON-RPC batch
        and wait for every answer: each item's result (decoded) or its error
        (:class:`PeerError`, or :class:`TransportLost` for one the link gave up on), in order.
        A batch is never re-sent (its items are not all safe to repeat). On timeout or
        cancellation the items still unanswered are cancelled at the server."""
        entries: list[Pending] = []
        for request_id, method, _data in items:
            pending = Pending(method, Outgoing(b"", method, request_id, modern=modern), False, None)
            pending.generation = self.generation
            self.requests[request_id] = pending
            entries.append(pending)
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
                for pending in entries:
                    await pending.done.wait()
        except trio.TooSlowError:
            await self._cancel_unanswered(entries, "timeout")
            raise RequestTimeout("batch", float(timeout or 0)) from None
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._cancel_unanswered(entries, "cancelled by the client")
            raise
        finally:
            for pending in entries:
                self.requests.pop(pending.out.request_id, None)
        results: list[Any] = []
        for pending in entries:
            outcome = pending.outcome
            if isinstance(outcome, ClientError):
                results.append(outcome)
            elif outcome is None or outcome.error is not None:
                results.append(peer_error(outcome.error if outcome else None))
            else:
                results.append(msgspec.json.decode(outcome.result) if outcome.result else None)
        return results

    async def _cancel_unanswered(self, entries: list[Pending], reason: str) -> None:
        """Tell the server to stop the items of a batch that have no answer yet."""
        for pending in entries:
            if not pending.done.is_set():
                await self._cancel_remote(pending.out, reason)

    async def _cancel_remote(self, out: Outgoing, reason: str) -> None:
        message = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": out.request_id, "reason": reason},
        }
        with trio.move_on_after(_CANCEL_SEND_TIMEOUT):
            with suppress(TransportLost):
                await self.send(
                    Outgoing(
                        _encode(message),
                        "notifications/cancelled",
                        out.request_id,
                        modern=out.modern,
                    )
                )


def peer_error(error: Any) -> PeerError:
    """A JSON-RPC error object as :class:`PeerError` (a malformed one as -32603)."""
    if not isinstance(error, dict):
        return PeerError(INTERNAL_ERROR, f"malformed error object {error!r:.100}")
    code = error.get("code")
    return PeerError(
        code if isinstance(code, int) else INTERNAL_ERROR,
        str(error.get("message", "")),
        error.get("data"),
    )
