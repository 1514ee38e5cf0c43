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
from msgspec import UNSET

from ...protocol import (
    HANDSHAKE_VERSIONS,
    INITIALIZE,
    META_PROTOCOL_VERSION,
    MODERN_MARKER,
    ONE_PASS_OVER,
    SUBSCRIPTIONS_LISTEN,
    UNSUPPORTED_PROTOCOL_VERSION,
    Envelope,
    ErrorReply,
    JSONRPCError,
    Kind,
    ModernRequest,
    Pieces,
    ToolCall,
    classify,
    decode_frame,
    error_reply,
    header_mismatch,
    id_key,
    invalid_params,
    modern_request,
    probe,
    retry_after,
    shutting_down,
    status_of,
)
from ._auth import Gate, calls_in
from ._edge import HttpLimits
from ._exchange import (
    Exchange,
    HttpError,
    HttpRequest,
    media_type,
    parse_accept,
    refusal,
    rejection,
)
from ._handshake import HandshakeEra
from ._listen import ListenStream
from ._modern import ModernParams, check_headers, modern_params
from ._session import Hooks, SessionRegistry
from ._streams import ResponseStream, answer, end_with_reply, sse_event

__all__ = ["StreamableEndpoint", "parse_accept"]

log = logging.getLogger("mcp_runtime.http")

_post_ids = itertools.count(1)
_NOT_A_BATCH: Final = "Invalid Request: a POST carries one JSON-RPC message, not a batch"


