"""A small HTTP/1.1 server on h11 and trio streams: limits, timeouts, streaming responses.

One task per TCP connection reads requests with h11 (keep-alive, pipelining-safe), enforces
the edge policy and the limits of :class:`HttpLimits` before the application sees anything,
and hands each request to an ``HttpApp`` with an :class:`Exchange` to answer through: one
whole response, or a streamed (chunked) one such as an SSE stream. One reader task per
connection keeps reading the socket (also while the application runs), so that a client
that hangs up is noticed at once (``Exchange.disconnected``); this is how closing an SSE
stream cancels its request. No task or nursery is made per request.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

import h11
import msgspec
import trio

from ._edge import EdgePolicy, HttpLimits

__all__ = ["Exchange", "HttpApp", "HttpError", "HttpRequest", "serve_http_listeners"]

log = logging.getLogger("mcp_runtime.http")
_RECEIVE_SIZE: Final = 64 * 1024
_ids = itertools.count(1)


class HttpError(Exception):
    """Answer the request with ``status``; ``body`` (JSON bytes) and headers optional."""

    def __init__(
        self,
        status: int,
        reason: str,
        body: bytes | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.body = body
        self.headers = headers or []


@dataclass(slots=True)
class HttpRequest:
    method: str
    target: str
    path: str
    query: dict[str, str]
    #: Lower-cased names, values as sent (decoded latin-1).
    headers: list[tuple[str, str]]
    body: bytes
    connection_id: str
    _index: dict[str, str] | None = field(default=None, repr=False, compare=False)

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (lower case); repeated fields joined with ", "."""
        index = self._index
        if index is None:  # built once: the endpoint asks for a dozen headers per request
            index = {}
            for key, value in self.headers:
                index[key] = f"{index[key]}, {value}" if key in index else value
            self._index = index
        return index.get(name)


