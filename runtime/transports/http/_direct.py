"""A request POSTed to a handshake-era session, run in its POST's own task.

A single request (not ``initialize``, which opens the session's connection) runs as the
session connection's own request (``SessionConnection.run_request``: in flight there,
cancellable by ``notifications/cancelled``, bounded by ``request_timeout``, what it sends
routed by its id) but in the task of the POST that carried it: no body is fed to the
connection, no batch is judged, and no response stream is made unless it is needed. Its
answer is JSON when it is the only message (2025-11-25 basic/transports, "Sending Messages to
the Server": the server MAY answer with JSON); a request that sends a message first (progress,
a log, a server request) gets its stream then (``DirectSlot``), and a writer task answers the
POST from it, as SSE for a client that takes it, while the request runs on.
"""

from __future__ import annotations

import functools
import logging

import trio

from ...protocol import Envelope, ToolCall, id_key
from ...stores import StoreUnavailable
from ._edge import HttpLimits
from ._exchange import Exchange
from ._session import HttpSession, in_flight
from ._streams import ResponseStream, answer, sse_event

__all__ = ["DirectRequests"]

log = logging.getLogger("mcp_runtime.http")


class DirectRequests:
    """Runs the single requests POSTed to handshake-era sessions in their POSTs' tasks."""

    def __init__(self, limits: HttpLimits) -> None:
        self.limits = limits

    async def run(
        self,
        exchange: Exchange,
        session: HttpSession,
        envelope: Envelope,
        accept_json: bool,
        accept_sse: bool,
        headers: list[tuple[str, str]],
        prepared: ToolCall | None,
    ) -> None:
        """Run ``envelope``, one request POSTed to ``session``, in this task and answer
        its POST (``headers``: the session's). ``prepared``: the reading of its params made
        with the body, for its handler."""
        connection = session.connection
        assert connection is not None  # (``HandshakeEra.post_session`` looked)
        key = id_key(envelope.id)  # type: ignore[arg-type]
        slot = session.open_direct(key)
        if slot is None:
            session.touch()  # (a request to the session all the same)
            raise in_flight(session, [key])
        writer_done: trio.Event | None = None

        def start_writer() -> None:
            nonlocal writer_done
            if accept_sse and not exchange.hung_up_seen:
                assert slot.stream is not None  # (made for the message that calls this)
                writer_done = trio.Event()
                # (The writer is built here, when a message comes before the answer: most
                # such requests are answered as JSON with none.)
                write = functools.partial(
                    self._write,
                    exchange,
                    slot.stream,
                    accept_json,
                    accept_sse,
                    headers,
                    writer_done,
                )
                try:
                    connection.start_soon(write)
                except RuntimeError:  # the connection is ending: answer at the end instead
                    writer_done = None

        async def answer_with(reply: bytes | None) -> None:
            if session.shared is not None:
                try:
                    await session.sync()  # e.g. logging/setLevel: before the client hears back
                except StoreUnavailable as exc:
                    log.warning("session change not shared session=%s: %s", session.id[:8], exc)
            if writer_done is not None or exchange.hung_up_seen:
                # The answer joins the stream (and the replay store, for a client that left).
                if reply is not None:
                    await session.route([(reply, None)])
                else:
                    session.cancelled(envelope.id)
                if writer_done is not None:
                    await writer_done.wait()
                return
            if reply is None:  # cancelled by the client: no response (as answer() does)
                session.close_direct(slot)
                if accept_sse:
                    await exchange.start_stream(200, "text/event-stream", headers, end=True)
                else:
                    await exchange.respond(204, b"", headers=headers)
            elif accept_json:
                session.close_direct(slot)
                await exchange.respond(200, reply, headers=headers)
            else:
                stream = session.stream_of(slot)  # (its events are stored)
                session.close_direct(slot)
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

        # Run under the HTTP connection's generation scope when it has one (no scope of the
        # request's own to make, enter and leave); cancelled through it, the request is
        # answered by the connection once it left that scope (``Exchange.after_cancel``).
        scope = exchange.request_scope
        cancelled: list[bytes | None] = []
        slot.on_message = start_writer
        # In use before the first checkpoint since ``find``, touched once at the end (see
        # ``HandshakeEra.post_session``): the idle time starts when the request is answered.
        session.in_use += 1
        try:
            try:
                if scope is None:
                    reply = await connection.run_request(envelope, None, None, prepared)
                elif prepared is None:
                    reply = await connection.run_request(envelope, scope, cancelled.append)
                else:
                    reply = await connection.run_request(
                        envelope, scope, cancelled.append, prepared
                    )
            except trio.Cancelled:
                if cancelled:
                    exchange.after_cancel = functools.partial(answer_with, cancelled[0])
                raise
            finally:
                slot.on_message = None
                if slot.stream is not None:
                    slot.stream.on_message = None
            await answer_with(reply)
        finally:
            session.in_use -= 1
            session.touch()
            if slot.stream is not None:
                session.release(slot.stream)

    async def _write(
        self,
        exchange: Exchange,
        stream: ResponseStream,
        accept_json: bool,
        accept_sse: bool,
        headers: list[tuple[str, str]],
        done: trio.Event,
    ) -> None:
        """The writer task of a request run in its POST's task (:meth:`run`) that sent a
        message before its answer: it answers the POST from the request's stream
        while the request runs on, and sets ``done`` when it stopped."""
        try:
            # The priming event was stored before the event that woke this writer.
            await answer(
                exchange, stream, self.limits, accept_json, accept_sse, headers, stream.prime_id
            )
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
            # The client left (its events stay in the store for Last-Event-ID).
            log.info("stream writer stopped: the client is gone stream=%s", stream.id)
        finally:
            done.set()
