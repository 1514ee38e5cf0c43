"""The server's own requests to the client (sampling, elicitation, roots, ping).

Each request gets a fresh id from the connection's request table (``RequestTable.expect``:
ids a replica shares with no other copy of its session, see ``Session.first_request_id``),
is written through the outbox like any other message, and waits for the client's response:

- the response is matched by its id (``answer``); one that matches no request of ours (an
  unknown id, or id null: JSON-RPC 2.0 section 5, a peer's answer to a request it could not
  parse) is logged and dropped;
- an error response is raised as that ``JSONRPCError``; a malformed error object as -32600;
- no response within ``timeout``: the client is told to stop (``notifications/cancelled``,
  reason "timeout") and -32001 is raised; the asking request cancelled meanwhile: the client
  is told to stop too (MCP basic/utilities/cancellation: either side may cancel its
  requests), and the cancellation propagates;
- the connection ends: every request still waiting fails with "connection closed"
  (``fail_all``).
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec
import trio
from msgspec import Raw

from ..protocol import (
    CANCELLED,
    Envelope,
    JSONRPCError,
    RequestId,
    connection_closed,
    encode_notification,
    encode_request,
    malformed_error_object,
    peer_timeout,
    relayed_error,
)
from ._outbox import Outbox
from ._requests import RequestTable

__all__ = ["ServerRequests", "Waiter"]

log = logging.getLogger("mcp_runtime.connection")


class Waiter:
    """A request of ours to the client, waiting for its answer."""

    __slots__ = ("error", "event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Raw | None = None
        self.error: JSONRPCError | None = None


class _ErrorObject(msgspec.Struct):
    code: int
    message: str
    data: Any = None


_error_decoder: Final = msgspec.json.Decoder(_ErrorObject)


class ServerRequests:
    """One connection's requests to its client: sent through ``outbox``, their ids and
    waiters kept in ``table``."""

    __slots__ = ("_id", "_out", "_table")

    def __init__(self, outbox: Outbox, table: RequestTable[Waiter], connection_id: str) -> None:
        self._out = outbox
        self._table = table
        self._id = connection_id

    async def request(
        self, method: str, params: Any, *, timeout: float, related: RequestId | None
    ) -> Any:
        """Send a request and wait for its result (see the module's docstring)."""
        waiter = Waiter()
        request_id = self._table.expect(waiter)
        try:
            await self._out.send(encode_request(request_id, method, params), related)
            try:
                with trio.move_on_after(timeout):
                    await waiter.event.wait()
            except trio.Cancelled:
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await self._cancel(request_id, "cancelled", related)
                raise
            if not waiter.event.is_set():
                await self._cancel(request_id, "timeout", related)
                raise peer_timeout(method)
            if waiter.error is not None:
                raise waiter.error
            assert waiter.result is not None
            return msgspec.json.decode(waiter.result)
        finally:
            self._table.forget(request_id)

    async def _cancel(self, request_id: int, reason: str, related: RequestId | None) -> None:
        params = {"requestId": request_id, "reason": reason}
        await self._out.send(encode_notification(CANCELLED, params), related)

    def answer(self, env: Envelope) -> None:
        """The client's response ``env`` (a result or an error) to one of our requests."""
        waiter = self._table.answered(env.id)
        if waiter is None or waiter.event.is_set():
            log.info("dropping response to unknown request conn=%s id=%r", self._id, env.id)
            return
        if isinstance(env.error, Raw):
            try:
                err = _error_decoder.decode(env.error)
                waiter.error = relayed_error(err.code, err.message, err.data)
            except (msgspec.DecodeError, RecursionError):  # (too deeply nested is malformed)
                waiter.error = malformed_error_object("client")
        else:
            assert isinstance(env.result, Raw)
            waiter.result = env.result
        waiter.event.set()

    def fail_all(self) -> None:
        """The connection ended: every request still waiting fails with "connection closed"."""
        for waiter in self._table.waiting():
            if not waiter.event.is_set():
                waiter.error = connection_closed()
                waiter.event.set()
