"""Small pieces the feature modules share: params decoding and calling user functions."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import msgspec
import trio

from runtime._context import Context
from runtime._registry import App
from runtime._signature import Signature
from runtime.core import JSONRPCError, RequestContext

__all__ = ["call_user_function", "decode_params", "paginated"]

T = TypeVar("T")


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
) -> Any:
    """Call a registered function with validated arguments (and its Context, if it takes one).

    Async functions run in the request's own task (no thread hop); sync functions run in a
    worker thread. A cancelled request abandons a sync function's thread: Python cannot
    interrupt it, but its result is discarded and the request ends at once.
    """
    kwargs = sig.to_kwargs(args)
    if sig.context_param is not None:
        kwargs[sig.context_param] = Context(ctx, server, meta)
    if sig.is_async:
        return await fn(**kwargs)
    return await trio.to_thread.run_sync(functools.partial(fn, **kwargs), abandon_on_cancel=True)


def require(value: T | None, message: str) -> T:
    if value is None:
        raise JSONRPCError.invalid_params(message)
    return value


def paginated(server: App, key: str, defs: Iterable[Any], cursor: str | None) -> dict[str, Any]:
    """A list result: one page of the definitions' wire forms, plus ``nextCursor``."""
    page, next_cursor = server.cursors.page(key, list(defs), cursor)
    result: dict[str, Any] = {key: [item.listing for item in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result
