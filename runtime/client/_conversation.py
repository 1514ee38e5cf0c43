"""One client's conversation with its server: the link, the request table, the routing.

Task tree (in the nursery ``open_client`` opens)::

    open_client nursery
    ├── Conversation.maintain   opens the link (and re-opens it after a loss, with backoff),
    │   └── reads it            routes responses to waiting requests, notifications to
    │                           listeners and callbacks, server requests to handler tasks
    ├── one task per server-to-client request (sampling, elicitation, roots, ping), at
    │   most ``max_server_requests`` at once
    ├── Conversation._resume    after a reconnect: the client's step (a new handshake-era
    │                           session), then re-send the requests safe to repeat
    └── (HTTP link) its POST and GET tasks

A request waits in its caller's task: it registers in the request table, sends, and waits
for its outcome under its own timeout. Cancelling the caller (or the timeout) sends
``notifications/cancelled`` (MCP 2025-11-25 basic/utilities/cancellation; over 2026-07-28
HTTP the link closes the POST's response stream instead, which is how that revision cancels).
This object knows JSON-RPC and links; the MCP surface and the eras are :class:`Client`'s.

What the server sends is read by the server's own rules (``_wire.decode_incoming``), and
nothing it sends ends the conversation:

- A message that cannot be read (not JSON, nested deeper than the decoder follows, not
  JSON-RPC 2.0, over the size cap) is logged and dropped, and the answer that follows it
  still arrives. Which request it answered cannot be told (its id is inside what could not
  be read), so a request that then times out says what was dropped meanwhile
  (``RequestTimeout.dropped``). Over HTTP each answer comes on its request's own response,
  so there such an answer fails its request with :class:`BadMessage` (``_streamable``).
- A server-to-client request is admitted, or refused at once by the reader with a JSON-RPC
  error (the reader waits for that answer to go out: a flood is slowed to the pace at which
  the server takes the answers, and nothing queues): an id already being served
  (JSON-RPC 2.0 section 4: ids correlate, so a duplicate could not be told apart; the
  server's own -32600 "Duplicate request id"), more than ``max_server_requests`` served at
  once (-32010, ``data.maxServerRequests``), params nested too deeply (-32602).
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
from ._link import Failed, Link, MessageTooLarge, OnStream, Outgoing, ReportsUnreached
from ._wire import (
    INTERNAL_ERROR,
    META_SUBSCRIPTION_ID,
    SERVER_OVERLOADED,
    Envelope,
    JSONRPCError,
    Unreadable,
    decode_incoming,
    decode_value,
    escape_excerpt,
    id_key,
    invalid_params,
    invalid_request,
    loggable,
)

__all__ = [
    "DEFAULT_MAX_SERVER_REQUESTS",
    "RAISED",
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
#: A log record attribute, True on the record of a failure that is also raised to the
#: requests waiting on it (``logging.LogRecord``; ``extra={RAISED: True}``).
RAISED = "mcp_runtime_raised"

ProgressCallback = Callable[[float, float | None, str | None], Any]
#: Per request: the server's notifications that arrived on that request's response stream.
NotificationCallback = Callable[["Notification"], Any]
#: Per request: answers the server's requests that arrived on that request's response stream.
ServerRequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
_CANCEL_SEND_TIMEOUT: Final = 2.0
#: Server-to-client requests served at once (``open_client(max_server_requests=)``): the
#: server's own bound on a connection's requests in flight (``Limits.max_in_flight``, 64),
#: from the other side. Sampling and elicitation wait on a model or a person, so a server
#: has few out at a time; a flood of pings is refused past it, not queued.
DEFAULT_MAX_SERVER_REQUESTS: Final = 64
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
    #: The error object as sent (decoded when the caller takes it).
    error: msgspec.Raw | None = None


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
        max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
    ) -> None:
        if isinstance(max_server_requests, bool) or not isinstance(max_server_requests, int):
            raise ValueError(
                f"max_server_requests must be an int >= 1, not {max_server_requests!r}"
            )
        if max_server_requests < 1:
            raise ValueError(f"max_server_requests must be >= 1, not {max_server_requests}")
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
        #: The server's requests being served, by ``id_key`` of their id.
        self._serving: dict[tuple[type, Any], trio.CancelScope] = {}
        self.max_server_requests = max_server_requests
        #: The most server requests served at once (diagnostics and the tests).
        self.most_serving = 0
        self._overloaded = JSONRPCError(
            SERVER_OVERLOADED,
            f"Client overloaded: {max_server_requests} server-to-client requests are being "
            "answered (max_server_requests)",
            {"maxServerRequests": max_server_requests},
        )
        #: Whether the refusals of the current burst past ``max_server_requests`` were logged.
        self._overload_logged = False
        #: (when, why) of the last message dropped unread that named no request.
        self._dropped: tuple[float, str] | None = None
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
                too_large = isinstance(exc, MessageTooLarge)
                if not started and (not self.connector.reconnects or exc.refused):
                    raise
            if self.closing:
                self._fail_all(TransportLost("the client is closed"))
                return
            if too_large:
                self._fail_sent(BadMessage(reason))
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
        # Also raised to every waiting request: RAISED lets a program that reports those
        # (the CLI) leave this record out rather than say the same thing twice.
        log.error("%s", loggable(error), extra={RAISED: True})
        self.dead = error
        self._fail_all(error)
        self.connected.set()  # wake waiters: they find _dead
        self.ready.set()

    def _fail_all(self, error: ClientError) -> None:
        for pending in list(self.requests.values()):
            pending.deliver(error)
        for listener in self.listeners:
            listener.send.close()

    def _fail_sent(self, error: ClientError) -> None:
        """Fail every request sent on a link (it answers none of them any more)."""
        for pending in list(self.requests.values()):
            if pending.generation >= 0:
                pending.deliver(error)

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
                if pending.done.is_set():
                    continue  # failed with the lost link (its caller has not woken yet)
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
                    for listener in self.listeners:
                        listener.send.close()
                    continue
                pending = self.requests.get(frame.request_id)
                if pending is not None:
                    pending.deliver(frame.error)
                continue
            for item in decode_incoming(frame):
                if isinstance(item, Unreadable):
                    self._unreadable(item, frame)
                    continue
                try:
                    await self._route(item, related)
                except Exception:  # one odd message must not end the conversation
                    log.exception(
                        "could not handle a message from the server: %s", escape_excerpt(frame)
                    )

    def _unreadable(self, item: Unreadable, frame: bytes) -> None:
        log.warning(
            "bad message from the server: %s: %s", loggable(item.reason), escape_excerpt(frame)
        )
        self._dropped = (trio.current_time(), item.reason)

    async def _route(self, item: Envelope, related: Any = None) -> None:
        """``related``: the request on whose response stream ``item`` arrived, if known."""
        if item.method is msgspec.UNSET:  # a response (``classify``: it has an id)
            pending = self.requests.get(item.id)
            if pending is None:
                log.debug("a response for no waiting request id=%r (late or cancelled)", item.id)
                return
            if isinstance(item.error, msgspec.Raw):
                pending.deliver(_Outcome(error=item.error))
            else:
                result = item.result
                pending.deliver(
                    _Outcome(result=result if isinstance(result, msgspec.Raw) else None)
                )
            return
        pending = self.requests.get(related) if related is not None else None
        params = _params(item.params)
        if item.id is msgspec.UNSET:
            if params is None:
                log.warning(
                    "dropped the server's %s: its params are nested too deeply",
                    loggable(item.method),
                )
                return
            self._notification(Notification(str(item.method), params), pending)
            return
        await self._admit(item, params, pending)

    async def _admit(
        self, item: Envelope, params: dict[str, Any] | None, related: Pending | None
    ) -> None:
        """Serve the server's request ``item`` in a task of its own, or refuse it at once."""
        request_id = item.id
        method = str(item.method)
        key = id_key(request_id)  # type: ignore[arg-type]  # (``classify``: an id, not null)
        refusal: JSONRPCError | None = None
        if key in self._serving:
            refusal = invalid_request(f"Duplicate request id {request_id!r} is in flight")
        elif len(self._serving) >= self.max_server_requests:
            refusal = self._overloaded
            if not self._overload_logged:
                self._overload_logged = True
                log.warning(
                    "the server sent more than %d requests at once (max_server_requests): "
                    "refusing the excess with %d",
                    self.max_server_requests,
                    SERVER_OVERLOADED,
                )
        elif params is None:
            refusal = invalid_params("nested too deeply")
        if refusal is not None:
            log.debug(
                "refused the server's %s id=%r: %s", loggable(method), request_id, refusal.message
            )
            error: dict[str, Any] = {"code": refusal.code, "message": refusal.message}
            if refusal.data is not None:
                error["data"] = refusal.data
            await self._send_answer({"jsonrpc": "2.0", "id": request_id, "error": error}, method)
            return
        assert params is not None
        scope = trio.CancelScope()
        # Registered before the task starts: a duplicate in the same read is refused too.
        self._serving[key] = scope
        self.most_serving = max(self.most_serving, len(self._serving))
        answer = related.answer if related is not None else None
        self._nursery.start_soon(
            self._serve_request, key, scope, request_id, method, params, answer or self._answer
        )

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
            scope = (
                self._serving.get(id_key(request_id))
                if isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
                else None
            )
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
        key: tuple[type, Any],
        scope: trio.CancelScope,
        request_id: Any,
        method: str,
        params: dict[str, Any],
        answer: ServerRequestHandler,
    ) -> None:
        """Answer a server-to-client request (handshake era) with ``answer``: the handler of
        the request on whose stream it arrived (``Client.request(on_request=...)``), else
        the client's. ``scope`` is what ``notifications/cancelled`` cancels (no answer then)."""
        with scope:
            try:
                message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
                if method == "ping":
                    message["result"] = {}
                else:
                    try:
                        message["result"] = await answer(method, params)
                    except PeerError as exc:
                        message["error"] = {"code": exc.code, "message": exc.message}
                        if exc.data is not None:
                            message["error"]["data"] = exc.data
                    except Exception:
                        log.exception("the handler for %s failed", loggable(method))
                        message["error"] = {"code": INTERNAL_ERROR, "message": "Internal error"}
                await self._send_answer(message, method)
            finally:
                if self._serving.get(key) is scope:
                    del self._serving[key]
                if len(self._serving) < self.max_server_requests:
                    self._overload_logged = False

    async def _send_answer(self, message: dict[str, Any], method: str) -> None:
        try:
            data = _encode(message)
        except (TypeError, ValueError):  # msgspec.EncodeError is a ValueError
            log.exception("the answer to the server's %s is not JSON", loggable(method))
            message.pop("result", None)
            message["error"] = {"code": INTERNAL_ERROR, "message": "Internal error"}
            data = _encode(message)
        try:
            await self.send(Outgoing(data))
        except ClientError as exc:  # the link is gone, or (HTTP) the server refused the POST
            log.warning("could not answer the server's %s: %s", loggable(method), loggable(exc))

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
        sent_at = math.inf
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
                            sent_at = min(sent_at, trio.current_time())
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
                dropped = self._dropped
                raise RequestTimeout(
                    method,
                    float(timeout),  # type: ignore[arg-type]
                    dropped=dropped[1] if dropped is not None and dropped[0] >= sent_at else None,
                )
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
            raise peer_error(decode_value(outcome.error, f"{method}: the error"))
        if outcome.result is None:
            raise BadMessage(f"{method}: a response with neither result nor error")
        return outcome.result

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
            try:
                if isinstance(outcome, ClientError):
                    results.append(outcome)
                elif outcome is None or outcome.error is not None:
                    error = outcome.error if outcome else None
                    what = f"{pending.method}: the error"
                    results.append(peer_error(decode_value(error, what) if error else None))
                else:
                    result = outcome.result
                    what = f"{pending.method}: the result"
                    results.append(decode_value(result, what) if result else None)
            except BadMessage as exc:
                results.append(exc)
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


def _params(params: msgspec.Raw | msgspec.UnsetType) -> dict[str, Any] | None:
    """A server message's params as a dict ({} for none, or for an array); None when they
    are nested deeper than the decoder follows (the envelope was read with less of the
    stack in use, so the depth is checked again)."""
    if not isinstance(params, msgspec.Raw):
        return {}
    try:
        decoded = decode_value(params, "params")
    except BadMessage:
        return None
    return decoded if isinstance(decoded, dict) else {}
