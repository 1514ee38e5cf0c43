"""The client's request table: its own requests waiting for answers, and the server's
requests it is answering.

Plain bookkeeping with no I/O and no trio, as the server's ``RequestTable`` (``runtime.core``):
the conversation feeds it what the link delivers and wakes whoever waits; the tests drive it
directly. Waking is the one thing it does to the outside: each :class:`Pending` holds a
:class:`Waiter` (a ``trio.Event`` in the conversation) that is set once, when its outcome is
known.

Its own requests (ids out, answers in):

- :meth:`RequestTable.next_id` hands out the ids 1, 2, 3, ... (integers, which every MCP
  revision accepts: "a string or integer ID", basic/index).
- :meth:`RequestTable.open` enters a request before it is sent (an answer that arrives at
  once finds it); :meth:`RequestTable.close` takes it out whatever happened (answered,
  failed, timed out, cancelled). Only one request per id is in the table.
- :meth:`RequestTable.answer` takes a response. The first outcome of a request is the one
  it keeps: a second answer to the same id, or an answer after the link already failed it,
  changes nothing. A response for no request in the table (a late answer to a request
  that timed out or was cancelled, or an id that was never ours) is ignored: None.
- After a lost link: :meth:`RequestTable.fail_all` (the client closes or gave up),
  :meth:`RequestTable.fail_sent` (the link broke on a message too large to skip: sending
  the requests again would bring it back), :meth:`RequestTable.fail_unrepeatable` (requests
  sent that are not safe to repeat), :meth:`RequestTable.to_resend` (the repeatable ones,
  for the new link). A request not sent yet (``generation`` -1) waits for the new link.
- Progress: a request opened with a progress token gets the ``notifications/progress``
  naming it (:meth:`RequestTable.by_token`).

The server's requests (handshake era: sampling, elicitation, roots, ping), each admitted or
refused at once by :meth:`RequestTable.refusal`, with the error to answer:

- an id already being served: -32600 (JSON-RPC 2.0 section 4: ids correlate, so a second
  one could not be told apart; the server's own rule, ``duplicate_request``);
- more than ``max_server_requests`` served at once: -32010 with ``data.maxServerRequests``
  (the same error object each time);
- params nested too deeply to read: -32602.

An admitted request is served under a :class:`Cancellable` (a ``trio.CancelScope``) from
:meth:`RequestTable.enter` until :meth:`RequestTable.leave`; ``notifications/cancelled``
finds it with :meth:`RequestTable.cancel` (an unknown or finished id: None, the race with
completion is expected, basic/utilities/cancellation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final, Generic, Protocol, TypeVar

from msgspec import Raw

from ..protocol import (
    JSONRPCError,
    RequestId,
    client_overloaded,
    duplicate_request,
    id_key,
    invalid_params,
    prepare_error,
)
from ._errors import ClientError, TransportLost
from ._outgoing import Outgoing

__all__ = [
    "DEFAULT_MAX_SERVER_REQUESTS",
    "Cancellable",
    "Outcome",
    "Pending",
    "ProgressCallback",
    "RequestTable",
    "ServerRequestHandler",
    "Waiter",
]

#: Server-to-client requests served at once (``open_client(max_server_requests=)``): the
#: server's own bound on a connection's requests in flight (``Limits.max_in_flight``, 64),
#: from the other side. Sampling and elicitation wait on a model or a person, so a server
#: has few out at a time; a flood of pings is refused past it, not queued.
DEFAULT_MAX_SERVER_REQUESTS: Final = 64

#: A request's progress: ``(progress, total, message)``.
ProgressCallback = Callable[[float, float | None, str | None], Any]
#: Answers a server's request: ``(method, params) -> result``.
ServerRequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]


class Waiter(Protocol):
    """What a waiting request is woken with (``trio.Event`` has both methods)."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...


class Cancellable(Protocol):
    """What a served request runs under (``trio.CancelScope``)."""

    def cancel(self) -> None: ...


class Outcome:
    """A response: its ``result`` or its ``error`` object, raw (the caller decodes it)."""

    __slots__ = ("error", "result")

    def __init__(self, result: Raw | None = None, error: Raw | None = None) -> None:
        self.result = result
        self.error = error


class Pending:
    """One request waiting for its answer: what to send again after a reconnect (``out``,
    when ``repeatable``), the link generation it last went out on (-1: not sent yet), its
    callbacks, and its outcome once known (``done`` is set then)."""

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
        out: Outgoing,
        done: Waiter,
        *,
        progress: ProgressCallback | None = None,
        notified: Callable[[Any], Any] | None = None,
        answer: ServerRequestHandler | None = None,
    ) -> None:
        self.out = out
        self.method = str(out.method)
        self.repeatable = out.repeatable
        self.done = done
        self.progress = progress
        #: Per request: the notifications and the handler of the server's requests that
        #: arrived on its own response stream (Streamable HTTP).
        self.notified = notified
        self.answer = answer
        self.outcome: Outcome | ClientError | None = None
        self.generation = -1

    def deliver(self, outcome: Outcome | ClientError) -> bool:
        """Settle the request (the first outcome wins); True when this one did."""
        if self.done.is_set():
            return False
        self.outcome = outcome
        self.done.set()
        return True


C = TypeVar("C", bound=Cancellable)