class Exchange:
    """Answers one request. Exactly one of ``respond`` or ``start_stream`` ... ``end``.

    Each call writes once (head, body and end of message joined): one checkpoint and one
    syscall per response, and no half-written head for a peer to wait on.
    """

    __slots__ = (
        "_conn",
        "_scopes",
        "_stream",
        "_write_timeout",
        "close_after",
        "disconnected",
        "finished",
        "started",
    )

    def __init__(self, conn: h11.Connection, stream: trio.abc.Stream, write_timeout: float):
        self._conn = conn
        self._stream = stream
        self._write_timeout = write_timeout
        self.started = False
        self.finished = False
        #: Set when the client hung up (EOF or reset) while the request was being answered.
        self.disconnected = trio.Event()
        self.close_after = False
        self._scopes: list[trio.CancelScope] = []

    def cancel_on_disconnect(self, scope: trio.CancelScope) -> None:
        """Cancel ``scope`` when the client hangs up (at once if it already has); no task.
        Pair with :meth:`forget`."""
        if self.disconnected.is_set():
            scope.cancel()
        else:
            self._scopes.append(scope)

    def forget(self, scope: trio.CancelScope) -> None:
        if scope in self._scopes:
            self._scopes.remove(scope)

    def hung_up(self) -> None:
        """The driver saw EOF or a reset: mark it and cancel the registered scopes."""
        self.disconnected.set()
        scopes, self._scopes = self._scopes, []
        for scope in scopes:
            scope.cancel()

    async def _write(self, data: bytes) -> None:
        # A bare CancelScope is cheaper than fail_after's generator context manager.
        with trio.CancelScope(deadline=trio.current_time() + self._write_timeout) as scope:
            await self._stream.send_all(data)
        if scope.cancelled_caught:
            raise trio.TooSlowError

    def _head(self, status: int, headers: list[tuple[str, str]]) -> bytes:
        return self._conn.send(_response(status, headers)) or b""

    async def respond(
        self,
        status: int,
        body: bytes = b"",
        *,
        content_type: str | None = "application/json",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        hdrs = list(headers or [])
        if body and content_type:
            hdrs.append(("Content-Type", content_type))
        hdrs.append(("Content-Length", str(len(body))))
        if self.close_after:
            hdrs.append(("Connection", "close"))
        self.started = True
        data = self._head(status, hdrs)
        if body:
            data += self._conn.send(h11.Data(data=body)) or b""
        data += self._conn.send(h11.EndOfMessage()) or b""
        await self._write(data)
        self.finished = True

    async def start_stream(
        self,
        status: int,
        content_type: str,
        headers: list[tuple[str, str]] | None = None,
        *,
        first: bytes = b"",
        end: bool = False,
    ) -> None:
        """Send the head of a streamed (chunked) response, with ``first`` (its first
        bytes) and the end of the message when ``end``; else then ``write`` and ``end``."""
        hdrs = [("Content-Type", content_type), ("Cache-Control", "no-cache"), *(headers or [])]
        self.started = True
        data = self._head(status, hdrs)
        if first:
            data += self._conn.send(h11.Data(data=first)) or b""
        if end:
            data += self._conn.send(h11.EndOfMessage()) or b""
        await self._write(data)
        if end:
            self.finished = True

    async def write(self, data: bytes) -> None:
        await self._write(self._conn.send(h11.Data(data=data)) or b"")

    async def end(self, last: bytes = b"") -> None:
        """End the streamed response, after ``last`` (its final bytes) if given."""
        data = (self._conn.send(h11.Data(data=last)) or b"") if last else b""
        data += self._conn.send(h11.EndOfMessage()) or b""
        await self._write(data)
        self.finished = True


def as_refusal(result: object) -> HttpError | None:
    """An ``authenticate`` result that refuses the request, as an HttpError: an HttpError,
    or any object with ``status`` (int), ``body`` (bytes) and ``headers`` (list of pairs),
    such as ``runtime.auth.AuthError``; None for a principal."""
    if isinstance(result, HttpError):
        return result
    status = getattr(result, "status", None)
    body = getattr(result, "body", None)
    if isinstance(status, int) and isinstance(body, bytes):
        headers = [(str(k), str(v)) for k, v in getattr(result, "headers", [])]
        headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
        return HttpError(status, f"refused by authenticate ({status})", body, headers)
    return None


def principal_key(principal: object) -> object:
    """What a session is bound to: the principal's ``subject`` (and ``client_id``) when it
    has one (a refreshed token is the same principal), else the principal itself."""
    subject = getattr(principal, "subject", None)
    if subject is None:
        return principal
    return (subject, getattr(principal, "client_id", None))


#: The application: answers one request through the exchange. HttpError -> that status.
HttpApp = Callable[[HttpRequest, Exchange], Awaitable[None]]


def _encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


def _response(status: int, headers: list[tuple[str, str]]) -> h11.Response:
    """The h11 event for a response head (h11 validates every field)."""
    return h11.Response(status_code=status, headers=_encode(headers))


def error_body(message: str, code: int = -32600) -> bytes:
    """A JSON-RPC error response with no id (what the spec allows on an HTTP error)."""
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    )


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
) -> None:
    """Accept on ``listeners`` until ``shutdown``; each connection runs in
    ``handler_nursery``. Returns once accepting stopped (connections may still run)."""
    slots = trio.Semaphore(limits.max_connections)
    drivers: set[_Driver] = set()

    async def handle(stream: trio.SocketStream) -> None:
        try:
            slots.acquire_nowait()
        except trio.WouldBlock:
            log.warning(
                "refusing connection reason=max-connections limit=%d", limits.max_connections
            )
            with trio.move_on_after(1):
                await stream.send_all(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                    b"Connection: close\r\nRetry-After: 1\r\n\r\n"
                )
            await trio.aclose_forcefully(stream)
            return
        driver = None
        try:
            driver = _Driver(
                stream, app, policy, limits, max_body_size, write_timeout, shutdown, on_upgrade
            )
            drivers.add(driver)
            await driver.run()
        finally:
            if driver is not None:
                drivers.discard(driver)
            slots.release()

    with trio.CancelScope() as accept_scope:

        async def stop_accepting() -> None:
            await shutdown.wait()
            accept_scope.cancel()
            for driver in list(drivers):  # idle keep-alive connections close now
                if driver.idle_scope is not None:
                    driver.idle_scope.cancel()

        handler_nursery.start_soon(stop_accepting)
        await trio.serve_listeners(handle, listeners, handler_nursery=handler_nursery)


