"""The request table of one connection: what is in flight, what may start, what to cancel.

Plain bookkeeping with no I/O and no trio (the connection drives it, as h11's driver drives
its state machine): tests feed it requests, cancellations and answers and read the result.

- Admission (``refusal``): a request that must not start is answered at once, without a
  task: ``initialize`` inside a batch and other lifecycle rules (``Lifecycle.admit``), an id
  already in flight (JSON-RPC 2.0 section 4: ids correlate, so a duplicate could not be
  told apart), or the in-flight cap (``Limits.max_in_flight``, -32010 with ``maxInFlight``).
  Ids are judged here unless the transport judges them itself (``judges_ids``: an HTTP
  session refuses a POST whose id another POST still waits for, a longer span than this
  table sees), so that each request is judged once.
- In flight: only requests that suspended are entered (those that finish in their first step
  never reach a checkpoint, so nothing could cancel them).
- Cancellation (``cancel``): ``notifications/cancelled`` names a request; unknown or finished
  ids are ignored (the race with completion is expected, basic/utilities/cancellation), and
  so is ``initialize`` ("MUST NOT be cancelled").
- The server's own requests to the client (``expect``/``answered``), keyed like requests.
- Activity: suspended requests and batches count toward the drain on shutdown or EOF.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from msgspec import Raw

from ..protocol import (
    REQUEST_ID_TYPES,
    Envelope,
    JSONRPCError,
    Lifecycle,
    RequestId,
    ToolCall,
    cancelled_id,
    duplicate_request,
    id_key,
    overloaded,
    prepare_error,
)
from ._context import RequestContext

__all__ = ["Batch", "RequestTable"]

W = TypeVar("W")


class Batch:
    """A JSON-RPC batch whose items may finish in different tasks; the last one replies."""

    __slots__ = ("counted", "items", "read", "replies", "unfinished")

    def __init__(
        self,
        items: list[Raw],
        read: Mapping[int, tuple[Envelope, ToolCall | None]] | None = None,
    ) -> None:
        self.items = items
        #: Items read already, by index (``Dispatcher.pre_read``, or every item of a batch
        #: its transport read: ``runtime.protocol.DecodedFrame``): their envelope and the
        #: reading of their params, for ``ctx.prepared``.
        self.read = read
        self.replies: list[bytes | None] = [None] * len(items)
        #: Suspended items still running, plus one held by the walk over the items until
        #: every item has been started (by whichever reader generation is walking).
        self.unfinished = 1
        #: Counted as active (from the first item that suspended).
        self.counted = False

    def item_done(self) -> bool:
        """One suspended item (or the walk) finished; True when it was the last."""
        self.unfinished -= 1
        return self.unfinished == 0

    def reply(self) -> bytes | None:
        """JSON-RPC 2.0 section 6: the answers in item order; none at all for notifications."""
        answered = [reply for reply in self.replies if reply is not None]
        return b"[" + b",".join(answered) + b"]" if answered else None


@functools.lru_cache(maxsize=16)
def _overloaded(max_in_flight: int) -> JSONRPCError:
    """Built once per cap, shared by every connection (each idle session would hold its
    own): a full table refuses every request with the same error (only the id differs),
    which under overload is most of what the connection does. Returned, never raised, so it
    is never changed."""
    return prepare_error(
        overloaded("too many requests in flight on this connection", maxInFlight=max_in_flight)
    )


class RequestTable(Generic[W]):
    """One connection's requests (``W``: how the driver waits for an answer to its own)."""

    __slots__ = (
        "_in_flight",
        "_judges_ids",
        "_next_id",
        "_overloaded",
        "_pending",
        "active",
        "max_in_flight",
    )

    def __init__(self, max_in_flight: int, first_id: int = 1, *, judges_ids: bool = True) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        #: False: the transport refuses duplicate ids itself (see the module docstring).
        self._judges_ids = judges_ids
        self._overloaded = _overloaded(max_in_flight)
        self._in_flight: dict[tuple[type, RequestId], RequestContext] = {}
        self._pending: dict[tuple[type, RequestId], W] = {}
        self._next_id = first_id - 1
        #: Suspended requests and batches: what a drain waits for.
        self.active = 0

    def __len__(self) -> int:
        """Requests in flight (suspended and not finished)."""
        return len(self._in_flight)

    # -- incoming requests ------------------------------------------------------------------

    def refusal(
        self, request_id: RequestId, method: str, lifecycle: Lifecycle, *, in_batch: bool
    ) -> JSONRPCError | None:
        """Why this request must not start (its whole answer), or None to admit it."""
        refused = lifecycle.admit(method, in_batch=in_batch)
        if refused is not None:
            return refused
        in_flight = self._in_flight
        if in_flight:  # (nothing in flight, the usual case: no duplicate, room for one)
            if self._judges_ids and id_key(request_id) in in_flight:
                return duplicate_request(request_id)
            if len(in_flight) >= self.max_in_flight:
                return self._overloaded
        return None

    def enter(self, ctx: RequestContext) -> None:
        """``ctx`` suspended: it is in flight until :meth:`leave`."""
        assert ctx.id is not None
        self._in_flight[id_key(ctx.id)] = ctx

    def leave(self, ctx: RequestContext) -> None:
        assert ctx.id is not None
        key = id_key(ctx.id)
        held = self._in_flight.pop(key)
        if held is not ctx and not self._judges_ids:
            # The transport judges ids, and gave this one to a new request already (one
            # its client cancelled is released there before it has unwound here).
            self._in_flight[key] = held

    def cancel(self, params: Raw | None, lifecycle: Lifecycle) -> RequestContext | None:
        """The request a ``notifications/cancelled`` names, marked to get no reply (its scope
        is the caller's to cancel); None when there is nothing to cancel."""
        request_id = cancelled_id(params)  # (-32600 when malformed)
        if request_id is None:
            return None
        ctx = self._in_flight.get(id_key(request_id))
        if ctx is None or not lifecycle.may_cancel(ctx.method):
            return None
        ctx.no_reply = True
        return ctx

    def in_flight(self) -> list[RequestContext]:
        return list(self._in_flight.values())

    # -- the server's own requests ----------------------------------------------------------

    def expect(self, waiter: W) -> int:
        """A fresh id for a request to the client; its answer goes to ``waiter``."""
        self._next_id += 1
        self._pending[id_key(self._next_id)] = waiter
        return self._next_id

    def answered(self, request_id: Any) -> W | None:
        """The waiter of the request a response answers (None: unknown, or not an id)."""
        if not isinstance(request_id, REQUEST_ID_TYPES):
            return None
        return self._pending.get(id_key(request_id))

    def forget(self, request_id: int) -> None:
        del self._pending[id_key(request_id)]

    def waiting(self) -> list[W]:
        return list(self._pending.values())

    # -- activity ---------------------------------------------------------------------------

    def started(self) -> None:
        self.active += 1

    def finished(self) -> bool:
        """One suspended request or batch finished; True when none is left."""
        self.active -= 1
        return self.active == 0
