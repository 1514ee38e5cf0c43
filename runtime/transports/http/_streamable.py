"""The Streamable HTTP MCP endpoint, both eras on one path.

Era per request (DESIGN.md "Protocol eras"): a body whose ``params._meta`` carries
``io.modelcontextprotocol/protocolVersion`` is modern (2026-07-28: stateless, one short
connection per POST, header rules of basic/transports/streamable-http "Request Metadata");
an ``initialize`` without it opens a handshake-era session; a request carrying
``Mcp-Session-Id`` belongs to that session (2025-11-25 basic/transports). The session side
(initialize, session POSTs, GET, DELETE) is in ``_handshake``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable
from typing import Any, Final

import msgspec
import trio

from ._auth import Gate
from ._edge import HttpLimits
from ._exchange import (
    Exchange,
    HttpError,
    HttpRequest,
    error_body,
    media_type,
    parse_accept,
    refusal,
)
from ._handshake import HandshakeEra
from ._jsonrpc import Invalid, check_message
from ._modern import ModernParams, body_params, check_headers, modern_params, status_of
from ._session import Hooks, SessionRegistry
from ._streams import ResponseStream, answer, id_key, probe, sse_event

__all__ = ["StreamableEndpoint", "parse_accept"]

log = logging.getLogger("mcp_runtime.http")

META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
_post_ids = itertools.count(1)


class StreamableEndpoint(HandshakeEra):
    """The Streamable HTTP endpoint: POST in either era; GET and DELETE of sessions."""

    def __init__(
        self,
        hooks: Hooks,
        limits: HttpLimits,
        registry: SessionRegistry,
        shutdown: trio.Event,
        gate: Gate,
    ) -> None:
        self.hooks = hooks
        self.limits = limits
        self.registry = registry
        self.shutdown = shutdown
        self.gate = gate

    def __call__(self, request: HttpRequest, exchange: Exchange) -> Awaitable[None]:
        # The method's own coroutine, returned: no frame of this one on every request.
        method = request.method
        if method == "POST":
            return self.post(request, exchange)
        if method == "GET":
            return self.get(request, exchange)
        if method == "DELETE":
            return self.delete(request, exchange)
        raise HttpError(405, "Method Not Allowed", headers=[("Allow", "GET, POST, DELETE")])

    # -- POST -------------------------------------------------------------------------------

    async def post(self, request: HttpRequest, exchange: Exchange) -> None:
        if self.shutdown.is_set():
            raise refusal(503, "Service Unavailable: shutting down")
        gated = self.gate.enabled
        principal, token = await self.gate.check_request(request) if gated else (None, None)
        header = request.fields.get
        accept_json, accept_sse = parse_accept(header("accept"))
        if not (accept_json or accept_sse):
            raise refusal(406, "Not Acceptable: accept application/json and text/event-stream")
        if media_type(header("content-type")) != "application/json":
            raise refusal(415, "Unsupported Media Type: the body must be application/json")
        # One decode for the fast paths: a modern request, or a request to a session.
        decode = self.hooks.decode_one
        envelope = decode(request.body) if decode is not None else None
        if not gated and envelope is not None:
            direct = self._direct_request(request, envelope, accept_sse)
            if direct is not None:
                await self._dispatch_direct(request, exchange, *direct, accept_json, accept_sse)
                return
        try:
            message = msgspec.json.decode(request.body)
        except msgspec.DecodeError as exc:
            raise refusal(400, f"Parse error: {exc}", -32700) from None
        except RecursionError:  # deeper than msgspec follows (issue 16): the peer's input
            log.warning("body nested too deeply conn=%s", request.connection_id)
            raise refusal(400, "Parse error: JSON nested too deeply", -32700) from None
        if not isinstance(message, (dict, list)):  # a tuple: faster than a union
            raise refusal(400, "Invalid Request: not a JSON-RPC message", -32600)
        if isinstance(message, dict):
            # Malformed messages are answered here, on this POST (see _jsonrpc).
            try:
                check_message(message)
            except Invalid as exc:
                raise HttpError(400, str(exc), exc.reply) from None
        # Per-tool scopes, once the body has named the tool(s) (each item of a batch).
        if gated:
            self.gate.check_tools(token, message if isinstance(message, list) else [message])
        meta_version = _meta_version(message)
        if meta_version is not None:
            await self.post_modern(
                request, exchange, message, meta_version, accept_json, accept_sse, token, envelope
            )
            return
        if request.header("mcp-session-id") is not None:
            session = self.session(request, principal)
            await self.post_session(
                request, exchange, session, message, accept_json, accept_sse, envelope
            )
            return
        if isinstance(message, list):
            raise refusal(
                400, "Invalid Request: a POST carries one JSON-RPC message, not a batch", -32600
            )
        if message.get("method") == "initialize" and "id" in message:
            await self.initialize(
                request, exchange, principal, message, accept_json, accept_sse, token
            )
            return
        declared = header("mcp-protocol-version")
        if declared is not None and declared not in self.hooks.handshake_versions:
            raise refusal(
                400,
                f'Invalid params: params._meta["{META_VERSION}"] is required',
                -32602,
                message.get("id"),
            )
        raise refusal(400, "Bad Request: missing Mcp-Session-Id header (send initialize first)")

    # -- modern (2026-07-28) ----------------------------------------------------------------

    async def post_modern(
        self,
        request: HttpRequest,
        exchange: Exchange,
        message: dict[str, Any] | list[Any],
        meta_version: str,
        accept_json: bool,
        accept_sse: bool,
        token: Any = None,
        envelope: Any = None,
    ) -> None:
        """A modern POST off the direct fast path (``envelope``: ``Hooks.decode_one``'s
        reading of the body, None when it is not one well-formed request)."""
        if isinstance(message, list):
            raise refusal(
                400, "Invalid Request: a POST carries one JSON-RPC message, not a batch", -32600
            )
        request_id = message.get("id")
        if meta_version not in self.hooks.modern_versions:
            body = msgspec.json.encode(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {
                        "code": -32022,
                        "message": f"Unsupported protocol version: {meta_version}",
                        "data": {
                            "supported": [
                                *self.hooks.modern_versions,
                                *self.hooks.handshake_versions,
                            ],
                            "requested": meta_version,
                        },
                    },
                }
            )
            raise HttpError(400, "unsupported protocol version", body)
        is_request = "method" in message and request_id is not None
        method: str | None = message["method"] if is_request else None
        params = body_params(request.body)
        if params is None or params.meta is None:
            raise refusal(
                400,
                "Invalid params: params._meta must be given once, as an object",
                -32602,
                request_id,
            )
        mismatch = check_headers(
            request, meta_version, method, params, self.hooks.tool_header_params
        )
        if mismatch is not None:
            raise refusal(400, f"Header mismatch: {mismatch}", -32020, request_id)
        if envelope is not None and method is not None and _direct(method, params, accept_sse):
            await self._dispatch_direct(
                request, exchange, envelope, params.meta, accept_json, accept_sse, token
            )
            return
        key = id_key(request_id) if is_request else None
        stream = ResponseStream(
            "m", [key] if key is not None else [], queue_size=self.limits.stream_queue_size
        )
        channel = _PostChannel(request.body, stream)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._serve_one, channel, token)
            if not is_request:
                await exchange.respond(202, b"")
                return
            await answer(
                exchange,
                stream,
                accept_json=accept_json,
                accept_sse=accept_sse,
                headers=[],
                status_of=status_of,
                resumable=False,
                retry_ms=self.limits.sse_retry_ms,
                keepalive=self.limits.sse_keepalive,
            )
            if exchange.hung_up_seen:
                # 2026-07-28 "Cancellation": closing the response stream cancels the request.
                log.info("client closed the stream: cancelling conn=%s", request.connection_id)
                nursery.cancel_scope.cancel()

    def _direct_request(
        self, request: HttpRequest, envelope: Any, accept_sse: bool
    ) -> tuple[Any, dict[str, Any]] | None:
        """The envelope and ``params._meta`` of a POST the direct path answers: one
        well-formed 2026-07-28 request (``envelope``, from ``Hooks.decode_one``) at a version
        served here, headers matching. None for anything else: the general path (``post``)
        then takes the POST and answers every other shape, each error included."""
        raw = envelope.params
        params = modern_params(raw) if isinstance(raw, msgspec.Raw) else None
        meta = params.meta if params is not None else None
        version = meta.get(META_VERSION) if meta is not None else None
        if not isinstance(version, str) or version not in self.hooks.modern_versions:
            return None
        assert params is not None and meta is not None
        method = envelope.method
        if not _direct(method, params, accept_sse):
            return None
        mismatch = check_headers(request, version, method, params, self.hooks.tool_header_params)
        if mismatch is not None:
            raise refusal(400, f"Header mismatch: {mismatch}", -32020, envelope.id)
        return envelope, meta

    async def _dispatch_direct(
        self,
        request: HttpRequest,
        exchange: Exchange,
        envelope: Any,
        meta: dict[str, Any],
        accept_json: bool,
        accept_sse: bool,
        token: Any = None,
    ) -> None:
        """Answer one modern request from this task: no Connection, no extra task.

        The same wire answer as ``answer()`` over a one-POST connection: JSON when the
        response is the first message (SSE only for a client that takes only SSE); a
        handler that sends notifications turns the answer into an SSE stream (or, for a
        JSON-only client, they are dropped). The client hanging up cancels the request.
        """
        assert self.hooks.dispatch_one is not None
        streaming = False
        broken: BaseException | None = None

        async def send(data: bytes) -> None:
            nonlocal streaming, broken
            if not accept_sse or broken is not None:
                return  # a JSON-only client gets the answer alone
            try:
                if streaming:
                    await exchange.write(sse_event(data, None))
                else:
                    streaming = True
                    await exchange.start_stream(
                        200,
                        "text/event-stream",
                        [("X-Accel-Buffering", "no")],
                        first=sse_event(data, None),
                    )
            except (
                trio.TooSlowError,
                trio.BrokenResourceError,
                trio.ClosedResourceError,
                OSError,
            ) as exc:
                log.info("closing conn=%s reason=write-failed error=%r", request.connection_id, exc)
                broken = exc
                exchange.abort()  # the request stops; the driver closes the connection

        # The client hanging up (or a failed write) cancels this request with its
        # connection, which closes anyway: no cancel scope of its own on this hot path.
        exchange.abort_on_disconnect()
        reply: bytes | None = None
        try:
            reply = await self.hooks.dispatch_one(
                envelope, send, f"http-post-{next(_post_ids)}", token, meta
            )
        except Exception:
            log.exception("connection crashed conn=%s", request.connection_id)
        except trio.Cancelled:
            if self.shutdown.is_set() and broken is None and not exchange.hung_up_seen:
                # Cut short by shutdown after its grace: still answered (issue 16 item 4).
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await self._answer_shutting_down(exchange, envelope.id, streaming)
            raise
        if reply is None:  # as a one-request connection that ended without an answer
            if streaming:
                await exchange.end()
            elif accept_sse:
                await exchange.start_stream(200, "text/event-stream", [], end=True)
            else:
                await exchange.respond(204, b"")
        elif streaming:
            await exchange.end(sse_event(reply, None))
        elif accept_json:
            await exchange.respond(status_of(reply), reply)
        else:
            await exchange.start_stream(
                200,
                "text/event-stream",
                [("X-Accel-Buffering", "no")],
                first=sse_event(reply, None),
                end=True,
            )

    @staticmethod
    async def _answer_shutting_down(exchange: Exchange, request_id: Any, streaming: bool) -> None:
        message = "Server is shutting down: request not finished"
        body = error_body(message, -32000, request_id)  # -32000: the core's CONNECTION_CLOSED
        log.info("answering unfinished request id=%r reason=shutdown", request_id)
        try:
            if streaming:
                await exchange.end(sse_event(body, None))
            elif not exchange.started:
                exchange.close_after = True
                await exchange.respond(503, body)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # the client is gone: nobody to answer

    async def _serve_one(self, channel: _PostChannel, token: Any = None) -> None:
        await self.hooks.serve_connection(
            channel,
            session=self.hooks.new_session("http", token),
            connection_id=f"http-post-{next(_post_ids)}",
            shutdown=self.shutdown,
            drain_on_eof=True,
        )


class _PostChannel:
    """One modern POST as a ``MessageChannel``: its body in, its answers to ``stream``."""

    def __init__(self, body: bytes, stream: ResponseStream) -> None:
        self._body: bytes | None = body
        self._stream = stream

    async def receive(self) -> bytes:
        if self._body is None:
            raise trio.EndOfChannel
        body, self._body = self._body, None
        return body

    async def send(self, messages: Any) -> None:
        for data, related in messages:
            is_response, message_id = probe(data)
            ref = related if related is not None else message_id
            final = id_key(ref) if is_response and ref is not None else None
            self._stream.push(None, data, final)

    async def aclose(self) -> None:
        self._stream.finish()


#: ``_meta`` keys that make a handler send notifications on the request's stream
#: (2026-07-28 basic/utilities/progress, server/utilities/logging).
_STREAMING_META: Final = frozenset({"progressToken", "io.modelcontextprotocol/logLevel"})


def _direct(method: str, params: ModernParams, accept_sse: bool) -> bool:
    """Whether a modern request can take the direct path: its answer is one message (not
    the ``subscriptions/listen`` stream) and nothing asked for notifications beside it
    (which a JSON-only client would not get anyway)."""
    if method == "subscriptions/listen":
        return False
    if not accept_sse:
        return True
    meta = params.meta
    return meta is None or _STREAMING_META.isdisjoint(meta)


def _meta_version(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None
