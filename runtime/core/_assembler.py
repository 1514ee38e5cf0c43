"""The request assembler: where a request becomes the ``RequestContext`` its handler gets.

Every request reaches its handler through :meth:`Assembler.assemble`, whoever received it: a
frame or batch item a connection's reader took (``Reader``), a request run in another task as a
connection's own (``Connection.run_request``: a POST to an HTTP session), a request answered
without a connection (``dispatch_single``: a 2026-07-28 POST). In one place it

- admits the request, when it belongs to a connection (an assembler with a request table):
  refused when the lifecycle or the table says so (``RequestTable.refusal``: ``initialize``
  inside a batch, an id already in flight, the in-flight cap),
  the refusal told to the dispatcher's observer (``Dispatcher.on_refusal``) and returned
  encoded. A lone request has nothing to collide with: its assembler has no table;
- builds its context: method, id and raw params from the envelope, the session and peer it
  runs for, whether it is a batch item, a reading of its params made already
  (``runtime.protocol.ToolCall``), whether its reply may be written as pieces, and its era when
  the transport read it (``ModernRequest``);
- sets its deadline when it runs under a scope the caller holds (a reader generation, an HTTP
  connection's): ``request_timeout`` from now, in force from the first step on, so that
  handlers may plan by it (``trio.current_effective_deadline()``). A request without such a
  scope gets one of its own, with the deadline, where it runs (``engine.run``,
  ``engine.own_scope``).

What stays with the callers is what truly differs between them: when the request enters the
request table (the reader's only once its first step suspended, since one that finishes there
has nothing to cancel; a request run whole by the caller before it starts), and how it runs
(``engine.start`` eagerly, ``engine.run_in_scope``, ``engine.run``).

It is one object per connection (and one shared by every lone request) rather than a
function so that a request pays for no argument it does not vary: the reader's first step is
the hot path (the guard's stdio_batch_item), and this one call is all that admitting and
assembling a request costs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio
from msgspec import UNSET

from ..protocol import (
    REQUEST_ID_TYPES,
    Envelope,
    JSONRPCError,
    ModernRequest,
    Refusal,
    RequestId,
    ToolCall,
    error_reply,
)
from ._context import Peer, RequestContext
from ._dispatch import Dispatcher
from ._requests import RequestTable
from ._session import Session

__all__ = ["Assembler"]


class Assembler:
    """Assembles the requests of one connection, or (``table`` None) lone requests.

    ``dispatcher``: whose ``on_refusal`` observer hears of every refusal (read at the time,
    as the dispatcher's own); ``timeout``: ``Limits.request_timeout``, set on the scope a
    request runs under when its caller holds one; ``table``: the connection's requests."""

    __slots__ = ("_dispatcher", "_table", "_timeout")

    def __init__(
        self,
        dispatcher: Dispatcher | None = None,
        timeout: float | None = None,
        table: RequestTable[Any] | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._timeout = timeout
        self._table = table

    def assemble(
        self,
        env: Envelope,
        session: Session | Callable[[], Session],
        peer: Peer,
        scope: trio.CancelScope | None = None,
        prepared: ToolCall | None = None,
        in_batch: bool = False,
        takes_pieces: bool = False,
        modern: ModernRequest | None = None,
    ) -> RequestContext | bytes:
        """The context of ``env`` (a request, as ``classify`` found it) running for
        ``session`` and ``peer``, under ``scope`` (its ``cancel_scope``, its deadline set) when
        given; or, for a request the connection's table refuses, the encoded refusal to
        answer it with (already told to the observer). Synchronous: nothing can come between
        the check and the request's start. ``session`` is what the context's ``session`` will
        be (a factory only for a lone modern request: see ``RequestContext``)."""
        request_id = env.id
        method = env.method
        if TYPE_CHECKING:
            # ``classify`` judged it a request (callers assemble nothing else). Said to mypy
            # only, as below: no test on the path every request takes (the guard's rows, the
            # refusals of benchmarks/refusal.py).
            assert isinstance(request_id, REQUEST_ID_TYPES) and isinstance(method, str)
        table = self._table
        if table is not None:
            if TYPE_CHECKING:  # (a connection's session, made with it: never a factory)
                assert isinstance(session, Session)
            refused = table.refusal(request_id, method, session.lifecycle, in_batch=in_batch)
            if refused is not None:
                # (Under overload most requests end here: nothing is built for an observer
                # nobody set.)
                dispatcher = self._dispatcher
                if dispatcher is not None and dispatcher.on_refusal is not None:
                    self.observe(refused, session, peer.connection_id, method, request_id)
                return error_reply(refused, request_id)
        params = env.params
        ctx = RequestContext(
            method,
            request_id,
            None if params is UNSET else params,
            session,
            peer,
            in_batch=in_batch,
            modern=modern,
            prepared=prepared,
            takes_pieces=takes_pieces,
        )
        if scope is not None:
            ctx.cancel_scope = scope
            timeout = self._timeout
            if timeout is not None:
                scope.deadline = trio.current_time() + timeout
        return ctx

    def observe(
        self,
        error: JSONRPCError,
        session: Session,
        connection_id: str,
        method: str | None = None,
        request_id: RequestId | None = None,
    ) -> None:
        """Tell the dispatcher's refusal observer, when it has one, that a message of
        ``session`` was answered ``error`` before dispatch (or, a malformed cancellation,
        not at all): built only when someone listens."""
        observe = None if self._dispatcher is None else self._dispatcher.on_refusal
        if observe is not None:
            observe(
                Refusal(
                    error.code,
                    error.message,
                    session.transport,
                    connection_id,
                    method,
                    request_id,
                    principal=session.principal,
                )
            )
