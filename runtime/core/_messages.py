"""Incoming messages: what the connection does with each message the reader decoded.

Requests are admitted or refused here (``_refuse``: a refusal is the whole answer, so it
costs no task); notifications go to the dispatcher, and ``notifications/cancelled`` first
cancels the scope of the request it names; responses complete the server's own requests
(``Connection.request``). The reader, and ``run_request`` beside it, call in here; kept
apart from supervision in ``_connection``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import Raw

from ._context import RequestContext
from ._errors import INVALID_REQUEST, SERVER_OVERLOADED, JSONRPCError
from ._jsonrpc import REQUEST_ID_TYPES, Envelope, RequestId, encode_error, id_key
from ._runner import ConnectionParts

if TYPE_CHECKING:
    from ._connection import _Waiter

__all__ = ["IncomingMessages"]

log = logging.getLogger("mcp_runtime.connection")


class _CancelledParams(msgspec.Struct):
    # MCP basic/utilities/cancellation: requestId is required in 2025-11-25 (optional later
    # for task cancellation, which goes elsewhere).
    requestId: int | str | float | None = None
    reason: str | None = None


_cancelled_decoder: Final = msgspec.json.Decoder(_CancelledParams)


class IncomingMessages(ConnectionParts):
    """Admission, notifications and responses for
    :class:`~runtime.core._connection.Connection` (a mixin)."""

    if TYPE_CHECKING:  # provided by Connection
        _pending: dict[tuple[type, RequestId], _Waiter]

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
        assert isinstance(request_id, REQUEST_ID_TYPES)
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

    async def _on_notification(self, env: Envelope) -> None:
        assert isinstance(env.method, str)
        params = None if isinstance(env.params, msgspec.UnsetType) else env.params
        if env.method == "notifications/cancelled":
            self._cancel_request(params)
        ctx = RequestContext(env.method, None, params, self.session, self._peer)
        await self.dispatcher.dispatch_notification(ctx)

    def _cancel_request(self, params: Raw | None) -> None:
        if params is None:
            return
        try:
            cancel = _cancelled_decoder.decode(params)
        except (msgspec.DecodeError, RecursionError):  # nesting: issue 16
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
        if not isinstance(env.id, REQUEST_ID_TYPES):
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
    except (msgspec.DecodeError, RecursionError):
        return JSONRPCError(INVALID_REQUEST, "Malformed error object from client")
    return JSONRPCError(err.code, err.message, err.data)
