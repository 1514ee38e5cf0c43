"""Method tables and the one place where exceptions become wire errors."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import msgspec
import trio

from ..framing import loggable
from ..protocol import (
    Envelope,
    JSONRPCError,
    Pieces,
    Refusal,
    ToolCall,
    encode_result,
    encode_result_pieces,
    error_reply,
    internal_error,
    invalid_params,
    method_not_found,
    params_error,
)
from ._context import RequestContext
from ._session import Session

__all__ = ["BatchPolicy", "Dispatcher", "Handler", "NotificationHandler", "PreRead"]

log = logging.getLogger("mcp_runtime.dispatch")
request_log = logging.getLogger("mcp_runtime.requests")

Handler = Callable[[RequestContext], Awaitable[Any]]
NotificationHandler = Callable[[RequestContext], Awaitable[None]]
#: Returns a reason when batches are not allowed for this session, else None.
BatchPolicy = Callable[[Session], "str | None"]
#: What ``Dispatcher.pre_read`` gives for a frame: a request's envelope and the reading of its
#: params; or a batch's items and, by index, the envelope and reading of those it read.
PreRead = (
    tuple[Envelope, ToolCall] | tuple[list[msgspec.Raw], Mapping[int, tuple[Envelope, ToolCall]]]
)


def _always_allow(session: Session) -> str | None:
    return None


_CONTROL_FLOW: Final = (trio.Cancelled, KeyboardInterrupt, SystemExit, GeneratorExit)


def _stops_the_task(exc: BaseException) -> bool:
    """Whether ``exc`` is cancellation or a request to stop (or a group holding one): it
    must propagate, not become a reply."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(lambda inner: isinstance(inner, _CONTROL_FLOW)) is not None
    return isinstance(exc, _CONTROL_FLOW)


class Dispatcher:
    """Routes a request to its handler and turns every outcome into response bytes.

    Subclasses (or a custom ``route``) decide per request which table applies, which is how
    the two MCP protocol eras share one connection.

    ``on_refusal``: an observer of the messages the core and the transports answer before
    routing (``runtime.protocol.Refusal``), or None (the default: nothing is built for it).
    Called synchronously where the refusal is made; it must not block.

    ``pre_read``: a reading of a whole frame over ``ONE_PASS_OVER`` bytes that the stream
    reader tries before its general decode, or None (the default). It returns the frame's
    envelope and a reading of its params for ``RequestContext.prepared`` (the envelope's
    ``params`` is the ``Raw`` that reading belongs to), or None for the general decode, which
    must then answer exactly as without it. For a batch it returns the batch's items and,
    by index, the envelope and reading of each item it read (``decode_item`` is not run on
    those). The composition root sets it: a big ``tools/call`` read in the tool's one typed
    pass, its arguments' bytes read once, alone or inside a batch.
    """

    on_refusal: Callable[[Refusal], None] | None = None
    pre_read: Callable[[bytes], PreRead | None] | None = None

    def __init__(
        self,
        requests: Mapping[str, Handler],
        notifications: Mapping[str, NotificationHandler] | None = None,
        *,
        batch_policy: BatchPolicy = _always_allow,
    ) -> None:
        self.requests = dict(requests)
        self.notifications = dict(notifications or {})
        self.batch_policy = batch_policy

    def route(self, ctx: RequestContext) -> Handler | None:
        return self.requests.get(ctx.method)

    def route_notification(self, ctx: RequestContext) -> NotificationHandler | None:
        return self.notifications.get(ctx.method)

    def decorate(self, ctx: RequestContext, result: Any) -> Any:
        """The result of a request served at the modern revision (``ctx.modern``, set by
        ``route``) as it goes on the wire. The core adds nothing; a dispatcher that chooses
        eras adds what that revision puts on every result."""
        return result

    async def dispatch(self, ctx: RequestContext) -> bytes | Pieces:
        """Run the request's handler and return the whole response: its bytes, or, for a
        caller that writes a vector (``ctx.takes_pieces``) and a result that holds
        ``runtime.protocol.Pieces``, the response as Pieces around theirs.

        Never raises for handler failures: JSONRPCError passes through as given, a
        msgspec.ValidationError becomes -32602 naming the field path, anything else becomes
        -32603 with a generic message while the detail is logged with the request id.
        Cancellation (trio.Cancelled) propagates.
        """
        request_id = ctx.id
        assert request_id is not None
        try:
            handler = self.route(ctx)
            if handler is None:
                raise method_not_found(ctx.method)
            result = await handler(ctx)
            if ctx.modern:
                result = self.decorate(ctx, result)
            try:
                return encode_result(request_id, result)
            except TypeError:
                # A type msgspec does not know: Pieces (a long text of a resources/read) are
                # spliced in; anything else raises TypeError again, a handler bug (-32603).
                return encode_result_pieces(request_id, result, vector=ctx.takes_pieces)
        except JSONRPCError as exc:
            return error_reply(exc, request_id)
        except msgspec.ValidationError as exc:
            return error_reply(params_error(exc), request_id)
        except Exception as exc:
            if isinstance(exc, RecursionError) and "deserializing" in str(exc):
                # params the envelope decoder followed but a handler's decoder, deeper in the
                # stack, could not (msgspec says "while deserializing"): the peer's input,
                # not a handler bug, so -32602 and one log line without a traceback.
                log.warning(
                    "params nested too deeply conn=%s id=%r method=%s",
                    ctx.peer.connection_id,
                    request_id,
                    loggable(ctx.method),
                )
                return error_reply(invalid_params("nested too deeply"), request_id)
            log.exception(
                "handler failed conn=%s id=%r method=%s",
                ctx.peer.connection_id,
                request_id,
                loggable(ctx.method),
            )
            return error_reply(internal_error(), request_id)
        except BaseException as exc:
            if _stops_the_task(exc):
                raise
            # Any other BaseException subclass a handler raises is a bug like any other; it
            # must not take the connection (and every request on it) down.
            log.exception(
                "handler failed conn=%s id=%r method=%s",
                ctx.peer.connection_id,
                request_id,
                loggable(ctx.method),
            )
            return error_reply(internal_error(), request_id)

    async def dispatch_notification(self, ctx: RequestContext) -> None:
        """Run a notification handler; notifications are never answered, failures are logged.

        Params its handler refuses get no answer on the wire (JSON-RPC 2.0 section 4.1) but
        are told to ``on_refusal`` when there is one (the handler's JSONRPCError, or -32602
        for params of the wrong shape). A method nobody handles is not a refusal: a peer
        may send notifications this server does not act on (progress, roots changes)."""
        handler = self.route_notification(ctx)
        if handler is None:
            log.debug(
                "unhandled notification conn=%s method=%s",
                ctx.peer.connection_id,
                loggable(ctx.method),
            )
            return
        try:
            await handler(ctx)
        except (JSONRPCError, msgspec.ValidationError) as exc:
            log.info(
                "notification refused conn=%s method=%s reason=%s",
                ctx.peer.connection_id,
                loggable(ctx.method),
                loggable(exc),
            )
            if self.on_refusal is not None:
                error = exc if isinstance(exc, JSONRPCError) else params_error(exc)
                self._refused_notification(ctx, error)
        except Exception:
            log.exception(
                "notification handler failed conn=%s method=%s",
                ctx.peer.connection_id,
                loggable(ctx.method),
            )

    def _refused_notification(self, ctx: RequestContext, error: JSONRPCError) -> None:
        observe = self.on_refusal
        assert observe is not None
        session = ctx.session
        try:
            observe(
                Refusal(
                    error.code,
                    error.message,
                    session.transport,
                    ctx.peer.connection_id,
                    ctx.method,
                    principal=session.principal,
                )
            )
        except Exception:
            log.exception("refusal observer failed")