class StreamableEndpoint:
    """The Streamable HTTP endpoint: POST in either era; GET and DELETE of sessions (the
    handshake-era side, ``sessions``)."""

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
        self.shutdown = shutdown
        self.gate = gate
        self.sessions = HandshakeEra(hooks, limits, registry, gate)
        #: The one-POST connections serving now (streamed requests): shutdown reaches them
        #: through one watcher (``stop_at_shutdown``), not a watcher task per connection
        #: (issue 22 item 4, memory per idle listen).
        self._connections: set[Any] = set()
        #: The scopes of the listens served now (``_listen``): at shutdown each gets
        #: ``shutdown_grace`` to end with its result before it is cut short.
        self._listens: set[trio.CancelScope] = set()

    async def stop_at_shutdown(self) -> None:
        """One watcher for every one-POST connection: at shutdown each stops reading and
        drains within ``shutdown_grace`` (as ``SessionRegistry`` does for sessions)."""
        await self.shutdown.wait()
        for connection in list(self._connections):
            connection.stop_reading()
        for scope in list(self._listens):
            self._bound_by_grace(scope)

    def _bound_by_grace(self, scope: trio.CancelScope) -> None:
        scope.deadline = min(scope.deadline, trio.current_time() + self.hooks.shutdown_grace)

    def __call__(self, request: HttpRequest, exchange: Exchange) -> Awaitable[None]:
        method = request.method
        if method == "POST":
            return self.post(request, exchange)
        if method == "GET":
            return self.sessions.get(request, exchange)
        if method == "DELETE":
            return self.sessions.delete(request, exchange)
        raise HttpError(405, "Method Not Allowed", headers=[("Allow", "GET, POST, DELETE")])

    # -- POST -------------------------------------------------------------------------------

    async def post(self, request: HttpRequest, exchange: Exchange) -> None:
        """Decode the body once (``runtime.protocol``), judge it, then route it by era: a
        modern request, a request to a session, or an ``initialize`` opening one. A body that
        is not acceptable JSON-RPC is answered here, on this POST, with 400 (2025-03-26
        basic/transports: "If the server cannot accept the input, it MUST return an HTTP
        error status code"; the body is the JSON-RPC error, id null unless recovered)."""
        if self.shutdown.is_set():
            raise refusal(503, "Service Unavailable: shutting down")
        gated = self.gate.enabled
        principal, token = await self.gate.check_request(request) if gated else (None, None)
        header = request.fields.get
        session_id = header("mcp-session-id")
        accept_json, accept_sse = parse_accept(header("accept"))
        if not (accept_json or accept_sse):
            raise refusal(406, "Not Acceptable: accept application/json and text/event-stream")
        if media_type(header("content-type")) != "application/json":
            raise refusal(415, "Unsupported Media Type: the body must be application/json")
        body = request.body
        called: ToolCall | None = None
        message: Envelope | list[msgspec.Raw]
        try:
            if (
                len(body) > ONE_PASS_OVER
                and self.hooks.read_frame is not None
                and (found := self.hooks.read_frame(body)) is not None
            ):
                # A big tools/call (modern, or POSTed to a session) read whole in the tool's
                # typed pass: the arguments' bytes read once, not first walked to find their
                # end.
                message, called = found
            else:
                message = decode_frame(body)
            kind = None if isinstance(message, list) else classify(message)
        except JSONRPCError as exc:
            raise rejection(400, exc) from None
        # Per-tool scopes, once the body has named the tool(s) (each item of a batch).
        if gated:
            self.gate.check_tools(token, calls_in(message))
        if isinstance(message, Envelope) and (session_id is None or _may_be_modern(message)):
            params, prepared = _modern_params(message, self.hooks, called)
            if params is not None:
                # A modern POST: judged here, then answered by the direct path (one request
                # answered from this task) or a one-POST connection (notifications,
                # responses, listen streams, requests that stream notifications).
                modern = self.judge_modern(request, message, kind, params)
                direct = kind == Kind.REQUEST and _direct(message.method, params, accept_sse)
                # Not held by this frame for as long as the POST lasts (a listen: hours):
                # issue 22 item 4, memory per idle listen.
                params = None
                if direct:
                    await self._dispatch_direct(
                        request, exchange, message, modern, accept_json, accept_sse, token, prepared
                    )
                elif message.method == SUBSCRIPTIONS_LISTEN and self.hooks.dispatch_one:
                    listen = self._listen(
                        request, exchange, message, modern, accept_json, accept_sse, token
                    )
                    modern = None  # (the listen's own frame lets go of it)
                    await listen
                else:
                    modern = None  # (judged; not held while a listen lasts either)
                    await self.post_modern(
                        request, exchange, message, kind, accept_json, accept_sse, token
                    )
                return
            # (Else a handshake-era message: ``prepared`` is its params' reading, if any.)
        else:
            prepared = None
        if session_id is not None:
            session = await self.sessions.find(request, session_id, principal, token)
            await self.sessions.post_session(
                request, exchange, session, message, kind, accept_json, accept_sse, prepared
            )
            return
        if isinstance(message, list):
            raise refusal(400, _NOT_A_BATCH)
        if message.method == INITIALIZE and kind == Kind.REQUEST:
            await self.sessions.initialize(
                request, exchange, principal, message, accept_json, accept_sse, token
            )
            return
        declared = header("mcp-protocol-version")
        if declared is not None and declared not in HANDSHAKE_VERSIONS:
            # A modern client (by its header) whose body carries no protocol version.
            error = invalid_params(f'params._meta["{META_PROTOCOL_VERSION}"] is required')
            raise rejection(400, error, message.id)
        raise refusal(400, "Bad Request: missing Mcp-Session-Id header (send initialize first)")

    # -- modern (2026-07-28) ----------------------------------------------------------------

    def judge_modern(
        self,
        request: HttpRequest,
        message: Envelope,
        kind: int | None,
        params: ModernParams | ToolCall,
    ) -> ModernRequest | None:
        """The header rules of a modern POST, then its era (None: a notification without
        capabilities, nothing to answer); raises the 400 refusing it."""
        assert params.meta is not None
        request_id = message.id
        is_request = kind == Kind.REQUEST
        method = message.method if is_request else None
        assert method is None or isinstance(method, str)
        version = params.meta[META_PROTOCOL_VERSION]  # a string (``_modern_params``)
        mismatch = check_headers(request, version, method, params, self.hooks.tool_header_params)
        if mismatch is not None:
            raise rejection(400, header_mismatch(mismatch), request_id)
        # The version is judged after the header rules: a header that disagrees with the body
        # is -32020 whatever the body says (2026-07-28 streamable-http "Server Validation").
        try:
            return modern_request(version, params.meta)
        except JSONRPCError as exc:
            if is_request or exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                # A request without client capabilities is malformed request metadata
                # (2026-07-28 basic/index): 400, as for a missing _meta.
                raise rejection(400, exc, request_id) from None
            return None  # a notification without capabilities: nothing to answer

    async def post_modern(
        self,
        request: HttpRequest,
        exchange: Exchange,
        message: Envelope,
        kind: int | None,
        accept_json: bool,
        accept_sse: bool,
        token: Any = None,
    ) -> None:
        """A modern POST (judged) that is not a request for the direct path, served as a
        one-POST connection: a notification or response (202), a listen stream, a request
        that streams notifications."""
        request_id = message.id
        is_request = kind == Kind.REQUEST
        key = id_key(request_id) if is_request else None  # type: ignore[arg-type]
        stream = ResponseStream(
            "m", [key] if key is not None else [], queue_size=self.limits.stream_queue_size
        )
        channel = _PostChannel(bytes(request.body), stream)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._serve_one, channel, token)
            if not is_request:
                await exchange.respond(202, b"")
                return
            await self._answer_one_post(
                request, exchange, stream, accept_json, accept_sse, nursery.cancel_scope
            )

    async def _answer_one_post(
        self,
        request: HttpRequest,
        exchange: Exchange,
        stream: ResponseStream,
        accept_json: bool,
        accept_sse: bool,
        scope: trio.CancelScope,
    ) -> None:
        """Answer a 2026-07-28 POST from ``stream`` (JSON or SSE, not resumable); a client
        that closed the response stream cancels ``scope``, the request's (2026-07-28
        "Cancellation": closing the response stream cancels the request)."""
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
            log.info("client closed the stream: cancelling conn=%s", request.connection_id)
            scope.cancel()

    async def _listen(
        self,
        request: HttpRequest,
        exchange: Exchange,
        message: Envelope,
        modern: ModernRequest | None,
        accept_json: bool,
        accept_sse: bool,
        token: Any,
    ) -> None:
        """A 2026-07-28 ``subscriptions/listen`` (basic/patterns/subscriptions), held open
        for hours, served in this task with no Connection, task or nursery of its own
        (issue 22 item 4, memory per idle listen): the handler runs here through
        ``dispatch_one`` (as the direct path's requests do) and waits in its
        :class:`ListenStream`'s ``idle`` (``_listen.py``: the socket watched, keep-alive
        comments, a change written straight to the socket by its publisher).

        Shutdown ends the listen with its result (the registry's subscribers end); one that
        has not ended within ``shutdown_grace`` (the connection's generation scope bounds
        it) is answered -32000, as a one-POST connection's request cut short by the grace
        is. The client hanging up cancels it with its connection (2026-07-28
        "Cancellation"), which drops its subscription.
        """
        dispatch_one = self.hooks.dispatch_one
        assert dispatch_one is not None
        scope = exchange.request_scope
        assert scope is not None  # (the driver runs every exchange in a generation)
        stream = ListenStream(
            exchange, accept_sse, self.limits.sse_keepalive, request.connection_id
        )
        running = dispatch_one(
            message,
            stream.send,
            f"http-post-{next(_post_ids)}",
            token,
            modern,
            None,
            stream.send_now,
            stream.idle,
        )
        modern = None  # (held by the request's context as it needs; not by this frame)
        exchange.abort_on_disconnect()
        reply: bytes | Pieces | None = None
        self._listens.add(scope)
        try:
            if self.shutdown.is_set():  # set before the watcher could see this listen
                self._bound_by_grace(scope)
            reply = await running
        except Exception:  # (the dispatcher answers handler failures: this is a bug of ours)
            log.exception("listen crashed conn=%s", request.connection_id)
        except trio.Cancelled:
            if exchange.hung_up_seen:
                log.info("client closed the stream: cancelling conn=%s", request.connection_id)
            elif self.shutdown.is_set() and not stream.broken:
                # Cut short by shutdown after its grace: still answered (issue 16 item 4).
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await stream.flush()
                    await self._answer_shutting_down(exchange, message.id, stream.streaming)
            stream.close()
            raise
        finally:
            self._listens.discard(scope)
        await stream.answer(reply, accept_json, _json_status)

    async def _dispatch_direct(
        self,
        request: HttpRequest,
        exchange: Exchange,
        envelope: Any,
        modern: ModernRequest | None,
        accept_json: bool,
        accept_sse: bool,
        token: Any = None,
        prepared: ToolCall | None = None,
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
        reply: bytes | Pieces | None = None
        try:
            reply = await self.hooks.dispatch_one(
                envelope, send, f"http-post-{next(_post_ids)}", token, modern, prepared, None, None
            )
        except Exception:
            log.exception("connection crashed conn=%s", request.connection_id)
        except trio.Cancelled:
            if self.shutdown.is_set() and broken is None and not exchange.hung_up_seen:
                # Cut short by shutdown after its grace: still answered (issue 16 item 4).
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await self._answer_shutting_down(exchange, envelope.id, streaming)
            raise
        # (None: as a one-request connection that ended without an answer.)
        await end_with_reply(exchange, reply, streaming, accept_json, accept_sse, _json_status)

    @staticmethod
    async def _answer_shutting_down(exchange: Exchange, request_id: Any, streaming: bool) -> None:
        body = error_reply(shutting_down(), request_id)
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
        connections = self._connections
        served: list[Any] = []

        def started(connection: Any) -> None:
            served.append(connection)
            connections.add(connection)
            if self.shutdown.is_set():  # set before the watcher could see this connection
                connection.stop_reading()

        try:
            await self.hooks.serve_connection(
                channel,
                session=self.hooks.new_session("http", token),
                connection_id=f"http-post-{next(_post_ids)}",
                drain_on_eof=True,
                started=started,
            )
        finally:
            if served:
                connections.discard(served[0])


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
        self.send_now(messages)

    def send_now(self, messages: Any) -> None:
        """Queue ``messages`` on the response stream: never waits (the stream's bounded
        queue cuts a response that falls behind), so the outbox needs no write scope for
        it (``runtime.core`` Outbox: a notification to each of 1,000 listens, issue 22)."""
        for data, related in messages:
            is_response, message_id = probe(data)
            ref = related if related is not None else message_id
            final = id_key(ref) if is_response and ref is not None else None
            self._stream.push(None, data, final)

    def ready(self, related: Any) -> bool:
        """Whether a message now goes straight to the socket (``MessageChannel.ready``):
        the response's pump waits with nothing queued."""
        return self._stream.direct is not None

    async def aclose(self) -> None:
        self._stream.finish()


#: ``_meta`` keys that make a handler send notifications on the request's stream
#: (2026-07-28 basic/utilities/progress, server/utilities/logging).
_STREAMING_META: Final = frozenset({"progressToken", "io.modelcontextprotocol/logLevel"})


def _json_status(reply: bytes) -> int:
    """``status_of(reply)``, except that a rate limit's refusal (429) is raised as the
    HttpError that answers it with ``Retry-After`` (RFC 6585 section 4): the driver writes
    it. ``reply`` is one as ``dispatch_one`` returned it, whose errors are all
    ``ErrorReply``: anything else is a result, 200 without reading it."""
    if type(reply) is not ErrorReply:
        return 200
    status = status_of(reply)
    if status == 429:
        headers = [("Retry-After", retry_after(reply) or "1")]
        error = HttpError(429, "Too Many Requests", reply, headers)
        error.observed = True  # the middleware chain made it: no refusal of the transport
        raise error
    return status


def _direct(method: object, params: ModernParams | ToolCall, accept_sse: bool) -> bool:
    """Whether a modern request can take the direct path: its answer is one message (not
    the ``subscriptions/listen`` stream) and nothing asked for notifications beside it
    (which a JSON-only client would not get anyway)."""
    if method == SUBSCRIPTIONS_LISTEN:
        return False
    if not accept_sse:
        return True
    meta = params.meta
    return meta is None or _STREAMING_META.isdisjoint(meta)


def _may_be_modern(message: Envelope) -> bool:
    """Whether a message POSTed to a session (nearly always of the handshake era) can be
    modern, which its params decide (2026-07-28 basic/versioning): small params without the
    marker key cannot (a modern request's bytes cannot lack it: era selection's rule too,
    handlers/era.py), and get no typed pass. Big ones are read as any (the typed pass costs
    less than a copy and a search of a 1 MiB argument)."""
    raw = message.params
    return not (
        isinstance(raw, msgspec.Raw)
        and len(raw) <= ONE_PASS_OVER
        and MODERN_MARKER not in bytes(raw)
    )


def _modern_params(
    message: Envelope, hooks: Hooks, called: ToolCall | None = None
) -> tuple[ModernParams | ToolCall | None, ToolCall | None]:
    """What the 2026-07-28 rules read from a message's params, when it is a modern message
    (``params._meta`` names a protocol version as a string), else None; and, for a
    ``tools/call`` read in its tool's typed pass (``hooks.read_call``; ``called``: the
    reading ``Hooks.read_frame`` made with the body, taken instead), that reading for the
    handler, whatever the era.

    The reading stands for the rules' ``ModernParams`` too (its ``meta`` and ``name`` are
    all they read of a ``tools/call``) unless the tool has ``Mcp-Param`` headers: those are
    matched against the arguments as sent, which the general reading keeps raw.

    A modern-looking body whose typed reading fails (``_meta`` given twice, once not an
    object: a generic reading would take the last) is refused with 400 and -32602.
    """
    raw = message.params
    if raw is UNSET:
        return None, None
    if message.method == "tools/call" and hooks.read_call is not None:
        # One pass gives the era rules their ``_meta`` and the handler its tool and typed
        # arguments, instead of a pass here that skips the arguments and the handler's two.
        call = hooks.read_call(raw) if called is None else called
        if call is not None:
            meta = call.meta
            if meta is None or not isinstance(meta.get(META_PROTOCOL_VERSION), str):
                return None, call  # handshake era: the reading goes on to the handler
            if not hooks.tool_header_params(call.name):
                return call, call
            return _general_params(message, raw), call
    return _general_params(message, raw), None


def _general_params(message: Envelope, raw: msgspec.Raw) -> ModernParams | None:
    # One typed pass over the params (``arguments`` stay raw): no copy of them to look for
    # the marker first, which cost a copy and a second pass of a 1 MiB argument.
    params = modern_params(raw)
    if params is None:
        if MODERN_MARKER not in bytes(raw):
            return None  # not modern at all: the handshake path answers it
        try:
            loose = msgspec.json.decode(raw)
        except RecursionError:  # deeper than msgspec follows here (issue 16): not modern
            return None
        meta = loose.get("_meta") if isinstance(loose, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get(META_PROTOCOL_VERSION), str):
            error = invalid_params("params._meta must be given once, as an object")
            raise rejection(400, error, message.id)
        return None
    meta = params.meta
    if meta is None or not isinstance(meta.get(META_PROTOCOL_VERSION), str):
        return None  # no protocol version in _meta: handshake era
    return params