class RequestTable(Generic[C]):
    """One client's requests (see the module docstring). ``C``: what a served request of
    the server's runs under."""

    def __init__(self, max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS) -> None:
        if isinstance(max_server_requests, bool) or not isinstance(max_server_requests, int):
            raise ValueError(
                f"max_server_requests must be an int >= 1, not {max_server_requests!r}"
            )
        if max_server_requests < 1:
            raise ValueError(f"max_server_requests must be >= 1, not {max_server_requests}")
        self._last_id = 0
        self._requests: dict[Any, Pending] = {}
        self._by_token: dict[str, Pending] = {}
        self.max_server_requests = max_server_requests
        self._serving: dict[tuple[type, RequestId], C] = {}
        #: The most server requests served at once (diagnostics and the tests).
        self.most_serving = 0
        self._overloaded = prepare_error(
            client_overloaded(
                f"{max_server_requests} server-to-client requests are being answered "
                "(max_server_requests)",
                maxServerRequests=max_server_requests,
            )
        )
        self._over_cap = False

    # -- the client's requests -------------------------------------------------------------

    def next_id(self) -> int:
        self._last_id += 1
        return self._last_id

    def open(self, pending: Pending, progress_token: str | None = None) -> None:
        """Enter ``pending`` under its id (and its progress token)."""
        self._requests[pending.out.request_id] = pending
        if progress_token is not None:
            self._by_token[progress_token] = pending

    def close(self, pending: Pending, progress_token: str | None = None) -> None:
        """Take ``pending`` out (idempotent)."""
        if self._requests.get(pending.out.request_id) is pending:
            del self._requests[pending.out.request_id]
        if progress_token is not None and self._by_token.get(progress_token) is pending:
            del self._by_token[progress_token]

    def get(self, request_id: Any) -> Pending | None:
        return self._requests.get(request_id)

    def __iter__(self) -> Iterator[Pending]:
        return iter(list(self._requests.values()))

    def __len__(self) -> int:
        return len(self._requests)

    def by_token(self, token: object) -> Pending | None:
        """The request a progress notification's token names."""
        return self._by_token.get(str(token))

    def answer(self, request_id: Any, result: Raw | None, error: Raw | None) -> Pending | None:
        """A response for ``request_id``: its request, settled with it (if still waiting);
        None when no request of that id is in the table."""
        pending = self._requests.get(request_id)
        if pending is not None:
            pending.deliver(Outcome(result=result, error=error))
        return pending

    def fail(self, request_id: Any, error: ClientError) -> None:
        """The link gave up on one request."""
        pending = self._requests.get(request_id)
        if pending is not None:
            pending.deliver(error)

    def fail_all(self, error: ClientError) -> None:
        for pending in self:
            pending.deliver(error)

    def fail_sent(self, error: ClientError) -> None:
        """Fail every request sent on a link (it answers none of them any more)."""
        for pending in self:
            if pending.generation >= 0:
                pending.deliver(error)

    def fail_unrepeatable(self, reason: str) -> None:
        """Fail the requests sent that are not safe to send again (the link was lost)."""
        for pending in self:
            if not pending.repeatable and pending.generation >= 0:
                pending.deliver(
                    TransportLost(
                        f"{pending.method}: the connection was lost before the answer "
                        f"({reason}); not re-sent, it is not safe to repeat"
                    )
                )

    def to_resend(self, generation: int) -> list[Pending]:
        """The requests to send again on link ``generation``: repeatable, still waiting,
        last sent on an older link (each marked as sent on this one)."""
        found = []
        for pending in self:
            if pending.done.is_set():
                continue  # failed with the lost link (its caller has not woken yet)
            if pending.repeatable and pending.generation < generation:
                pending.generation = generation
                found.append(pending)
        return found

    # -- the server's requests -------------------------------------------------------------

    def refusal(self, request_id: RequestId, *, params_readable: bool) -> JSONRPCError | None:
        """Why the server's request ``request_id`` is not served (its whole answer), or
        None to serve it (then :meth:`enter` it before anything else is read)."""
        key = id_key(request_id)
        if key in self._serving:
            return duplicate_request(request_id)
        if len(self._serving) >= self.max_server_requests:
            return self._overloaded
        if not params_readable:
            return invalid_params("nested too deeply")
        return None

    def over_cap(self) -> bool:
        """True for the first refusal past ``max_server_requests`` of a burst (one log line
        per burst); a burst ends when a served request leaves below the cap."""
        first = not self._over_cap
        self._over_cap = True
        return first

    def enter(self, request_id: RequestId, scope: C) -> None:
        self._serving[id_key(request_id)] = scope
        self.most_serving = max(self.most_serving, len(self._serving))

    def leave(self, request_id: RequestId, scope: C) -> None:
        key = id_key(request_id)
        if self._serving.get(key) is scope:
            del self._serving[key]
        if len(self._serving) < self.max_server_requests:
            self._over_cap = False

    def cancel(self, request_id: Any) -> C | None:
        """The scope of the served request a ``notifications/cancelled`` names (cancel it:
        no answer then), or None. Ids are strings or integers (basic/index)."""
        if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
            return None
        return self._serving.get(id_key(request_id))

    @property
    def serving(self) -> int:
        return len(self._serving)
