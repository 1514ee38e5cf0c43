"""The request engine: the one way a request runs, whoever received it.

Every request, from a stream reader, a batch, an HTTP session POST or a single modern POST,
runs through these functions, so its outcomes are the same everywhere:

- its first step runs eagerly in the caller's task (``runtime.eager``): a request that
  finishes without waiting costs no task and no cancel scope (:func:`start`);
- one that suspends goes on in the same task under the scope it started in, and the caller
  decides what else that task gave up (:func:`finish`);
- the dispatcher turns handler outcomes into replies (``Dispatcher.dispatch``); an exception
  that escapes even that is a bug below it, answered -32603 and logged with the request id
  here, so it never takes a reader (and every later request) down with it;
- a request whose scope was cancelled is answered -32001 when its ``request_timeout`` passed,
  not at all when the client cancelled it (MCP basic/utilities/cancellation), and -32000
  "Server is shutting down" when the end of its connection cut it short after the grace
  (:func:`cancelled_reply`; every accepted request gets one reply).

:func:`run` is all of it for a caller that has a task to spend (an HTTP POST's own task).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

import trio

from .. import eager
from ..framing import loggable
from ..protocol import Pieces, error_reply, internal_error, request_timeout, shutting_down
from ._context import RequestContext
from ._dispatch import Dispatcher

__all__ = ["Suspended", "cancelled_reply", "finish", "own_scope", "run", "run_in_scope", "start"]

log = logging.getLogger("mcp_runtime.connection")

Suspended = eager.Suspended


def _crashed(ctx: RequestContext) -> bytes:
    log.exception(
        "request failed conn=%s id=%r method=%s",
        ctx.peer.connection_id,
        ctx.id,
        loggable(ctx.method),
    )
    return error_reply(internal_error(), ctx.id)


def start(
    dispatcher: Dispatcher, ctx: RequestContext
) -> tuple[bytes | Pieces | None, Suspended[bytes | Pieces] | None]:
    """Run the request's first step here: ``(reply, None)`` when it finished, ``(None,
    suspended)`` when it waits (continue it in this same task with :func:`finish`)."""
    try:
        done, outcome = eager.start(dispatcher.dispatch(ctx))
    except Exception:
        return _crashed(ctx), None
    if done:
        assert isinstance(outcome, bytes | Pieces)
        return outcome, None
    assert isinstance(outcome, eager.Suspended)
    return None, outcome


async def finish(ctx: RequestContext, suspended: Suspended[bytes | Pieces]) -> bytes | Pieces:
    """The rest of a request :func:`start` left suspended, in the task that started it."""
    try:
        return await eager.finish(suspended)
    except Exception:
        return _crashed(ctx)


def cancelled_reply(ctx: RequestContext, timeout: float | None) -> bytes | None:
    """The reply for a request whose scope was cancelled: none when the client cancelled it
    (``ctx.no_reply``), -32000 when the end of its connection cut it short after the grace
    (``ctx.cut_short``), else -32001 (its ``request_timeout`` passed)."""
    if ctx.no_reply:
        return None
    if ctx.cut_short:
        return shutting_down_reply(ctx)
    log.warning(
        "request timed out conn=%s id=%r method=%s",
        ctx.peer.connection_id,
        ctx.id,
        loggable(ctx.method),
    )
    return error_reply(request_timeout(timeout), ctx.id)


def shutting_down_reply(ctx: RequestContext) -> bytes:
    """The answer for a request the end of its connection cut short after the grace period:
    every accepted request gets one reply."""
    log.info(
        "answering unfinished request conn=%s id=%r method=%s",
        ctx.peer.connection_id,
        ctx.id,
        loggable(ctx.method),
    )
    return error_reply(shutting_down(), ctx.id)


def own_scope(timeout: float | None) -> trio.CancelScope:
    """A request's own cancel scope, its ``request_timeout`` deadline given at construction:
    trio's ``deadline`` setter re-registers the deadline through a context manager, a cost
    every timed request would pay (benchmarks/README.md, "A caller's cancel scope")."""
    if timeout is None:
        return trio.CancelScope()
    return trio.CancelScope(deadline=trio.current_time() + timeout)


def run(
    dispatcher: Dispatcher, ctx: RequestContext, timeout: float | None
) -> Awaitable[bytes | Pieces | None]:
    """Run a whole request in the calling task: its reply, or None when it was cancelled by
    the client. With a ``timeout`` the request gets a scope of its own (in ``ctx.cancel_scope``)
    when the caller set none; a scope the caller set is the caller's to time (``timeout`` then
    only words the -32001 reply; :func:`own_scope` makes one with the deadline). Without
    either, cancellation comes from the caller and the dispatcher's coroutine is returned as
    it is (no frame of ours per request). Pieces only when the caller set ``ctx.takes_pieces``."""
    if timeout is None and ctx.cancel_scope is None:
        return dispatcher.dispatch(ctx)
    return _run_scoped(dispatcher, ctx, timeout)


async def run_in_scope(dispatcher: Dispatcher, ctx: RequestContext) -> bytes | Pieces:
    """Run a whole request under a scope its caller entered and set in ``ctx.cancel_scope``
    (and answers for when it is cancelled: ``trio.Cancelled`` propagates)."""
    try:
        return await dispatcher.dispatch(ctx)
    except Exception:
        return _crashed(ctx)


async def _run_scoped(
    dispatcher: Dispatcher, ctx: RequestContext, timeout: float | None
) -> bytes | Pieces | None:
    scope = ctx.cancel_scope
    if scope is None:
        scope = ctx.cancel_scope = own_scope(timeout)
    reply: bytes | Pieces | None = None
    try:
        with scope:
            reply = await dispatcher.dispatch(ctx)
    except Exception:
        reply = _crashed(ctx)
    if scope.cancelled_caught:
        return cancelled_reply(ctx, timeout)
    return reply
