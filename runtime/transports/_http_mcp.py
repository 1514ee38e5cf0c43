"""The Streamable HTTP MCP endpoint, both eras on one path.

Era per request (DESIGN.md "Protocol eras"): a body whose ``params._meta`` carries
``io.modelcontextprotocol/protocolVersion`` is modern (2026-07-28: stateless, one short
connection per POST, header rules of basic/transports/streamable-http "Request Metadata");
an ``initialize`` without it opens a handshake-era session; a request carrying
``Mcp-Session-Id`` belongs to that session (2025-11-25 basic/transports).
"""

from __future__ import annotations

import functools
import itertools
import logging
from typing import Any, Final

import msgspec
import trio

from ._edge import HttpLimits
from ._http_auth import Gate
from ._http_exchange import Exchange, HttpError, HttpRequest
from ._http_jsonrpc import Invalid, Kind, check_batch, check_message
from ._http_modern import check_headers, status_of
from ._http_session import Hooks, HttpSession, SessionRegistry
from ._http_streams import ResponseStream, answer, id_key, probe, pump, sse_event

__all__ = ["StreamableEndpoint", "parse_accept"]

log = logging.getLogger("mcp_runtime.http")

META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
#: 2025-03-26 is the one handshake revision that allows JSON-RPC batches.
BATCH_REVISION: Final = "2025-03-26"
_post_ids = itertools.count(1)


@functools.lru_cache(maxsize=64)  # clients send the same few Accept values every time
def parse_accept(value: str | None) -> tuple[bool, bool]:
    """(accepts application/json, accepts text/event-stream); a missing header accepts both."""
    if value is None:
        return True, True
    types = {part.split(";")[0].strip().lower() for part in value.split(",")}
    anything = "*/*" in types
    return (
        anything or "application/json" in types or "application/*" in types,
        anything or "text/event-stream" in types or "text/*" in types,
    )


@functools.lru_cache(maxsize=64)
def _media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()


def _bad(status: int, message: str, code: int = -32600, request_id: Any = None) -> HttpError:
    body = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )
    return HttpError(status, message, body)


