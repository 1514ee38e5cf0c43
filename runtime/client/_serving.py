"""Serving the server's requests (handshake era: sampling, elicitation, roots, ping).

Each request the server sends is admitted or refused at once, in the reading task, by the
request table (``RequestTable.refusal``: a duplicate id, past ``max_server_requests``,
params nested too deeply). A refusal is answered before the next message is read: the
reader waits for that answer to go out, so a flood is slowed to the pace at which the
server takes the answers, and nothing queues. An admitted request runs in a task of its own
under a cancel scope that ``notifications/cancelled`` cancels (then nothing is answered).

Every admitted request gets exactly one answer (unless cancelled): ``ping`` an empty result;
any other the result of its handler (the handler of the request on whose response stream it
arrived, else the application's); a :class:`PeerError` the handler raises is answered as
that error; any other exception, or a result that is not JSON, as -32603 with a generic
message (the detail goes to the log, never to the server). An answer the link cannot take
(it is gone, or an HTTP server refused the POST) is logged: the server's request then ends
by the server's own timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ..framing import loggable
from ..protocol import (
    PING,
    SERVER_OVERLOADED,
    JSONRPCError,
    RequestId,
    encode_result,
    error_reply,
    internal_error,
    relayed_error,
)
from ._errors import ClientError, PeerError
from ._outgoing import Outgoing
from ._requests import Pending, RequestTable, ServerRequestHandler

__all__ = ["ServerRequestHandler", "ServerRequests"]

log = logging.getLogger("mcp_runtime.client")


class ServerRequests:
    """The server's requests of one conversation, served in ``nursery``; answers go out
    with ``send`` (the conversation's, which raises :class:`ClientError` when it cannot).

    :meth:`admit` is called by the conversation's reader alone, one message at a time, and
    returns once the request is refused (its answer sent) or its task started; it raises
    nothing for anything the server sent. At most ``max_server_requests`` (the table's) run
    at once; the application's handler code never runs in the reading task.
    """

    def __init__(
        self,
        table: RequestTable[trio.CancelScope],
        nursery: trio.Nursery,
        send: Callable[[Outgoing], Awaitable[None]],
        answer: ServerRequestHandler,
    ) -> None:
        self._table = table
        self._nursery = nursery
        self._send = send
        self._answer = answer

    async def admit(
        self,
        request_id: RequestId,
        method: str,
        params: dict[str, Any] | None,
        related: Pending | None,
    ) -> None:
        """Serve the server's request in a task of its own, or refuse it at once (``params``
        None: nested too deeply to read). ``related``: the request on whose response stream
        it arrived (its ``on_request`` handler answers it)."""
        table = self._table
        refusal = table.refusal(request_id, params_readable=params is not None)
        if refusal is not None:
            if refusal.code == SERVER_OVERLOADED and table.over_cap():
                log.warning(
                    "the server sent more than %d requests at once (max_server_requests): "
                    "refusing the excess with %d",
                    table.max_server_requests,
                    refusal.code,
                )
            log.debug(
                "refused the server's %s id=%r: %s", loggable(method), request_id, refusal.message
            )
            await self._send_answer(error_reply(refusal, request_id), method)
            return
        assert params is not None
        scope = trio.CancelScope()
        # Entered before the task starts: a duplicate in the same read is refused too.
        table.enter(request_id, scope)
        handler = related.answer if related is not None else None
        self._nursery.start_soon(
            self._serve, scope, request_id, method, params, handler or self._answer
        )

    async def _serve(
        self,
        scope: trio.CancelScope,
        request_id: RequestId,
        method: str,
        params: dict[str, Any],
        answer: ServerRequestHandler,
    ) -> None:
        with scope:
            try:
                if method == PING:
                    reply = encode_result(request_id, {})
                else:
                    reply = await self._reply(request_id, method, params, answer)
                await self._send_answer(reply, method)
            finally:
                self._table.leave(request_id, scope)

    async def _reply(
        self,
        request_id: RequestId,
        method: str,
        params: dict[str, Any],
        answer: ServerRequestHandler,
    ) -> bytes:
        """The whole answer to one request (see the module docstring)."""
        result: Any = None
        error: JSONRPCError | None = None
        try:
            result = await answer(method, params)
        except PeerError as exc:
            error = relayed_error(exc.code, exc.message, exc.data)
        except Exception:
            log.exception("the handler for %s failed", loggable(method))
            error = internal_error()
        try:
            return (
                encode_result(request_id, result)
                if error is None
                else error_reply(error, request_id)
            )
        except (TypeError, ValueError):  # msgspec.EncodeError is a ValueError
            log.exception("the answer to the server's %s is not JSON", loggable(method))
            return error_reply(internal_error(), request_id)

    async def _send_answer(self, data: bytes, method: str) -> None:
        try:
            await self._send(Outgoing(data))
        except ClientError as exc:  # the link is gone, or (HTTP) the server refused the POST
            log.warning("could not answer the server's %s: %s", loggable(method), loggable(exc))
