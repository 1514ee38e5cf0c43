"""Small pieces the feature modules share: params decoding and calling user functions."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import msgspec

from runtime import Context
from runtime.core import RequestContext
from runtime.features import (
    App,
    InputRequired,
    InputRound,
    Signature,
    TaskRecord,
    params_digest,
    principal_key,
)
from runtime.framing import loggable
from runtime.protocol import params_error

__all__ = [
    "InputFields",
    "call_user_function",
    "call_with_input",
    "decode_params",
    "input_required",
    "paginated",
    "request_meta",
]


class InputFields(msgspec.Struct, kw_only=True):
    """The retry fields of a multi round-trip request (2026-07-28 InputResponseRequestParams)."""

    input_responses: dict[str, Any] | None = msgspec.field(default=None, name="inputResponses")
    request_state: str | None = msgspec.field(default=None, name="requestState")


log = logging.getLogger("mcp_runtime.input")


async def call_with_input(
    server: App,
    ctx: RequestContext,
    fn: Callable[..., Any],
    sig: Signature,
    args: msgspec.Struct,
    meta: dict[str, Any] | None,
    fields: InputFields,
    salient: Callable[[], Any],
    defer_task: bool = False,
) -> tuple[bool, Any]:
    """Call a user function that may ask for input; returns ``(input_required, value)``.

    Modern era: earlier answers come back from the sealed ``requestState`` (verified against
    this method and a digest of ``salient()``, the request's identifying parameters, made only
    when needed) and
    ``inputResponses``; an :class:`InputRequired` from the function becomes the
    ``input_required`` result with freshly sealed state. Handshake era: a plain call.
    """
    if not ctx.modern:
        return False, await call_user_function(server, ctx, fn, sig, args, meta)
    responses: dict[str, Any] = {}
    data: dict[str, Any] = {}
    digest: str | None = None
    keys: list[str] = []
    answers = fields.input_responses
    if fields.request_state is not None:
        digest = params_digest(salient())
        who = principal_key(ctx.session.principal)
        sealed = server.state_sealer.open(fields.request_state, ctx.method, digest, who)
        responses.update(sealed.responses)
        data = sealed.data
        keys = sealed.keys
        if answers:
            # Only what this state asked counts (a resent earlier answer is the same answer).
            unasked = sorted(key for key in answers if key not in sealed.asked)
            if unasked:
                log.info(
                    "ignoring inputResponses never asked id=%r keys=%s",
                    ctx.id,
                    loggable(",".join(unasked)),
                )
                answers = {key: value for key, value in answers.items() if key in sealed.asked}
    # Without requestState, answers count only for the keys the handler asks: a key the
    # runtime made up is random (``InputRound.next_key``), so it cannot be answered before it
    # is asked and no round can be skipped; a key the tool's author chose
    # (``key="user_name"``) may be answered up front, as SEP-2322's clients do. Everything
    # else is ignored and what is missing is asked again (SEP-2322: servers ignore
    # unrecognized information and re-request missing input; they do not refuse it).
    if answers:
        responses.update(answers)
    round = InputRound(responses, data, keys)
    try:
        return False, await call_user_function(
            server, ctx, fn, sig, args, meta, round, defer_task=defer_task
        )
    except InputRequired as exc:
        return True, input_required(
            server, ctx, exc, responses, digest, salient, round.state, round.keys
        )


def input_required(
    server: App,
    ctx: RequestContext,
    exc: InputRequired,
    responses: dict[str, Any],
    digest: str | None,
    salient: Callable[[], Any],
    data: dict[str, Any] | None = None,
    keys: list[str] | None = None,
) -> dict[str, Any]:
    """The ``input_required`` result for a modern request whose handler raised ``exc``:
    its input requests and a freshly sealed ``requestState`` holding ``responses``, the
    handler's ``data`` (``Context.request_state``), the keys asked and the unkeyed asks'
    ``keys``."""
    digest = digest or params_digest(salient())
    who = principal_key(ctx.session.principal)
    state = server.state_sealer.seal(
        ctx.method, digest, responses, who, data, asked=exc.requests, keys=keys or ()
    )
    return {"resultType": "input_required", "inputRequests": exc.requests, "requestState": state}


T = TypeVar("T")

_meta_decoder: msgspec.json.Decoder[dict[str, Any] | None] = msgspec.json.Decoder(
    dict[str, Any] | None
)


def request_meta(
    ctx: RequestContext, raw: msgspec.Raw | msgspec.UnsetType
) -> dict[str, Any] | None:
    """A request's ``params._meta`` (``raw``, as its params struct kept it). A modern
    request's was decoded already by era selection (``ctx.meta``); a handshake-era one is
    decoded here, once, only when present. Not an object: -32602 at ``params._meta``."""
    if ctx.modern:
        return ctx.meta
    if raw is msgspec.UNSET:
        return None
    try:
        return _meta_decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise params_error(exc, "params._meta") from None


def decode_params(ctx: RequestContext, decoder: msgspec.json.Decoder[T], empty: bytes) -> T:
    """Decode ``params`` with a precompiled decoder; absent params decode from ``empty``.

    A ValidationError propagates: the dispatcher turns it into -32602 naming the field.
    """
    raw = ctx.params
    return decoder.decode(empty if raw is None else raw)


async def call_user_function(
    server: App,
    ctx: RequestContext,
    fn: Callable[..., Any],
    sig: Signature,
    args: msgspec.Struct,
    meta: dict[str, Any] | None,
    round: InputRound | None = None,
    task: TaskRecord | None = None,
    defer_task: bool = False,
) -> Any:
    """Call a registered function with validated arguments (and its Context, if it takes one);
    see ``Signature.call`` for threads and cancellation."""
    kwargs = sig.to_kwargs(args)
    threads, owner = server.worker_threads, ctx.peer.connection_id
    if sig.context_param is None:
        return await sig.call(fn, kwargs, threads, owner)
    context = kwargs[sig.context_param] = Context(ctx, server, meta, round, task, defer_task)
    try:
        return await sig.call(fn, kwargs, threads, owner)
    finally:
        context.close()


def paginated(server: App, key: str, defs: Iterable[Any], cursor: str | None) -> dict[str, Any]:
    """A list result: one page of the definitions' wire forms, plus ``nextCursor``."""
    page, next_cursor = server.cursors.page(key, list(defs), cursor)
    result: dict[str, Any] = {key: [item.listing for item in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