class StreamableEndpoint:
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

    async def principal(self, request: HttpRequest) -> Any:
        """The session key of the request's principal (None without auth); refusals raise."""
        key, _principal = await self.gate.check_request(request)
        return key

    def session(self, request: HttpRequest, principal: Any) -> HttpSession:
        session_id = request.header("mcp-session-id")
        assert session_id is not None
        session = self.registry.get(session_id)
        # With auth on, a session belongs to the principal that created it: to anyone else
        # it does not exist (404 reveals nothing).
        if (
            session is None
            or session.legacy
            or (self.gate.enabled and session.principal != principal)
        ):
            raise _bad(404, "Not Found: unknown or ended session")
        version = request.header("mcp-protocol-version")
        # 2025-06-18+ "Protocol Version Header": an invalid or unsupported one gets 400;
        # when absent the server assumes 2025-03-26 (nothing to check).
        if version is not None and version not in self.hooks.handshake_versions:
            raise _bad(400, f"Bad Request: unsupported MCP-Protocol-Version {version!r}")
        session.touch()
        return session

    async def __call__(self, request: HttpRequest, exchange: Exchange) -> None:
        if request.method == "POST":
            await self.post(request, exchange)
        elif request.method == "GET":
            await self.get(request, exchange)
        elif request.method == "DELETE":
            await self.delete(request, exchange)
        else:
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "GET, POST, DELETE")])

    # -- POST -------------------------------------------------------------------------------

    async def post(self, request: HttpRequest, exchange: Exchange) -> None:
        if self.shutdown.is_set():
            raise _bad(503, "Service Unavailable: shutting down")
        gated = self.gate.enabled
        principal, token = await self.gate.check_request(request) if gated else (None, None)
        accept_json, accept_sse = parse_accept(request.header("accept"))
        if not (accept_json or accept_sse):
            raise _bad(406, "Not Acceptable: accept application/json and text/event-stream")
        if _media_type(request.header("content-type")) != "application/json":
            raise _bad(415, "Unsupported Media Type: the body must be application/json")
        try:
            message = msgspec.json.decode(request.body)
        except msgspec.DecodeError as exc:
            raise _bad(400, f"Parse error: {exc}", -32700) from None
        if not isinstance(message, (dict, list)):  # a tuple: faster than a union
            raise _bad(400, "Invalid Request: not a JSON-RPC message", -32600)
        if isinstance(message, dict):
            # Malformed messages are answered here, on this POST (see _http_jsonrpc).
            try:
                check_message(message)
            except Invalid as exc:
                raise HttpError(400, str(exc), exc.reply) from None
        # Per-tool scopes, once the body has named the tool(s) (each item of a batch).
        if gated:
            self.gate.check_tools(token, message if isinstance(message, list) else [message])
        meta_version = _meta_version(message)
        has_session = request.header("mcp-session-id") is not None
        if meta_version is not None:
            await self.post_modern(
                request, exchange, message, meta_version, accept_json, accept_sse, token
            )
            return
        if has_session:
            session = self.session(request, principal)
            await self.post_session(request, exchange, session, message, accept_json, accept_sse)
            return
        if isinstance(message, list):
            raise _bad(
                400, "Invalid Request: a POST carries one JSON-RPC message, not a batch", -32600
            )
        if message.get("method") == "initialize" and "id" in message:
            await self.initialize(
                request, exchange, principal, message, accept_json, accept_sse, token
            )
            return
        header = request.header("mcp-protocol-version")
        if header is not None and header not in self.hooks.handshake_versions:
            raise _bad(
                400,
                f'Invalid params: params._meta["{META_VERSION}"] is required',
                -32602,
                message.get("id"),
            )
        raise _bad(400, "Bad Request: missing Mcp-Session-Id header (send initialize first)")

    async def initialize(
        self,
        request: HttpRequest,
        exchange: Exchange,
        principal: Any,
        message: dict[str, Any],
        accept_json: bool,
        accept_sse: bool,
        token: Any = None,
    ) -> None:
        session = self.registry.create(principal, token=token)
        if session is None:
            raise _bad(503, "Service Unavailable: too many sessions", -32010)
        try:
            await self.post_session(request, exchange, session, message, accept_json, accept_sse)
        finally:
            if session.protocol_version is None:  # initialize failed: no session
                session.end()

    async def post_session(
        self,
        request: HttpRequest,
        exchange: Exchange,
        session: HttpSession,
        message: dict[str, Any] | list[Any],
        accept_json: bool,
        accept_sse: bool,
    ) -> None:
        headers = [("Mcp-Session-Id", session.id)]
        body = request.body
        batch_errors: list[bytes] = []
        if isinstance(message, list):
            revision = session.protocol_version
            if revision != BATCH_REVISION:
                raise _bad(
                    400,
                    f"Invalid Request: JSON-RPC batches are not allowed in protocol revision "
                    f"{revision} (only {BATCH_REVISION})",
                )
            # Batch-level errors (empty, too large) have no id to route by: they are this
            # POST's answer (400 with the JSON-RPC error body, 2025-03-26 basic/transports).
            try:
                checked = check_batch(body, message, self.hooks.max_batch_size)
            except Invalid as exc:
                raise HttpError(400, str(exc), exc.reply, headers) from None
            if not checked.valid:  # nothing acceptable: the item errors are the answer
                raise HttpError(
                    400, "Invalid Request", b"[" + b",".join(checked.errors) + b"]", headers
                )
            items: list[Any] = checked.messages
            keys = [id_key(request_id) for request_id in checked.request_ids]
            batch_errors = checked.errors
            if batch_errors:
                body = b"[" + b",".join(checked.valid) + b"]"
                if not keys:  # only notifications/responses are left: nothing to splice into
                    raise HttpError(
                        400, "Invalid Request", b"[" + b",".join(batch_errors) + b"]", headers
                    )
        else:
            items = [message]
            is_request = check_message(message) is Kind.REQUEST
            keys = [id_key(message["id"])] if is_request else []
        if not keys:
            session.in_use += 1
            try:
                await session.feed(body)
            finally:
                session.in_use -= 1
            for item in items:
                if isinstance(item, dict) and item.get("method") == "notifications/cancelled":
                    params = item.get("params")
                    if isinstance(params, dict) and params.get("requestId") is not None:
                        session.cancelled(params["requestId"])
            await exchange.respond(202, b"", headers=headers)
            return
        stream = session.open_stream(keys)
        if stream is None:
            raise _bad(400, "Invalid Request: a request with this id is already in flight")
        stream.batch_errors = batch_errors
        session.in_use += 1
        try:
            envelope = self._session_direct(session, message, body)
            if envelope is not None:
                stream.lazy_prime = True  # most of these answer as JSON: no event at all
                await self._run_in_session(
                    exchange, session, stream, envelope, accept_json, accept_sse, headers
                )
                return
            prime_id = await session.prime(stream)
            await session.feed(body)
            await answer(
                exchange,
                stream,
                accept_json=accept_json,
                accept_sse=accept_sse,
                headers=headers,
                resumable=True,
                prime_id=prime_id,
                retry_ms=self.limits.sse_retry_ms,
                keepalive=self.limits.sse_keepalive,
            )
        finally:
            session.in_use -= 1
            session.touch()
            session.release(stream)

    def _session_direct(self, session: HttpSession, message: Any, body: bytes) -> Any:
        """The envelope of a single request that can run in the POST's own task (see
        ``Hooks.run_in_session``), else None (the POST feeds the session's connection)."""
        if (
            self.hooks.run_in_session is None
            or self.hooks.decode_one is None
            or session.connection is None
            or session.legacy
            or not isinstance(message, dict)
            or message.get("method") == "initialize"
        ):
            return None
        return self.hooks.decode_one(body)

    async def _run_in_session(
        self,
        exchange: Exchange,
        session: HttpSession,
        stream: ResponseStream,
        envelope: Any,
        accept_json: bool,
        accept_sse: bool,
        headers: list[tuple[str, str]],
    ) -> None:
        """Run one session request in this task. Its answer is JSON when it is the only
        message; if the request sends notifications first, a writer task answers from the
        stream (as SSE for clients that take it) while the request runs on."""
        assert self.hooks.run_in_session is not None and self.hooks.start_soon is not None
        connection = session.connection
        writer_done: trio.Event | None = None

        async def write_stream() -> None:
            assert writer_done is not None
            try:
                await answer(
                    exchange,
                    stream,
                    accept_json=accept_json,
                    accept_sse=accept_sse,
                    headers=headers,
                    resumable=True,
                    prime_id=stream.prime_id,  # stored before the event that woke us
                    retry_ms=self.limits.sse_retry_ms,
                    keepalive=self.limits.sse_keepalive,
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
                # The client left (its events stay in the store for Last-Event-ID).
                log.info("stream writer stopped: the client is gone stream=%s", stream.id)
            finally:
                writer_done.set()

        def start_writer() -> None:
            nonlocal writer_done
            if accept_sse and not exchange.disconnected.is_set():
                writer_done = trio.Event()
                self.hooks.start_soon(connection, write_stream)  # type: ignore[misc]

        stream.on_message = start_writer
        try:
            reply = await self.hooks.run_in_session(connection, envelope)
        finally:
            stream.on_message = None
        if writer_done is not None or exchange.disconnected.is_set():
            # The answer joins the stream (and the replay store, for a client that left).
            if reply is not None:
                await session.route([(reply, None)])
            else:
                session.cancelled(envelope.id)
            if writer_done is not None:
                await writer_done.wait()
            return
        session.close_stream(stream)
        if reply is None:  # cancelled by the client: no response (as answer() does)
            if accept_sse:
                await exchange.start_stream(200, "text/event-stream", headers, end=True)
            else:
                await exchange.respond(204, b"", headers=headers)
        elif accept_json:
            await exchange.respond(200, reply, headers=headers)
        else:
            prime_id = await session.prime(stream)
            event_id = await session.store.append(session.id, stream.id, reply)
            opening = sse_event(None, prime_id, self.limits.sse_retry_ms)
            await exchange.start_stream(
                200,
                "text/event-stream",
                [*headers, ("X-Accel-Buffering", "no")],
                first=opening + sse_event(reply, event_id),
                end=True,
            )

    # -- GET / DELETE (handshake era) -----------------------------------------------------

    async def get(self, request: HttpRequest, exchange: Exchange) -> None:
        if request.header("mcp-session-id") is None:
            # 2026-07-28 "Backward Compatibility": GET gets 405; there is no session-less
            # standing stream in either era.
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "POST")])
        principal = await self.principal(request)
        session = self.session(request, principal)
        if not parse_accept(request.header("accept"))[1]:
            raise _bad(406, "Not Acceptable: a GET must accept text/event-stream")
        if session.get_streams >= self.limits.max_streams_per_session:
            raise _bad(429, "Too Many Requests: too many SSE streams for this session")
        last = request.header("last-event-id")
        replay: list[tuple[str, bytes]] = []
        skip = 0
        if last is not None:
            found = await session.store.replay(session.id, last)
            if found is None:
                raise _bad(400, "Bad Request: unknown Last-Event-ID")
            stream_id, replay = found
            stream: ResponseStream | None = session.streams.get(stream_id)
            skip = _seq(replay[-1][0]) if replay else _seq(last)
        else:
            stream = session.standing
            if stream.attached:
                raise _bad(409, "Conflict: this session's GET stream is already open")
        headers = [("Mcp-Session-Id", session.id), ("X-Accel-Buffering", "no")]
        session.get_streams += 1
        session.in_use += 1
        try:
            await exchange.start_stream(200, "text/event-stream", headers)
            if stream is session.standing and last is None:
                prime = await session.prime(stream)
                await exchange.write(sse_event(None, prime, self.limits.sse_retry_ms))
            else:
                await exchange.write(b"retry: %d\n\n" % self.limits.sse_retry_ms)
            for event_id, data in replay:
                await exchange.write(sse_event(data, event_id))
            if stream is not None and not stream.attached and not stream.done:
                stream.attached = True
                stream.overflowed = False
                try:
                    if not await pump(exchange, stream, self.limits.sse_keepalive, skip):
                        return
                finally:
                    stream.attached = False
                    session.release(stream)
            await exchange.end()
        finally:
            session.get_streams -= 1
            session.in_use -= 1
            session.touch()

    async def delete(self, request: HttpRequest, exchange: Exchange) -> None:
        if request.header("mcp-session-id") is None:
            raise HttpError(405, "Method Not Allowed", headers=[("Allow", "POST")])
        principal = await self.principal(request)
        session = self.session(request, principal)
        session.end()
        await exchange.respond(200, b"")

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
    ) -> None:
        if isinstance(message, list):
            raise _bad(
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
        mismatch = check_headers(request, message, meta_version, self.hooks.tool_header_params)
        if mismatch is not None:
            raise _bad(400, f"Header mismatch: {mismatch}", -32020, request_id)
        is_request = "method" in message and request_id is not None
        if is_request and self.hooks.decode_one is not None and _direct(message, accept_sse):
            envelope = self.hooks.decode_one(request.body)
            if envelope is not None:
                await self._dispatch_direct(
                    request, exchange, envelope, accept_json, accept_sse, token
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
            if exchange.disconnected.is_set():
                # 2026-07-28 "Cancellation": closing the response stream cancels the request.
                log.info("client closed the stream: cancelling conn=%s", request.connection_id)
                nursery.cancel_scope.cancel()

    async def _dispatch_direct(
        self,
        request: HttpRequest,
        exchange: Exchange,
        envelope: Any,
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
                envelope, send, f"http-post-{next(_post_ids)}", token
            )
        except Exception:
            log.exception("connection crashed conn=%s", request.connection_id)
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
_STREAMING_META: Final = ("progressToken", "io.modelcontextprotocol/logLevel")


def _direct(message: dict[str, Any], accept_sse: bool) -> bool:
    """Whether a modern request can take the direct path: its answer is one message (not
    the ``subscriptions/listen`` stream) and nothing asked for notifications beside it
    (which a JSON-only client would not get anyway)."""
    if message.get("method") == "subscriptions/listen":
        return False
    if not accept_sse:
        return True
    meta = message["params"]["_meta"]  # _meta_version found it: a dict in a dict
    return not any(key in meta for key in _STREAMING_META)


def _meta_version(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _seq(event_id: str) -> int:
    number = event_id.rpartition("_")[2]
    return int(number) if number.isdigit() else 0