class _Outcome(msgspec.Struct):
    error: dict[str, Any] | None = None


_outcome_decoder: Final = msgspec.json.Decoder(_Outcome)


def _outcome(reply: bytes) -> str:
    """ "ok", or "error code=N", from a whole reply this side encoded."""
    if b'"error"' not in reply:
        return "ok"
    try:
        error = _outcome_decoder.decode(reply).error
    except msgspec.DecodeError:
        return "ok"
    return f"error code={error.get('code')}" if error else "ok"


class LoggedDispatcher(Dispatcher):
    """``inner`` with one debug line per request on the ``mcp_runtime.requests`` logger:
    connection, id, method, era, duration and outcome, never arguments (``--log-level
    debug``). The composition root wraps a dispatcher in it only when that logger is at
    DEBUG, so a server that does not log requests runs none of this."""

    def __init__(self, inner: Dispatcher) -> None:
        super().__init__(inner.requests, inner.notifications, batch_policy=inner.batch_policy)
        self.inner = inner
        self.on_refusal = inner.on_refusal

    def route(self, ctx: RequestContext) -> Handler | None:
        return self.inner.route(ctx)

    def route_notification(self, ctx: RequestContext) -> NotificationHandler | None:
        return self.inner.route_notification(ctx)

    def decorate(self, ctx: RequestContext, result: Any) -> Any:
        return self.inner.decorate(ctx, result)

    async def dispatch(self, ctx: RequestContext) -> bytes | Pieces:
        started = time.perf_counter()
        outcome = "cancelled"
        try:
            reply = await self.inner.dispatch(ctx)
            outcome = "ok" if type(reply) is Pieces else _outcome(reply)  # (Pieces: a result)
            return reply
        finally:
            request_log.debug(
                "request conn=%s id=%r method=%s era=%s duration_ms=%.3f outcome=%s",
                ctx.peer.connection_id,
                ctx.id,
                loggable(ctx.method),
                "modern" if ctx.modern else "handshake",
                (time.perf_counter() - started) * 1000,
                outcome,
            )

    async def dispatch_notification(self, ctx: RequestContext) -> None:
        await self.inner.dispatch_notification(ctx)
