"""A small HTTP/1.1 server on trio sockets: limits, timeouts, streaming responses.

One task per TCP connection reads requests (``_http11``: keep-alive, pipelining-safe), enforces
the edge policy and the limits of :class:`HttpLimits` before the application sees anything,
and hands each request to an ``HttpApp`` with an :class:`Exchange` to answer through: one
whole response, or a streamed (chunked) one such as an SSE stream. While an application
waits on something, a reader task keeps reading the socket, so that a client that hangs up
is noticed at once (``Exchange.disconnected``); this is how closing an SSE stream cancels
its request. No task, nursery or cancel scope is made for a request answered at once.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import sys
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import Final

import trio

from ... import eager
from ...protocol import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    Pieces,
    Refusal,
    error_reply,
    internal_error,
    overloaded,
)
from ._edge import EdgePolicy, HttpLimits, authority_of
from ._exchange import (
    Exchange,
    HttpApp,
    HttpError,
    HttpRequest,
    PersistentHttp10Exchange,
    error_body,
)
from ._http11 import BodyReader, ProtocolError, RequestHead, RequestParser, response_head
from ._slots import ConnectionSlots, address_key
from ._socket import SocketIO

__all__ = ["serve_http_listeners"]

log = logging.getLogger("mcp_runtime.http")
_ids = itertools.count(1)
#: Requests in a row that did not wait, after which the reader task stops (see _run_app).
_EAGER_RUN: Final = 8


async def serve_http_listeners(
    listeners: list[trio.SocketListener],
    app: HttpApp,
    *,
    policy: EdgePolicy,
    limits: HttpLimits,
    max_body_size: int,
    write_timeout: float,
    shutdown: trio.Event,
    handler_nursery: trio.Nursery,
    on_upgrade: Callable[[HttpRequest, trio.SocketStream, bytes], Awaitable[None]] | None = None,
    drain: float = 0.0,
    on_refusal: Callable[[Refusal], None] | None = None,
) -> None:
    """Accept on ``listeners`` until ``shutdown``; each connection runs in
    ``handler_nursery``. Returns once accepting stopped (connections may still run).

    ``on_refusal``: told of each request refused here, before the app (the parser's 400,
    413, 431, 501, the timeouts' 408, the Host/Origin allow-lists' 403, the connection
    cap's 503); None (the default) builds nothing.

    ``drain``: after ``shutdown``, go on accepting for up to this many seconds while the
    connections open at that moment are still running, each new connection answered one
    request and closed (the app sees ``shutdown`` set: readiness probes hear "draining"
    instead of a refused or hanging connection)."""
    slots = ConnectionSlots(limits)
    # With an observer, drivers of a subclass that has it: nothing per connection without.
    driver_type = (
        _Driver
        if on_refusal is None
        else type("_ObservedDriver", (_Driver,), {"on_refusal": staticmethod(on_refusal)})
    )
    drivers: set[_Driver] = set()
    # The connections open at shutdown, and the event set when the last of them ended.
    draining: set[_Driver] = set()
    drained = trio.Event()

    async def handle(stream: trio.SocketStream) -> None:
        try:
            key = address_key(stream.socket.getpeername())
        except OSError:  # (gone already)
            key = None
        limit = slots.take(key)
        if limit is not None:
            await _refuse(stream, limit, limits, on_refusal)
            return
        driver = None
        try:
            driver = driver_type(
                stream, app, policy, limits, max_body_size, write_timeout, shutdown, on_upgrade
            )
            # Its reader task (only while an app waits) runs beside the connections: a
            # nursery per connection would cost every idle GET stream its memory.
            driver.io.nursery = handler_nursery
            drivers.add(driver)
            await driver.run()
        finally:
            if driver is not None:
                drivers.discard(driver)
                if driver in draining:
                    draining.discard(driver)
                    if not draining:
                        drained.set()
            slots.give_back(key)

    with trio.CancelScope() as accept_scope:

        async def stop_accepting() -> None:
            await shutdown.wait()
            draining.update(drivers)
            for driver in list(draining):  # idle keep-alive connections close now
                driver.stop_if_idle()
            if draining:
                with trio.move_on_after(drain):
                    await drained.wait()
            accept_scope.cancel()

        handler_nursery.start_soon(stop_accepting)
        handler_nursery.start_soon(_sweep_deadlines, drivers, limits, shutdown)
        await trio.serve_listeners(handle, listeners, handler_nursery=handler_nursery)


async def _refuse(
    stream: trio.SocketStream,
    limit: str,
    limits: HttpLimits,
    on_refusal: Callable[[Refusal], None] | None,
) -> None:
    """503 for a connection past ``limit`` (a field of ``HttpLimits``), then close it."""
    if limit == "max_connections":
        log.warning("refusing connection reason=max-connections limit=%d", limits.max_connections)
        reason = "Service Unavailable: too many connections"
        answer = _BUSY
    else:
        per_address = limits.connections_per_address
        log.warning(
            "refusing connection reason=max-connections-per-address limit=%d peer=%s",
            per_address,
            _peer(stream),
        )
        reason = "Service Unavailable: too many connections from this address"
        # The body names the limit (-32010 with ``data.maxConnectionsPerAddress``).
        error = overloaded(
            "too many connections from this address", maxConnectionsPerAddress=per_address
        )
        body = error_reply(error)
        fields = [("Retry-After", "1"), ("Content-Type", "application/json")]
        answer = response_head(503, fields, length=len(body), close=True) + body
    if on_refusal is not None:
        refusal = Refusal(None, reason, "http", "http-refused", status=503, peer=_peer(stream))
        _observe(on_refusal, refusal)
    # (A client that reset the connection already is simply gone: nothing to answer.)
    with trio.move_on_after(1), contextlib.suppress(trio.BrokenResourceError, OSError):
        await stream.send_all(answer)
        if limit != "max_connections":
            # The client is sending its request meanwhile: closing with its bytes unread
            # would reset the connection, and the client could lose the 503 to that. Say
            # the answer is whole, then take what comes (bounded: a second, 64 KiB).
            await stream.send_eof()
            taken = 0
            while taken < 64 * 1024 and (data := await stream.receive_some(16 * 1024)):
                taken += len(data)
    await trio.aclose_forcefully(stream)


#: The answer past ``max_connections``.
_BUSY: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
    b"Connection: close\r\nRetry-After: 1\r\n\r\n"
)


async def _awaited(awaitable: Awaitable[None]) -> None:
    await awaitable


def _peer(stream: trio.SocketStream) -> str | None:
    try:
        address = stream.socket.getpeername()
    except OSError:
        return None
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


def _observe(observe: Callable[[Refusal], None], refusal: Refusal) -> None:
    try:
        observe(refusal)
    except Exception:
        log.exception("refusal observer failed")


async def _sweep_deadlines(drivers: set[_Driver], limits: HttpLimits, shutdown: trio.Event) -> None:
    """Close connections whose idle/head/body deadline passed. One task for all of them:
    moving a trio deadline costs as much as a cancel scope, and these deadlines move up to
    three times per request, while a sweep a few times a second costs nothing per request."""
    shortest = min(
        limits.header_timeout,
        limits.keep_alive_timeout,
        limits.body_timeout,
        limits.body_total_timeout,
        limits.body_rate_grace if limits.min_body_rate else math.inf,
    )
    interval = max(0.05, min(1.0, shortest / 4))
    while not (shutdown.is_set() and not drivers):
        if shutdown.is_set():
            await trio.sleep(0.05)  # draining: end soon after the last connection does
        else:
            with trio.move_on_after(interval):  # shutdown wakes it (a listener stops at once)
                await shutdown.wait()
        now = trio.current_time()
        for driver in list(drivers):
            if driver.deadline <= now:
                driver.expire()
            elif driver.phase == "idle" and driver.room:
                driver.room = bytearray()  # idle between requests: free its body room


class _Driver:
    """One connection: this task reads, parses requests and runs the app. While an app
    waits on something (a slow tool, an SSE stream), a reader task reads on (ahead: a
    pipelined next request waits in the parser) so that a client hanging up mid-request is
    noticed at once (``Exchange.hung_up``); an app that answers without waiting needs none.

    Socket I/O is its :class:`SocketIO`'s (straight to the descriptor). One cancel scope
    at a time spans the connection (its generation, which stopping it cancels);
    ``deadline`` is the current phase's timeout (idle, head, body; none while the
    application runs), enforced by ``_sweep_deadlines``.
    """

    #: Told of what ``_reject`` answers (a subclass's, made by ``serve_http_listeners``
    #: when there is an observer).
    on_refusal: Callable[[Refusal], None] | None = None

    def __init__(
        self,
        stream: trio.SocketStream,
        app: HttpApp,
        policy: EdgePolicy,
        limits: HttpLimits,
        max_body_size: int,
        write_timeout: float,
        shutdown: trio.Event,
        on_upgrade: Callable[[HttpRequest, trio.SocketStream, bytes], Awaitable[None]] | None,
    ) -> None:
        #: Where a Content-Length body that did not come with its head is read
        #: (``_read_into_room``): kept while the connection is busy, dropped by
        #: ``_sweep_deadlines`` once it is idle (an idle connection holds no body's worth).
        self.room = bytearray()
        self.io = io = SocketIO(
            stream.socket,
            RequestParser(limits.max_header_size, limits.max_header_count),
            write_timeout,
            read_cap=limits.max_header_size + max_body_size,
        )
        self.parser = io.parser
        #: What an ``Exchange`` writes with (the socket's, not a frame of ours per write).
        self.write = io.write
        self.write_now = io.write_now
        self.write_rest = io.write_rest
        self.watch = io.watch
        self.write_timeout = write_timeout
        self.stream = stream
        self.app = app
        self.policy = policy
        self.limits = limits
        self.max_body_size = max_body_size
        self.shutdown = shutdown
        self.on_upgrade = on_upgrade
        self.id = f"http-{next(_ids)}"
        #: What the connection is doing: "idle" (between requests), "head", "body", "app".
        self.phase = "idle"
        #: Waiting for the connection's first request (not a keep-alive pause).
        self.awaiting_first = True
        #: The body being read is held to ``min_body_rate`` (its deadline is the rate's).
        self._under_rate = False
        self.deadline = math.inf
        self._edge_passed: tuple[str | None, str | None] | None = None
        #: The last request head that passed the edge checks and was no upgrade. The parser
        #: hands out the same (immutable) head for the same bytes, and a keep-alive client
        #: repeats its head: that head is not checked again (benchmarks/README.md, "A
        #: repeated request head checked once").
        self._head_passed: RequestHead | None = None
        #: The exchange that answers ``_head_passed`` (``_one_request``).
        self._exchange_type: type[Exchange] = Exchange
        #: Requests in a row answered without waiting while the reader task ran.
        self._eager_run = 0
        #: The scope requests run under until one is cancelled through it (see
        #: ``_serve_generation``; after that, the scope its answer runs in), and the
        #: exchange being answered in it. Stopping the connection cancels it: one scope,
        #: not one of the connection's around its generations (an idle GET stream or
        #: listen holds one scope of its connection's).
        self._generation: trio.CancelScope | None = None
        self._exchange: Exchange | None = None
        #: The connection is to close (:meth:`_stop`), and then: that cancel interrupted it
        #: (``_timed_out`` says what to answer).
        self._stopping = False
        self._stopped = False

    def _stop(self) -> None:
        self._stopping = True
        if self._generation is not None:
            self._generation.cancel()

    def abort(self) -> None:
        self._stop()

    def write_pair(self, head: bytes, body: bytes | Pieces) -> Awaitable[None]:
        """A big response's head and body (see ``SocketIO.write_pair``); a method, not an
        attribute as ``write`` is, so that a connection holds no bound method for it."""
        return self.io.write_pair(head, body)

    def expire(self) -> None:
        """The phase deadline passed: stop (``_timed_out`` says what to answer)."""
        if self.phase != "app":
            self._stop()

    def stop_if_idle(self) -> None:
        """At shutdown: a keep-alive connection waiting for its next request closes now. A
        connection still waiting for its first request is left to send it (within
        ``header_timeout``) and is answered, as one accepted while draining is: its client
        connected before it could know, and closing it would reset the request on its way
        (tests/stores/test_readiness.py)."""
        if self.phase == "idle" and not self.awaiting_first:
            self._stop()

    async def run(self) -> None:
        """Serve the connection until it closes. Its reader task (``SocketIO``, started in
        the nursery given as ``io.nursery``) has ended before the socket closes. (One frame
        for both: an idle stream's task holds every frame of its chain.)"""
        first = True
        try:
            try:
                # A connection accepted while draining is answered one request.
                while first or not self.shutdown.is_set():
                    if not await self._serve_generation(first):
                        break
                    first = False
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                log.debug("http connection gone conn=%s error=%r", self.id, exc)
                return
            except trio.TooSlowError:
                log.info("closing http conn=%s reason=write-timeout", self.id)
                return
            except ProtocolError as exc:
                await self._reject(exc.status, exc.reason)
                return
            except Exception:  # a fault of ours costs this connection, never the server
                log.exception("http connection failed conn=%s", self.id)
                await self._reject(500, "Internal Server Error", INTERNAL_ERROR)
                return
            if self._stopped:
                await self._timed_out(first)
        finally:
            self.io.close()
            await self.io.stop_reader()  # (shielded: the reader is cancelled and ends)
            await trio.aclose_forcefully(self.stream)

    # -- requests -----------------------------------------------------------------------

    async def _serve_generation(self, first: bool) -> bool:
        """Serve requests under one cancel scope (``Exchange.request_scope``) until the
        connection must close (False), or a request an app ran under it was cancelled
        through it: that request is answered here, outside the cancelled scope, and a fresh
        generation serves on (True). As core/_reader.py's generations: one scope for many
        requests instead of one each (benchmarks/README.md, "One cancel scope per
        connection generation")."""
        generation = self._generation = trio.CancelScope()
        if self._stopping:
            generation.cancel()
        with generation:
            while first or not self.shutdown.is_set():
                if not await self._one_request(first):
                    break
                first = False
        # The exchange answered last (``_one_request`` sets it); only one that ran in this
        # generation can have been cancelled through it.
        exchange, self._exchange = self._exchange, None
        if not generation.cancelled_caught:
            return False
        if self._stopping:  # the connection was stopped through it
            self._stopped = True
            return False
        if exchange is None or exchange.after_cancel is None:
            return False  # nothing can answer it: the connection closes
        answer, exchange.after_cancel = exchange.after_cancel, None
        answering = self._generation = trio.CancelScope()  # (stopping cancels it)
        with answering:
            await answer()
        if answering.cancelled_caught:
            self._stopped = True
            return False
        return exchange.finished and not exchange.close_after and not exchange.hung_up_seen

    async def _timed_out(self, first: bool) -> None:
        phase = self.phase
        if phase == "idle":
            if first and not self.shutdown.is_set():
                log.info("closing http conn=%s reason=no-request", self.id)
        elif phase == "head":
            log.warning("closing http conn=%s reason=header-timeout", self.id)
            await self._reject(408, "Request Timeout: request head too slow")
        elif phase == "body" and self._under_rate:
            rate = self.limits.min_body_rate
            log.warning("closing http conn=%s reason=body-rate min_body_rate=%g", self.id, rate)
            await self._reject(
                408, f"Request Timeout: body slower than {rate:g} bytes/s (min_body_rate)"
            )
        elif phase == "body":
            log.warning("closing http conn=%s reason=body-timeout", self.id)
            await self._reject(408, "Request Timeout: body too slow")
        else:
            # 2026-07-28 "Cancellation": closing the response stream cancels the request.
            log.info("client closed the stream: cancelled conn=%s", self.id)

    async def _reject(self, status: int, reason: str, code: int = INVALID_REQUEST) -> None:
        """Answer with an error and close (used before the app sees the request)."""
        log.info("http reject conn=%s status=%d reason=%s", self.id, status, reason)
        if self.on_refusal is not None:
            refusal = Refusal(code, reason, "http", self.id, status=status, peer=_peer(self.stream))
            _observe(self.on_refusal, refusal)
        if self.phase == "app" or self.io.broken is not None:
            return  # a response may have started: nothing more can be said
        body = error_body(reason, code)
        head = response_head(
            status, [("Content-Type", "application/json")], length=len(body), close=True
        )
        with trio.move_on_after(min(self.write_timeout, 5.0)):
            with contextlib.suppress(trio.BrokenResourceError, trio.TooSlowError):
                await self.write(head + body)

    async def _next_head(self, first: bool) -> RequestHead | None:
        """The next request head, waiting (idle, then head deadlines) for its bytes."""
        parser = self.parser
        if parser.buffer:
            self.phase = "head"  # the last response is complete: errors can be answered again
            head = parser.next_head()
            if head is not None:
                if not first:  # pipelined: let other tasks run between requests
                    await trio.lowlevel.cancel_shielded_checkpoint()
                return head
            if self.deadline == math.inf:  # part of the next request came with the last one
                self.deadline = trio.current_time() + self.limits.header_timeout
        else:
            # (No shutdown check: ``_serve_generation`` made it just before, with no wait
            # between.)
            if self.io.eof:
                return None
            self.phase = "idle"
            self.awaiting_first = first
            wait = self.limits.header_timeout if first else self.limits.keep_alive_timeout
            self.deadline = trio.current_time() + wait
            while not parser.buffer:
                try:
                    await self.io.wait_data()
                except trio.BrokenResourceError:
                    return None  # the client closed an idle connection
            self.phase = "head"
            head = parser.next_head()
            if head is not None:  # the whole head came in one read: the common case
                return head
            if not first:
                self.deadline = trio.current_time() + self.limits.header_timeout
        while (head := parser.next_head()) is None:
            await self.io.wait_data()
        return head

    async def _read_body(self, head: RequestHead) -> bytes | memoryview:
        """The body of a request whose body did not come whole with its head."""
        reader = BodyReader(head, self.max_body_size)
        if reader.done:
            return b""
        if head.expect_continue and not self.parser.buffer:
            await self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.phase = "body"
        started = trio.current_time()
        whole = started + self.limits.body_total_timeout  # however it trickles
        buffer = self.parser.buffer
        self.deadline = self._body_deadline(started, whole, len(buffer))
        length = head.content_length
        if length is not None and length > 0:
            return await self._read_into_room(length, started, whole)
        while not reader.read(buffer):
            await self.io.wait_data()
            self.deadline = self._body_deadline(started, whole, len(reader.body) + len(buffer))
        return bytes(reader.body)

    def _body_deadline(self, started: float, whole: float, got: int) -> float:
        """The body phase's deadline once ``got`` bytes of the body (begun at ``started``)
        are in: ``body_timeout`` from now, ``whole`` (the body's total deadline), and the
        moment the body's average rate falls under ``min_body_rate`` (``got`` bytes are that
        rate's worth of ``got / min_body_rate`` seconds), ``body_rate_grace`` at the
        earliest. Computed per read, for bodies that did not come with their head."""
        limits = self.limits
        deadline = min(trio.current_time() + limits.body_timeout, whole)
        rate = limits.min_body_rate
        if rate:
            by_rate = started + max(limits.body_rate_grace, got / rate)
            self._under_rate = by_rate < deadline
            if self._under_rate:
                return by_rate
        return deadline

    async def _read_into_room(self, length: int, started: float, whole: float) -> memoryview:
        """A Content-Length body read from the socket straight into the connection's
        ``room`` (kept from one request to the next while the connection is busy), then
        copied out once. Through the parser's buffer it was read in 64 KiB pieces, each
        appended, then copied out; and each big temporary, freshly allocated, was faulted in
        page by page again on every request (benchmarks/README.md, "A body read into the
        connection's room"). A reader task left from a request that waited would feed
        the parser: this task reads for itself (the app restarts the reader if it waits)."""
        await self.io.stop_reader()
        room = self.room
        if len(room) < length:
            room = self.room = bytearray(length)
        buffer = self.parser.buffer  # the start of the body, read with its head
        got = len(buffer)
        room[:got] = buffer  # (same length: the room is never resized)
        buffer.clear()
        with memoryview(room) as view:
            while got < length:
                got += await self.io.read_into(view[got:length])
                self.deadline = self._body_deadline(started, whole, got)
        # The room itself is the body (no 1 MiB copy, no fresh pages to fault in);
        # ``_one_request`` gives it up afterwards if anything still holds it.
        return memoryview(room).toreadonly()[:length]

    async def _one_request(self, first: bool) -> bool:
        """Serve one request; False when the connection must close."""
        head = await self._next_head(first)
        if head is None:
            return False
        if head is not self._head_passed:
            header = head.index.get
            host = header("host")
            if head.target[:1] != "/" and (authority := authority_of(head.target)) is not None:
                # RFC 9112 section 3.2.2: an absolute-form target's authority replaces Host,
                # so it is what the allow-list checks.
                host = authority
            edge = (host, header("origin"))
            if edge != self._edge_passed:  # a keep-alive client sends the same values
                reason = self.policy.check(*edge)
                if reason is None:
                    self._edge_passed = edge
                elif self.policy.check(*edge, head.path) is not None:
                    raise ProtocolError(403, f"Forbidden: {reason}")
                # (Else a health path, which answers any Host: passed, not remembered.)
            if self.on_upgrade is not None and (header("upgrade") or "").lower() == "websocket":
                # Hand the raw stream (and any bytes already read) to the WebSocket layer,
                # once the reader (if one started) has stopped: a cancelled wait reads
                # nothing.
                await self.io.stop_reader()
                self.deadline = math.inf
                self.phase = "app"
                request = HttpRequest(
                    head.method, head.target, head.path, head.query, head.headers, b"", self.id,
                    head.index,
                )  # fmt: skip
                await self.on_upgrade(request, self.stream, bytes(self.parser.buffer))
                return False
            self._head_passed = head
            # Chosen once per distinct head (a keep-alive client repeats its head): an
            # HTTP/1.0 client that asked for a persistent connection must be told it has one
            # (RFC 9112 appendix C.2.2); HTTP/1.1 answers pay nothing for that.
            self._exchange_type = (
                Exchange
                if head.version == (1, 1) or not head.keep_alive
                else PersistentHttp10Exchange
            )
        # The whole body usually came with its head: taken here, no coroutine for it.
        body: bytes | memoryview | None = BodyReader.whole(
            head, self.parser.buffer, self.max_body_size
        )
        if body is None:
            body = await self._read_body(head)
        # Positional: a dataclass called with keywords builds a dict of them first.
        request = HttpRequest(
            head.method, head.target, head.path, head.query, head.headers, body, self.id, head.index
        )
        exchange = self._exchange = self._exchange_type(self, head, self._generation)
        self.phase = "app"
        self.deadline = math.inf
        try:
            await self._run_app(request, exchange)
        finally:
            if type(request.body) is memoryview:
                # The body was the room (``_read_into_room``). Whatever still holds it or a
                # view of it (a msgspec.Raw of its params kept by a session, a published
                # message, a traceback) keeps this one: the next body is read into a new
                # room, never over bytes in use. Two references are the attribute's and
                # getrefcount's own (this frame's ``body`` lets go of it too).
                request.body = body = b""
                if sys.getrefcount(self.room) > 2:
                    self.room = bytearray()
        return exchange.finished and not exchange.close_after and not exchange.hung_up_seen

    async def _run_app(self, request: HttpRequest, exchange: Exchange) -> None:
        """Run the app in this task. Most answers never wait (the response fits the
        socket buffer), so the first step runs eagerly; an app that does wait starts the
        connection's reader task (hang-ups are noticed while apps wait). The reader stays
        while requests keep waiting (starting one costs more than handing data over), and
        stops after a run of ``_EAGER_RUN`` requests that did not: from then on this task
        reads for itself again, one scheduler round trip per request less.

        The app's own coroutine is the one run (its failures are answered here, in the
        same frame): no coroutine of ours around it per request."""
        io = self.io
        io.exchange = exchange
        if io.eof:  # the client hung up before the app started
            exchange.hung_up()
        done = True
        try:
            try:
                step = self.app(request, exchange)
                if type(step) is not CoroutineType:  # (an app may return any awaitable)
                    step = _awaited(step)
                done, suspended = eager.start(step)
                if not done:
                    assert isinstance(suspended, eager.Suspended)
                    self._eager_run = 0
                    io.start_reader()
                    await eager.finish(suspended)
            except HttpError as exc:
                if not exchange.started:
                    body = exc.body if exc.body is not None else error_body(exc.reason)
                    await exchange.respond(exc.status, body, headers=exc.headers)
                else:
                    log.warning("http error after response start conn=%s: %s", self.id, exc)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                # The client went away while the app was writing (a GET stream it closed,
                # say): routine, not an application failure.
                log.info("client gone while answering conn=%s: %s", self.id, exc)
                exchange.close_after = True
            except Exception:
                log.exception("http app failed conn=%s", self.id)
                if not exchange.started:
                    exchange.close_after = True
                    await exchange.respond(500, error_reply(internal_error()))
        finally:
            io.exchange = None
        if done and io.reader_running:
            self._eager_run += 1
            if self._eager_run >= _EAGER_RUN:
                await io.stop_reader()