class _Driver:
    """One connection: this task parses requests and runs the app; one reader task, for the
    connection's life, reads the socket (ahead: h11 buffers a pipelined next request) so
    that a client hanging up mid-request is noticed at once (``Exchange.hung_up``)."""

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
        self.stream = stream
        self.app = app
        self.policy = policy
        self.limits = limits
        self.max_body_size = max_body_size
        self.write_timeout = write_timeout
        self.shutdown = shutdown
        self.on_upgrade = on_upgrade
        self.id = f"http-{next(_ids)}"
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_header_size)
        self.idle_scope: trio.CancelScope | None = None
        # Reader state: EOF seen (and given to h11), or the socket broke (not given to h11);
        # the exchange being answered; bytes read since this task last needed data.
        self._eof = False
        self._broken: BaseException | None = None
        self._exchange: Exchange | None = None
        self._unread = 0
        self._data_lot = trio.lowlevel.ParkingLot()  # this task waits for the reader
        self._drain_lot = trio.lowlevel.ParkingLot()  # the reader waits for this task
        self._reader_scope = trio.CancelScope()
        self._reader_done = trio.Event()

    async def run(self) -> None:
        failed: Exception | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._reader)
                try:
                    await self._serve()
                except Exception as exc:  # raised as itself, not in a nursery's group
                    failed = exc
                finally:
                    self._reader_scope.cancel()
        finally:
            await trio.aclose_forcefully(self.stream)
        if failed is not None:
            raise failed

    async def _serve(self) -> None:
        try:
            first = True
            while not self.shutdown.is_set():
                if not await self._one_request(first):
                    break
                first = False
                if self.conn.our_state is h11.MUST_CLOSE or self.conn.their_state is h11.MUST_CLOSE:
                    break
                try:
                    self.conn.start_next_cycle()
                except h11.LocalProtocolError:
                    break
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("http connection gone conn=%s error=%r", self.id, exc)
        except trio.TooSlowError:
            log.info("closing http conn=%s reason=write-timeout", self.id)

    async def _reader(self) -> None:
        """Read until EOF, a broken socket, or cancellation (safe: trio loses no bytes)."""
        cap = self.limits.max_header_size + self.max_body_size
        stream = self.stream
        conn = self.conn
        try:
            with self._reader_scope:
                while True:
                    try:
                        data = await stream.receive_some(_RECEIVE_SIZE)
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                        self._broken = exc
                        data = b""
                    if not data:
                        self._eof = True
                        if self._broken is None:
                            conn.receive_data(b"")
                        self._data_lot.unpark_all()
                        if self._exchange is not None:
                            self._exchange.hung_up()
                        return
                    conn.receive_data(data)  # a pipelined next request: h11 keeps it
                    self._data_lot.unpark_all()
                    self._unread += len(data)
                    while self._unread > cap:
                        await self._drain_lot.park()  # stop reading: backpressure
        finally:
            self._reader_done.set()

    def _buffered(self) -> bool:
        return bool(self.conn.trailing_data[0])

    async def _wait_data(self) -> None:
        """Wait for the reader's next bytes (or EOF); the caller holds any deadline."""
        if self._broken is not None:
            raise trio.BrokenResourceError from self._broken
        if self._eof:  # pragma: no cover - h11 answers EOF itself (ConnectionClosed or error)
            raise trio.BrokenResourceError("the client closed the connection")
        self._unread = 0
        self._drain_lot.unpark_all()
        await self._data_lot.park()
        if self._broken is not None:
            raise trio.BrokenResourceError from self._broken

    async def _next_event(self, deadline: float) -> Any:
        """The next h11 event, reading as needed until ``deadline`` (TooSlowError)."""
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            with trio.CancelScope(deadline=deadline) as scope:
                await self._wait_data()
            if scope.cancelled_caught:
                raise trio.TooSlowError

    async def _reject(self, status: int, reason: str, code: int = -32600) -> None:
        """Answer with an error and close (used before the app sees the request)."""
        log.info("http reject conn=%s status=%d reason=%s", self.id, status, reason)
        if self.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        body = error_body(reason, code)
        try:
            data = self.conn.send(
                h11.Response(
                    status_code=status,
                    headers=_encode(
                        [
                            ("Content-Type", "application/json"),
                            ("Content-Length", str(len(body))),
                            ("Connection", "close"),
                        ]
                    ),
                )
            )
            data = (data or b"") + (self.conn.send(h11.Data(data=body)) or b"")
            data += self.conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            return
        with trio.move_on_after(min(self.write_timeout, 5.0)):
            await self.stream.send_all(data)

    async def _one_request(self, first: bool) -> bool:
        """Serve one request; False when the connection must close."""
        limits = self.limits
        now = trio.current_time()
        # Wait for the request's first byte (cancelled at shutdown: this connection is idle),
        # then give the whole head ``header_timeout`` (from accept for the first request).
        if not self._buffered():
            if self.shutdown.is_set():
                return False
            if self._eof:
                return False
            wait = limits.header_timeout if first else limits.keep_alive_timeout
            # One bare scope: the idle deadline, and cancelled at shutdown (idle_scope).
            with trio.CancelScope(deadline=now + wait) as idle:
                self.idle_scope = idle
                await self._wait_data()
            self.idle_scope = None
            if idle.cancelled_caught or not self._buffered():  # woken by EOF alone
                if first and idle.cancelled_caught and not self.shutdown.is_set():
                    log.info("closing http conn=%s reason=no-request", self.id)
                return False
            if not first:
                now = trio.current_time()
        try:
            event = await self._next_event(now + limits.header_timeout)
        except trio.TooSlowError:
            log.warning("closing http conn=%s reason=header-timeout", self.id)
            if self.conn.their_state is h11.SEND_BODY or self.conn.trailing_data[0]:
                await self._reject(408, "Request Timeout: request head too slow")
            return False
        except h11.RemoteProtocolError as exc:
            await self._reject(exc.error_status_hint, f"Bad request: {exc}")
            return False
        if isinstance(event, h11.ConnectionClosed):
            return False
        assert isinstance(event, h11.Request), event
        raw = event.headers.raw_items()  # one list (iterating ``Headers`` indexes per item)
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw]
        if len(headers) > limits.max_header_count:
            await self._reject(431, f"Too many header fields (limit {limits.max_header_count})")
            return False
        # h11 caps a head that arrives in pieces; one that arrived whole is measured here.
        head_size = len(event.target) + sum(len(k) + len(v) + 4 for k, v in raw)
        if head_size > limits.max_header_size:
            await self._reject(
                431, f"Request header fields too large (limit {limits.max_header_size} bytes)"
            )
            return False
        target = event.target.decode("latin-1")
        split = urlsplit(target)
        request = HttpRequest(
            method=event.method.decode("ascii"),
            target=target,
            path=split.path,
            query=dict(parse_qsl(split.query)),
            headers=headers,
            body=b"",
            connection_id=self.id,
        )
        reason = self.policy.check(request.header("host"), request.header("origin"))
        if reason is not None:
            await self._reject(403, f"Forbidden: {reason}")
            return False
        if self.on_upgrade is not None and (request.header("upgrade") or "").lower() == "websocket":
            # Hand the raw stream (and any bytes h11 buffered) to the WebSocket layer, once
            # the reader has stopped (no byte is lost: trio cancels a receive cleanly).
            self._reader_scope.cancel()
            await self._reader_done.wait()
            await self.on_upgrade(request, self.stream, bytes(self.conn.trailing_data[0]))
            return False
        length = request.header("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_size:
            await self._reject(413, f"Payload Too Large: body exceeds {self.max_body_size} bytes")
            return False
        body = bytearray()
        try:
            while True:
                event = await self._next_event(trio.current_time() + limits.body_timeout)
                if isinstance(event, h11.Data):
                    body += event.data
                    if len(body) > self.max_body_size:
                        await self._reject(
                            413, f"Payload Too Large: body exceeds {self.max_body_size} bytes"
                        )
                        return False
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    return False
        except trio.TooSlowError:
            log.warning("closing http conn=%s reason=body-timeout", self.id)
            await self._reject(408, "Request Timeout: body too slow")
            return False
        except h11.RemoteProtocolError as exc:
            await self._reject(exc.error_status_hint, f"Bad request: {exc}")
            return False
        request.body = bytes(body)
        exchange = Exchange(self.conn, self.stream, self.write_timeout)
        await self._run_app(request, exchange)
        return exchange.finished and not exchange.disconnected.is_set()

    async def _run_app(self, request: HttpRequest, exchange: Exchange) -> None:
        self._exchange = exchange
        if self._eof:  # the client hung up before the app started
            exchange.hung_up()
        try:
            await self.app(request, exchange)
        except HttpError as exc:
            if not exchange.started:
                body = exc.body if exc.body is not None else error_body(exc.reason)
                await exchange.respond(exc.status, body, headers=exc.headers)
            else:
                log.warning("http error after response start conn=%s: %s", self.id, exc)
        except Exception:
            log.exception("http app failed conn=%s", self.id)
            if not exchange.started:
                exchange.close_after = True
                await exchange.respond(500, error_body("Internal error", -32603))
        finally:
            self._exchange = None
