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
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio
from msgspec import UNSET, Raw

from ...protocol import (
    HANDSHAKE_VERSIONS,
    INITIALIZE,
    META_PROTOCOL_VERSION,
    MODERN_MARKER,
    ONE_PASS_OVER,
    SUBSCRIPTIONS_LISTEN,
    TOOLS_CALL,
    UNSUPPORTED_PROTOCOL_VERSION,
    DecodedFrame,
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
    invalid_params,
    modern_request,
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
from ._session import SessionRegistry
from ._streams import end_with_reply, sse_event

if TYPE_CHECKING:
    from .. import ServerPort

__all__ = ["StreamableEndpoint", "parse_accept"]

log = logging.getLogger("mcp_runtime.http")

_post_ids = itertools.count(1)
_NOT_A_BATCH: Final = "Invalid Request: a POST carries one JSON-RPC message, not a batch"


class StreamableEndpoint:
    """The Streamable HTTP endpoint: POST in either era; GET and DELETE of sessions (the
    handshake-era side, ``sessions``).

    A POST is decoded once, here, and answered by one of these (2026-07-28 and 2025-11-25
    basic/transports):

    - a modern request: run in this task with no connection (``ServerPort.dispatch_one``),
      answered as JSON or, once it sends a notification, as an SSE stream; a
      ``subscriptions/listen`` the same way, its stream held open (``_listen``);
    - a modern notification: 202, then its handler (``ServerPort.dispatch_notification``);
    - a request to a session: run in this task as the session connection's own
      (``SessionConnection.run_request``);
    - anything else for a session (``initialize``, notifications, responses, a 2025-03-26
      batch): fed to the session's connection as read here (``DecodedFrame``).
    """

    def __init__(
        self,
        port: ServerPort,
        limits: HttpLimits,
        registry: SessionRegistry,
        shutdown: trio.Event,
        gate: Gate,
    ) -> None:
        self.port = port
        self.limits = limits
        self.shutdown = shutdown
        self.gate = gate
        self.sessions = HandshakeEra(port, limits, registry, gate)
        #: The scopes of the modern requests served now (``_dispatch_direct``, ``_listen``):
        #: at shutdown each gets ``shutdown_grace`` to end before it is cut short; one that
        #: starts once the watcher has run (``_draining``) bounds itself.
        self._running: set[trio.CancelScope] = set()
        self._draining = False

    async def stop_at_shutdown(self) -> None:
        """One watcher for every modern request: at shutdown each gets ``shutdown_grace`` to
        end (as ``SessionRegistry`` gives sessions), not a watcher task per request."""
        await self.shutdown.wait()
        self._draining = True
        for scope in list(self._running):
            self._bound_by_grace(scope)

    def _bound_by_grace(self, scope: trio.CancelScope) -> None:
        scope.deadline = min(scope.deadline, trio.current_time() + self.port.shutdown_grace)

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
        modern message, a message to a session, or an ``initialize`` opening one. A body that
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
        read: Mapping[int, tuple[Envelope, ToolCall]] | None = None
        message: Envelope | list[Raw]
        try:
            if len(body) > ONE_PASS_OVER and (found := self.port.read_frame(body)) is not None:
                # A big tools/call (alone, or in a batch: ``read`` holds it by index) read
                # whole in the tool's typed pass: the arguments' bytes read once, not first
                # walked to find their end.
                if isinstance(found[0], list):
                    message, read = found
                else:
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
            params, prepared = _modern_params(message, self.port, called)
            if params is not None:
                # A modern message: judged here, then answered from this task.
                modern = self.judge_modern(request, message, kind, params)
                # Not held by this frame for as long as the POST lasts (a listen: hours).
                params = None
                if kind != Kind.REQUEST:
                    await self._notify(request, exchange, message, token)
                elif message.method == SUBSCRIPTIONS_LISTEN:
                    listen = self._listen(
                        request, exchange, message, modern, accept_json, accept_sse, token
                    )
                    modern = None  # (the listen's own frame lets go of it)
                    await listen
                else:
                    await self._dispatch_direct(
                        request, exchange, message, modern, accept_json, accept_sse, token, prepared
                    )
                return
            # (Else a handshake-era message: ``prepared`` is its params' reading, if any.)
        else:
            prepared = None
        if session_id is not None:
            session = await self.sessions.find(request, session_id, principal, token)
            await self.sessions.post_session(
                request, exchange, session, message, kind, accept_json, accept_sse, prepared, read
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
        mismatch = check_headers(request, version, method, params, self.port.header_rules)
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

    async def _notify(
        self, request: HttpRequest, exchange: Exchange, message: Envelope, token: Any
    ) -> None:
        """A modern notification: 202 Accepted (2026-07-28 basic/transports, "Sending
        Messages"), then its handler, with no connection
        (``ServerPort.dispatch_notification``). (A response has no params, so no ``_meta``
        to be modern by: it never comes here.)"""
        await exchange.respond(202, b"")
        frame = DecodedFrame(request.body, message, Kind.NOTIFICATION)
        await self.port.dispatch_notification(frame, f"http-post-{next(_post_ids)}", token)

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
        for hours, served in this task with no Connection, task or nursery of its own: the
        handler runs here through ``dispatch_one`` (as the direct path's requests do) and
        waits in its :class:`ListenStream`'s ``idle`` (``_listen.py``: the socket watched,
        keep-alive comments, a change written straight to the socket by its publisher).

        Shutdown ends the listen with its result (the registry's subscribers end); one that
        has not ended within ``shutdown_grace`` (the connection's generation scope bounds
        it) is answered -32000, as a request cut short by the grace is. The client hanging
        up cancels it with its connection (2026-07-28 "Cancellation"), which drops its
        subscription.
        """
        scope = exchange.request_scope
        assert scope is not None  # (the driver runs every exchange in a generation)
        stream = ListenStream(
            exchange, accept_sse, self.limits.sse_keepalive, request.connection_id
        )
        running = self.port.dispatch_one(
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
        self._running.add(scope)
        try:
            if self._draining:
                self._bound_by_grace(scope)
            reply = await running
        except Exception:  # (the dispatcher answers handler failures: this is a bug of ours)
            log.exception("listen crashed conn=%s", request.connection_id)
        except trio.Cancelled:
            if exchange.hung_up_seen:
                log.info("client closed the stream: cancelling conn=%s", request.connection_id)
            elif self.shutdown.is_set() and not stream.broken:
                # Cut short by shutdown after its grace: still answered (every accepted
                # request gets one reply).
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await stream.flush()
                    await self._answer_shutting_down(exchange, message.id, stream.streaming)
            stream.close()
            raise
        finally:
            self._running.discard(scope)
        await stream.answer(reply, accept_json, _json_status)

    async def _dispatch_direct(
        self,
        request: HttpRequest,
        exchange: Exchange,
        envelope: Envelope,
        modern: ModernRequest | None,
        accept_json: bool,
        accept_sse: bool,
        token: Any = None,
        prepared: ToolCall | None = None,
    ) -> None:
        """Answer one modern request from this task: no Connection, no extra task.

        JSON when the response is the only message (SSE only for a client that takes only
        SSE); a handler that sends notifications first (progress, logs) turns the answer
        into an SSE stream carrying them, then the response (2026-07-28 basic/transports,
        "Receiving Messages"), or, for a JSON-only client, they are dropped. The client
        hanging up cancels the request (2026-07-28 "Cancellation").
        """
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
        # connection, which closes anyway: no cancel scope of its own on this hot path; the
        # connection's (its generation's) is bounded by the grace at shutdown.
        exchange.abort_on_disconnect()
        scope = exchange.request_scope
        if TYPE_CHECKING:  # (the driver runs every exchange in a generation)
            assert scope is not None
        reply: bytes | Pieces | None = None
        self._running.add(scope)
        try:
            if self._draining:
                self._bound_by_grace(scope)
            reply = await self.port.dispatch_one(
                envelope, send, f"http-post-{next(_post_ids)}", token, modern, prepared, None, None
            )
        except Exception:
            log.exception("connection crashed conn=%s", request.connection_id)
        except trio.Cancelled:
            if self.shutdown.is_set() and broken is None and not exchange.hung_up_seen:
                # Cut short by shutdown after its grace: still answered (every accepted
                # request gets one reply).
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await self._answer_shutting_down(exchange, envelope.id, streaming)
            raise
        finally:
            self._running.discard(scope)
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
    message: Envelope, port: ServerPort, called: ToolCall | None = None
) -> tuple[ModernParams | ToolCall | None, ToolCall | None]:
    """What the 2026-07-28 rules read from a message's params, when it is a modern message
    (``params._meta`` names a protocol version as a string), else None; and, for a
    ``tools/call`` read in its tool's typed pass (``port.read_call``; ``called``: the
    reading ``port.read_frame`` made with the body, taken instead), that reading for the
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
    if message.method == TOOLS_CALL:
        # One pass gives the era rules their ``_meta`` and the handler its tool and typed
        # arguments, instead of a pass here that skips the arguments and the handler's two.
        call = port.read_call(raw) if called is None else called
        if call is not None:
            meta = call.meta
            if meta is None or not isinstance(meta.get(META_PROTOCOL_VERSION), str):
                return None, call  # handshake era: the reading goes on to the handler
            if not port.header_rules[call.name]:
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
        except RecursionError:  # deeper than msgspec follows: not modern
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
