"""The connection supervisor: one reader, one writer, one task and cancel scope per request.

Structure (all under the nursery that ``serve`` opens, so nothing outlives the connection)::

    serve
    ├── writer            drains the bounded outgoing queue, coalescing writes
    ├── shutdown watcher  stops the reader when the server shuts down
    └── requests nursery
        ├── reader        deframes, decodes, validates, starts request tasks (never awaits them)
        └── request/batch tasks, each request in its own CancelScope

Cancellation contract: ``notifications/cancelled`` cancels that request's scope; its
``finally`` blocks run and no response is sent (MCP basic/utilities/cancellation). When
input ends (EOF) or the server shuts down, reading stops, in-flight requests get a grace
period to finish and are then cancelled; queued output is flushed before the channel closes.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
import trio
from msgspec import Raw

from ..framing import FramingError, escape_excerpt
from ._channel import MessageChannel, Outgoing
from ._context import RequestContext
from ._dispatch import Dispatcher
from ._errors import (
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    SERVER_OVERLOADED,
    JSONRPCError,
)
from ._jsonrpc import (
    Envelope,
    Kind,
    RequestId,
    classify,
    decode_frame,
    decode_item,
    encode_error,
    encode_notification,
    encode_request,
    id_key,
)
from ._limits import Limits
from ._session import Session

__all__ = ["CONNECTION_CLOSED", "Connection"]

log = logging.getLogger("mcp_runtime.connection")

#: Code used for server-to-client requests that die with their connection (as the SDKs do).
CONNECTION_CLOSED: Final = -32000
_connection_ids = itertools.count(1)


class _CancelledParams(msgspec.Struct):
    # MCP basic/utilities/cancellation: requestId is required in 2025-11-25 (optional later
    # for task cancellation, which goes elsewhere).
    requestId: int | str | float | None = None
    reason: str | None = None


_cancelled_decoder: Final = msgspec.json.Decoder(_CancelledParams)


class _InFlight:
    __slots__ = ("cancelled_by_client", "method", "scope")

    def __init__(self, scope: trio.CancelScope, method: str) -> None:
        self.scope = scope
        self.method = method
        self.cancelled_by_client = False


class _Waiter:
    __slots__ = ("error", "event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Raw | None = None
        self.error: JSONRPCError | None = None


class Connection:
    """Serves one message channel until it ends. Also the handlers' ``Peer``."""

    def __init__(
        self,
        channel: MessageChannel,
        dispatcher: Dispatcher,
        *,
        limits: Limits | None = None,
        session: Session | None = None,
        shutdown: trio.Event | None = None,
        connection_id: str | None = None,
        drain_on_eof: bool = False,
    ) -> None:
        self.channel = channel
        #: When input ends, wait for every in-flight request (each still bounded by
        #: ``limits.request_timeout``) instead of ``limits.eof_grace``: for channels whose
        #: input ends before their answers are due, like one HTTP POST.
        self.drain_on_eof = drain_on_eof
        self.dispatcher = dispatcher
        self.limits = limits or Limits()
        self.session = session or Session()
        self._shutdown = shutdown
        self._id = connection_id or f"c{next(_connection_ids)}"
        self._in_flight: dict[tuple[type, RequestId], _InFlight] = {}
        self._pending: dict[tuple[type, RequestId], _Waiter] = {}
        self._next_request_id = itertools.count(1)
        self._active = 0
        self._drained: trio.Event | None = None
        # Output: replies are appended to the outbox; whichever task finds no write in
        # progress becomes the writer and flushes everything queued (coalesced) in one write.
        # No writer task, no channel hop: a reply usually leaves in the task that made it.
        self._outbox: list[Outgoing] = []
        self._writing = False
        self._output_closed = False
        self._output_room: trio.Event | None = None
        self._connection_scope: trio.CancelScope | None = None
        self._requests: trio.Nursery | None = None
        self.close_reason = "running"

    # -- Peer -------------------------------------------------------------------------------

    @property
    def connection_id(self) -> str:
        return self._id

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def notify(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> None:
        await self._send(encode_notification(method, params), related)

    def start_soon(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        """Run ``fn()`` beside this connection's requests for the rest of the connection.

        Not a request: it holds no in-flight slot and the connection does not wait for it
        (after in-flight requests drained it is cancelled). For per-session services such
        as delivering unsolicited notifications. Only while the connection serves.
        """
        if self._requests is None:
            raise RuntimeError("the connection is not serving")
        self._requests.start_soon(fn, name=name)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float = 60.0,
        related: RequestId | None = None,
    ) -> Any:
        request_id = next(self._next_request_id)
        key = id_key(request_id)
        waiter = self._pending[key] = _Waiter()
        try:
            await self._send(encode_request(request_id, method, params), related)
            try:
                with trio.move_on_after(timeout):
                    await waiter.event.wait()
            except trio.Cancelled:
                # The asking request was cancelled: tell the client to stop working on ours
                # (MCP basic/utilities/cancellation: either side may cancel its requests).
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await self.notify(
                        "notifications/cancelled",
                        {"requestId": request_id, "reason": "cancelled"},
                        related=related,
                    )
                raise
            if not waiter.event.is_set():
                await self.notify(
                    "notifications/cancelled",
                    {"requestId": request_id, "reason": "timeout"},
                    related=related,
                )
                raise JSONRPCError(REQUEST_TIMEOUT, f"Request {method!r} timed out")
            if waiter.error is not None:
                raise waiter.error
            assert waiter.result is not None
            return msgspec.json.decode(waiter.result)
        finally:
            del self._pending[key]

    # -- supervision ------------------------------------------------------------------------

    async def serve(self) -> None:
        """Serve until input ends, the server shuts down, or the peer breaks.

        Never raises for protocol or I/O failures (they are logged with the connection id);
        only cancellation from outside propagates.
        """
        log.debug("connection open conn=%s transport=%s", self._id, self.session.transport)
        try:
            async with trio.open_nursery() as outer:
                self._connection_scope = outer.cancel_scope
                watch_scope = trio.CancelScope()
                try:
                    await self._serve_requests(outer, watch_scope)
                finally:
                    watch_scope.cancel()
                    self._fail_pending()
                    # Flush what is still queued (shielded, bounded by the write timeout).
                    if self._outbox and not self._writing:
                        await self._flush()
                    self._output_closed = True
        except Exception:
            log.exception("connection crashed conn=%s", self._id)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                await self.channel.aclose()
            log.debug("connection closed conn=%s reason=%s", self._id, self.close_reason)

    async def _serve_requests(self, outer: trio.Nursery, watch_scope: trio.CancelScope) -> None:
        async with trio.open_nursery() as requests:
            self._requests = requests
            with trio.CancelScope() as read_scope:
                if self._shutdown is not None:
                    outer.start_soon(self._watch_shutdown, self._shutdown, read_scope, watch_scope)
                await self._read_loop()
            if read_scope.cancelled_caught:
                self.close_reason = "shutdown"
            if self.close_reason == "shutdown":
                grace = self.limits.shutdown_grace
            elif self.close_reason == "eof" and self.drain_on_eof:
                grace = math.inf
            else:
                grace = self.limits.eof_grace
            if self._active:
                with trio.move_on_after(grace):
                    self._drained = trio.Event()
                    await self._drained.wait()
                if self._active:
                    log.info(
                        "cancelling requests conn=%s count=%d after grace=%ss",
                        self._id,
                        self._active,
                        grace,
                    )
            requests.cancel_scope.cancel()

    async def _watch_shutdown(
        self, shutdown: trio.Event, read_scope: trio.CancelScope, watch_scope: trio.CancelScope
    ) -> None:
        with watch_scope:
            await shutdown.wait()
            read_scope.cancel()

    def _task_done(self) -> None:
        self._active -= 1
        if self._active == 0 and self._drained is not None:
            self._drained.set()

    def _fail_pending(self) -> None:
        for waiter in self._pending.values():
            if not waiter.event.is_set():
                waiter.error = JSONRPCError(CONNECTION_CLOSED, "Connection closed")
                waiter.event.set()

    # -- output -----------------------------------------------------------------------------

    async def _send(self, data: bytes, related: RequestId | None = None) -> None:
        """Queue one message; write it now unless another task is writing already.

        Waits only while more than ``limits.write_queue_size`` messages are queued behind a
        write in progress (backpressure). Output on a closing connection is dropped.
        """
        if self._output_closed:
            log.debug("dropping output on a closing connection conn=%s", self._id)
            return
        self._outbox.append((data, related))
        if not self._writing:
            await self._flush()
            return
        while self._writing and len(self._outbox) > self.limits.write_queue_size:
            if self._output_room is None:
                self._output_room = trio.Event()
            await self._output_room.wait()

    async def _flush(self) -> None:
        """Write the outbox until it is empty. Shielded: a write cut in half would corrupt
        the stream for every later message; ``limits.write_timeout`` bounds it instead, and
        a peer that stops reading for that long loses the connection."""
        limit = self.limits.write_timeout
        self._writing = True
        try:
            while self._outbox and not self._output_closed:
                batch, self._outbox = self._outbox, []
                if self._output_room is not None:
                    self._output_room.set()
                    self._output_room = None
                # One scope does both jobs (a scope's own deadline still fires when it is
                # shielded): cheaper than a shield plus fail_after on this hot path.
                with trio.CancelScope(shield=True, deadline=trio.current_time() + limit) as scope:
                    await self.channel.send(batch)
                if scope.cancelled_caught:
                    self.close_reason = "write-timeout"
                    log.warning("closing conn=%s reason=write-timeout seconds=%s", self._id, limit)
                    self._break_output()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self.close_reason = "peer-gone"
            log.info("closing conn=%s reason=write-failed error=%r", self._id, exc)
            self._break_output()
        finally:
            self._writing = False

    def _break_output(self) -> None:
        self._output_closed = True
        self._outbox.clear()
        if self._output_room is not None:
            self._output_room.set()
            self._output_room = None
        if self._connection_scope is not None:
            self._connection_scope.cancel()

    # -- input ------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        receive = self.channel.receive
        while True:
            try:
                frame = await receive()
            except trio.EndOfChannel:
                self.close_reason = "eof"
                return
            except FramingError as exc:
                log.warning(
                    "framing error conn=%s offset=%d fatal=%s reason=%r excerpt=%s",
                    self._id,
                    exc.offset,
                    exc.fatal,
                    exc.reason,
                    escape_excerpt(exc.excerpt),
                )
                code = INVALID_REQUEST if "exceeds" in exc.reason else PARSE_ERROR
                await self._send(encode_error(None, code, f"Framing error: {exc.reason}"))
                if exc.fatal:
                    self.close_reason = "framing-error"
                    return
                continue
            except trio.TooSlowError as exc:
                self.close_reason = str(exc) or "read-timeout"
                log.warning("closing conn=%s reason=%s", self._id, self.close_reason)
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                self.close_reason = "peer-gone"
                log.info("closing conn=%s reason=read-failed error=%r", self._id, exc)
                return
            await self._on_frame(frame)

    async def _on_frame(self, frame: bytes) -> None:
        try:
            message = decode_frame(frame)
            if isinstance(message, list):
                self._active += 1
                assert self._requests is not None
                self._requests.start_soon(self._run_batch, message)
                return
            kind = classify(message)
        except JSONRPCError as exc:
            self._log_bad_message(exc, frame)
            await self._send(self._error_reply(exc))
            return
        if kind is Kind.REQUEST:
            refusal = self._admit(message)
            if refusal is not None:
                await self._send(refusal)
        elif kind is Kind.NOTIFICATION:
            await self._on_notification(message)
        else:
            self._on_response(message)

    def _log_bad_message(self, exc: JSONRPCError, data: bytes | Raw) -> None:
        log.warning(
            "bad message conn=%s code=%d reason=%r excerpt=%s",
            self._id,
            exc.code,
            exc.message,
            escape_excerpt(bytes(data)),
        )

    @staticmethod
    def _error_reply(exc: JSONRPCError) -> bytes:
        request_id = exc.data.get("id") if isinstance(exc.data, dict) else None
        data = (
            {k: v for k, v in exc.data.items() if k != "id"} if isinstance(exc.data, dict) else None
        )
        return encode_error(request_id, exc.code, exc.message, data or None)

    def _refuse(self, env: Envelope, in_batch: bool) -> bytes | None:
        """The immediate answer for a request that must not start, or None to admit it."""
        request_id = env.id
        assert isinstance(request_id, int | str | float)
        if in_batch and env.method == "initialize":
            # MCP 2025-03-26 basic/lifecycle: initialize MUST NOT be part of a batch.
            return encode_error(
                request_id, INVALID_REQUEST, "initialize must not be part of a JSON-RPC batch"
            )
        if id_key(request_id) in self._in_flight:
            return encode_error(
                request_id, INVALID_REQUEST, f"Duplicate request id {request_id!r} is in flight"
            )
        limit = self.limits.max_in_flight
        if len(self._in_flight) >= limit:
            return encode_error(
                request_id,
                SERVER_OVERLOADED,
                "Server overloaded: too many requests in flight on this connection",
                {"maxInFlight": limit},
            )
        return None

    def _register(self, env: Envelope) -> _InFlight:
        assert isinstance(env.id, int | str | float) and isinstance(env.method, str)
        timeout = self.limits.request_timeout
        scope = trio.CancelScope()
        if timeout is not None:
            scope.deadline = trio.current_time() + timeout
        entry = self._in_flight[id_key(env.id)] = _InFlight(scope, env.method)
        return entry

    def _admit(self, env: Envelope) -> bytes | None:
        refusal = self._refuse(env, in_batch=False)
        if refusal is not None:
            return refusal
        entry = self._register(env)
        self._active += 1
        assert self._requests is not None
        self._requests.start_soon(self._run_request, env, entry)
        return None

    async def _execute(self, env: Envelope, entry: _InFlight, in_batch: bool) -> bytes | None:
        """Run one admitted request; returns its response, or None when it must get none."""
        request_id = env.id
        assert isinstance(request_id, int | str | float) and isinstance(env.method, str)
        params = None if isinstance(env.params, msgspec.UnsetType) else env.params
        ctx = RequestContext(env.method, request_id, params, self.session, self, in_batch=in_batch)
        ctx.cancel_scope = entry.scope
        try:
            reply: bytes | None = None
            with entry.scope:
                reply = await self.dispatcher.dispatch(ctx)
            if entry.scope.cancelled_caught:
                if entry.cancelled_by_client:
                    return None
                log.warning(
                    "request timed out conn=%s id=%r method=%s", self._id, request_id, env.method
                )
                return encode_error(
                    request_id,
                    REQUEST_TIMEOUT,
                    "Request timed out",
                    {"timeoutSeconds": self.limits.request_timeout},
                )
            return reply
        finally:
            del self._in_flight[id_key(request_id)]

    async def _run_request(self, env: Envelope, entry: _InFlight) -> None:
        try:
            reply = await self._execute(env, entry, in_batch=False)
            if reply is not None:
                await self._send(reply, env.id)  # type: ignore[arg-type]
        finally:
            self._task_done()

    async def _run_batch(self, items: list[Raw]) -> None:
        try:
            reply = await self._batch_reply(items)
            if reply is not None:
                await self._send(reply)
        finally:
            self._task_done()

    async def _batch_reply(self, items: list[Raw]) -> bytes | None:
        """JSON-RPC 2.0 section 6, with each item isolated from its neighbours."""
        if not items:
            return encode_error(None, INVALID_REQUEST, "Invalid Request: empty batch")
        forbidden = self.dispatcher.batch_policy(self.session)
        if forbidden is not None:
            return encode_error(None, INVALID_REQUEST, forbidden)
        limit = self.limits.max_batch_size
        if len(items) > limit:
            return encode_error(
                None,
                INVALID_REQUEST,
                f"Invalid Request: batch of {len(items)} items exceeds the limit of {limit}",
                {"maxBatchSize": limit},
            )
        replies: list[bytes | None] = [None] * len(items)

        async def run_item(index: int, env: Envelope, entry: _InFlight) -> None:
            replies[index] = await self._execute(env, entry, in_batch=True)

        async with trio.open_nursery() as batch:
            for index, item in enumerate(items):
                try:
                    env = decode_item(item)
                    kind = classify(env)
                except JSONRPCError as exc:
                    self._log_bad_message(exc, item)
                    replies[index] = self._error_reply(exc)
                    continue
                if kind is Kind.REQUEST:
                    refusal = self._refuse(env, in_batch=True)
                    if refusal is not None:
                        replies[index] = refusal
                    else:
                        batch.start_soon(run_item, index, env, self._register(env))
                elif kind is Kind.NOTIFICATION:
                    await self._on_notification(env)
                else:
                    self._on_response(env)
        answered = [reply for reply in replies if reply is not None]
        if not answered:
            return None
        return b"[" + b",".join(answered) + b"]"

    async def _on_notification(self, env: Envelope) -> None:
        assert isinstance(env.method, str)
        params = None if isinstance(env.params, msgspec.UnsetType) else env.params
        if env.method == "notifications/cancelled":
            self._cancel_request(params)
        ctx = RequestContext(env.method, None, params, self.session, self)
        await self.dispatcher.dispatch_notification(ctx)

    def _cancel_request(self, params: Raw | None) -> None:
        if params is None:
            return
        try:
            cancel = _cancelled_decoder.decode(params)
        except msgspec.DecodeError:
            log.info("ignoring malformed notifications/cancelled conn=%s", self._id)
            return
        if cancel.requestId is None:
            return
        entry = self._in_flight.get(id_key(cancel.requestId))
        # MCP lifecycle: "The initialize request MUST NOT be cancelled by clients"; unknown or
        # finished ids are ignored (the race with completion is expected).
        if entry is None or entry.method == "initialize":
            return
        log.debug("cancelling conn=%s id=%r reason=%r", self._id, cancel.requestId, cancel.reason)
        entry.cancelled_by_client = True
        entry.scope.cancel()

    def _on_response(self, env: Envelope) -> None:
        if not isinstance(env.id, int | str | float):
            # JSON-RPC 2.0 section 5: a peer answers an unparseable request with id null;
            # it correlates with nothing of ours.
            log.info("dropping response without a usable id conn=%s", self._id)
            return
        waiter = self._pending.get(id_key(env.id))
        if waiter is None or waiter.event.is_set():
            log.info("dropping response to unknown request conn=%s id=%r", self._id, env.id)
            return
        if isinstance(env.error, Raw):
            waiter.error = _decode_error(env.error)
        else:
            assert isinstance(env.result, Raw)
            waiter.result = env.result
        waiter.event.set()


class _ErrorObject(msgspec.Struct):
    code: int
    message: str
    data: Any = None


def _decode_error(raw: Raw) -> JSONRPCError:
    try:
        err = msgspec.json.decode(raw, type=_ErrorObject)
    except msgspec.DecodeError:
        return JSONRPCError(INVALID_REQUEST, "Malformed error object from client")
    return JSONRPCError(err.code, err.message, err.data)
