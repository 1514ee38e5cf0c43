"""The Streamable HTTP link, both eras (MCP 2025-03-26..2025-11-25 basic/transports
"Streamable HTTP", and 2026-07-28 basic/transports/streamable-http).

Every request is a POST of its own, answered with JSON or with an SSE stream carrying the
server's notifications and requests before the response. POSTs go over the link's pool of
persistent connections (``_http.HttpPool``); one answered by an SSE stream holds its
connection until the stream ends, and concurrent requests use parallel connections. What happens
when something goes wrong, per the policy in ``docs/client.md``:

- No connection could be made (nothing was sent): retried for any method, with backoff.
- 429 / 503: the server refused before processing: retried for any method, waiting at least
  its ``Retry-After``.
- The connection broke after the request was sent: a handshake-era SSE response that carried
  event ids is resumed with a GET and ``Last-Event-ID`` (2025-11-25 "Resumability and
  Redelivery"; the wait honours the stream's ``retry:``); otherwise the request is sent again
  only when it is safe to repeat (lists, reads, discover, ``tasks/get``, listen), else it
  fails with :class:`TransportLost`.
- 404 on a request carrying our ``Mcp-Session-Id``: the session is gone; the link asks the
  client to initialize a new one and sends the request again, once. Any other 404 that does
  not answer the request says there is no MCP endpoint at the URL: a refusal.
- A refusal (``TransportLost.refused``: connection refused, an unknown host, that 404) while
  the link has never reached the server fails at once: no retry makes a wrong URL right.
- An answer the client cannot take (over ``max_message_size``, nested deeper than the
  decoder follows, not JSON-RPC) fails its request with :class:`BadMessage`, never a retry
  (it would bring the same answer back): a JSON body at once; on an SSE stream such an
  event is skipped (it may be a notification, and the answer may follow), and a stream that
  then ends or breaks without the answer fails the request, naming what was skipped.

Event ids already delivered are remembered (the last ``SEEN_IDS``), so a replay never
delivers an event twice. Handshake era: after ``initialize`` a GET opens the session's
standing stream (405: the server has none), re-opened with ``Last-Event-ID`` when cut; the
session is ended with DELETE on close. 2026-07-28: each request carries
``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers mirroring its body;
cancelling a request closes its POST's response stream (that revision's cancellation).
"""

from __future__ import annotations

import collections
import logging
import math
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import msgspec
import trio

from ..framing import loggable, redact_url
from ..protocol import BATCH_REVISION, CANCELLED, INITIALIZE, http_failure
from ._auth import Auth, authorized_exchange
from ._backoff import Backoff, BackoffRun, parse_retry_after
from ._errors import BadMessage, ClientError, PeerError, TransportLost
from ._events import SEEN_IDS, EventReading, SeenIds, answered
from ._http import (
    DEFAULT_IDLE_CONNECTION_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_IDLE_CONNECTIONS,
    ConnectFailed,
    HttpPool,
    HttpResponse,
    Url,
    check_pool_limits,
)
from ._link import Failed, Link, OnStream, Outgoing, single_errors
from ._param_headers import encode_header_value

__all__ = ["HttpConnector", "StreamableLink"]

log = logging.getLogger("mcp_runtime.client")

#: Seconds an SSE answer's stream may take to end after the answer, so that its connection
#: can be reused (2025-11-25: the server SHOULD close the stream after the response); a
#: stream still open then is closed with its connection. The caller has its answer already.
_DRAIN_WAIT: Final = 1.0
#: Messages read off the HTTP streams and not yet taken by the client's reader. Bounded, so
#: that a server sending faster than the client takes its messages (a flood of requests the
#: client must answer, each answer a POST) is held back by TCP flow control on its own
#: streams rather than queued here.
_INBOX: Final = 64
#: Seconds an answered exchange must stay open, when it delivers no message, to count as the
#: end of an outage (a fresh retry budget for the next one): a stream held that long was up,
#: as a quiet stream cut by a proxy's idle timeout is. A server that answers 200 and cuts at
#: once (or sends only what the client must refuse) stays within one budget instead of
#: being retried at the first backoff step until the request's timeout.
_SETTLED: Final = 2.0
#: Hint for a 404 at a URL whose path does not end the way MCP endpoints usually do.
_ENDPOINT_HINT: Final = "MCP endpoints usually end in /mcp"


class _Retry(Exception):
    """Internal: try the exchange again after ``hint`` seconds (at least)."""

    def __init__(self, reason: str, hint: float | None = None, *, resume: str | None = None):
        super().__init__(reason)
        self.hint = hint
        self.resume = resume


class HttpConnector:
    """Opens a :class:`StreamableLink` to ``url`` (it handles its own retries).

    ``open_client`` builds it (``connector_for``) and sets :attr:`reinitialize` to the
    client's, so that a session the server forgot is replaced from inside the link.
    ``reconnects`` is False: there is no connection to reopen, each request makes its own
    exchange and retries it under the policy of the module docstring. The pool's limits are
    checked here, before anything is connected (``check_pool_limits``: ValueError).
    """

    reconnects = False

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        backoff: Backoff | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float | None = 30.0,
        max_message_size: int = 4 * 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
        max_idle_connections: int = DEFAULT_MAX_IDLE_CONNECTIONS,
        idle_connection_timeout: float = DEFAULT_IDLE_CONNECTION_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        auth: Auth | None = None,
    ) -> None:
        check_pool_limits(max_idle_connections, idle_connection_timeout, max_connections)
        self.url = Url.parse(url)
        self.headers = dict(headers or {})
        #: Asked for each request's authorization headers, told of 401/403 (``_auth``).
        self.auth = auth
        self.backoff = backoff or Backoff()
        self.max_idle_connections = max_idle_connections
        self.idle_connection_timeout = idle_connection_timeout
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_message_size = max_message_size
        self.ssl_context = ssl_context
        # What logs and errors name it by: never a password or a key in the URL.
        self.description = redact_url(url)
        #: Set by open_client: how the link asks the client for a new session.
        self.reinitialize: Callable[[], Awaitable[None]] | None = None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Link]:
        async with single_errors(), trio.open_nursery() as nursery:
            link = StreamableLink(self, nursery)
            try:
                yield link
            finally:
                await link.aclose()
                nursery.cancel_scope.cancel()


class StreamableLink:
    """One client's Streamable HTTP link (the :class:`Link` contract), alive for the
    connector's ``open`` block; the client's conversation sends and receives through it,
    and its handshake calls :meth:`negotiated`.

    ``send`` of a request returns at once: its POST (and every retry, resume or re-sent
    copy of it) runs in a task of its own in the link's nursery, and each request in it ends
    exactly once: its answer arrives through :meth:`receive`, or a :class:`Failed` record
    carrying the :class:`ClientError` that ended it, or nothing when the client cancelled it
    (2026-07-28: by closing its POST's stream). A notification or an answer to the server is
    POSTed in the sender's task, on the pool's reserved lane (a request's stream may be
    waiting on it), and an HTTP error on it raises :class:`PeerError` there.

    Everything the server sends, on any stream, goes through one inbox of ``_INBOX``
    messages in the order it was read, so a reader that falls behind holds the server back
    by TCP flow control, never by memory here. The handshake-era session (its id, taken from
    ``initialize``'s answer, and its negotiated version) is the link's: a 404 for it makes
    one new session for every request that saw it (``_reinit_lock``), each request re-sent
    at most once. :meth:`aclose` is idempotent: it cancels the POSTs still running, ends the
    session with DELETE (shielded, at most 2 s), closes the pool, and ends :meth:`receive`
    (``trio.EndOfChannel``).
    """

    def __init__(self, config: HttpConnector, nursery: trio.Nursery) -> None:
        self.config = config
        self._nursery = nursery
        self.pool = HttpPool(
            connect_timeout=config.connect_timeout,
            read_timeout=config.read_timeout,
            ssl_context=config.ssl_context,
            max_idle=config.max_idle_connections,
            idle_timeout=config.idle_connection_timeout,
            max_connections=config.max_connections,
        )
        self._send_inbox, self._inbox = trio.open_memory_channel[bytes | OnStream | Failed](_INBOX)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._posts: dict[Any, trio.CancelScope] = {}
        self._seen = SeenIds()
        self._standing = False
        #: Set when the standing stream's first GET has its answer (or failed).
        self._standing_answered = trio.Event()
        self._reinit_lock = trio.Lock()
        self._closed = False
        #: What the SSE streams answering each request have delivered (its last event id,
        #: its ``retry:`` hint, what was skipped), keyed by ``id(out)`` of its request (0:
        #: the standing GET stream).
        self._readings: dict[int, EventReading] = {}
        #: Answers resumed with Last-Event-ID (a GET after a cut POST stream).
        self.resumed = 0
        #: (session id, event id) of the last events delivered, oldest first: what the
        #: de-duplication let through (for diagnostics and the tests).
        self.delivered: collections.deque[tuple[str | None, str]] = collections.deque(
            maxlen=SEEN_IDS
        )
        #: The last connection failure of each request not sent yet (``unreached``).
        self._unreached: dict[Any, str] = {}

    # -- the Link interface -----------------------------------------------------------------

    async def negotiated(self, version: str) -> None:
        """The handshake finished: send the version header and open the standing stream.

        Returns once the server has answered the stream's GET (or refused it, or
        ``connect_timeout`` passed): a server may send a request that relates to no request
        of ours (an elicitation from a tool, as the official SDK's servers do) on that
        stream only, and drop it when the stream is not open yet (2025-11-25 transports,
        "Listening for Messages from the Server"), so the client's first requests wait for
        it rather than race it."""
        self.protocol_version = version
        if not self._standing:
            self._standing = True
            self._standing_answered = trio.Event()
            self._nursery.start_soon(self._standing_stream)
            with trio.move_on_after(self.config.connect_timeout):
                await self._standing_answered.wait()

    def allows_batches(self) -> bool:
        return self.protocol_version == BATCH_REVISION and self.session_id is not None

    async def send(self, out: Outgoing) -> None:
        if self._closed:
            raise TransportLost("the HTTP link is closed")
        if out.method == CANCELLED and out.modern:
            # 2026-07-28: "closing the response stream cancels the request".
            scope = self._posts.get(out.request_id)
            if scope is not None:
                scope.cancel()
            return
        if out.expects_response:
            self._nursery.start_soon(self._post_request, out)
            return
        await self._post_message(out)

    def unreached(self, request_id: Any) -> str | None:
        """``ReportsUnreached``: when a request times out before any connection could be
        made, the client reports this failure rather than a timeout (the server never had it)."""
        return self._unreached.get(request_id)

    async def receive(self) -> bytes | OnStream | Failed:
        try:
            return await self._inbox.receive()
        except trio.ClosedResourceError:
            raise trio.EndOfChannel from None

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for scope in self._posts.values():
            scope.cancel()
        if self.session_id is not None:
            # 2025-11-25 "Session Management": clients SHOULD end a session with DELETE.
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                try:
                    response = await self._exchange("DELETE", b"", accept=None, reserved=True)
                    await response.aclose()
                except ClientError:
                    pass
        await self.pool.aclose()
        self._send_inbox.close()

    # -- exchanges --------------------------------------------------------------------------

    def _headers(self, out: Outgoing | None, accept: str | None) -> list[tuple[str, str]]:
        """The request headers: a 2026-07-28 POST carries its own revision, ``Mcp-Method``
        and ``Mcp-Name`` (and its ``Mcp-Param-*``) and no session; anything else carries
        the session's id and negotiated version once known. The connector's own headers
        (``Authorization``...) go last, on every exchange."""
        headers: list[tuple[str, str]] = []
        if accept is not None:
            headers.append(("Accept", accept))
        if out is not None:
            headers.append(("Content-Type", "application/json"))
            if out.modern:
                headers.append(("MCP-Protocol-Version", out.version))
                if out.method is not None and out.expects_response:
                    headers.append(("Mcp-Method", out.method))
                    if out.name is not None:
                        headers.append(("Mcp-Name", encode_header_value(out.name)))
                    headers.extend(out.headers)
        if out is None or not out.modern:
            if self.session_id is not None:
                headers.append(("Mcp-Session-Id", self.session_id))
            if self.protocol_version is not None:
                headers.append(("MCP-Protocol-Version", self.protocol_version))
        headers.extend(self.config.headers.items())
        return headers

    async def _exchange(
        self,
        method: str,
        body: bytes,
        *,
        out: Outgoing | None = None,
        accept: str | None = "application/json, text/event-stream",
        last_event_id: str | None = None,
        reserved: bool = False,
    ) -> HttpResponse:
        headers = self._headers(out if method == "POST" else None, accept)
        if last_event_id is not None:
            headers.append(("Last-Event-ID", last_event_id))
        return await authorized_exchange(
            self.pool, self.config.auth, self.config.url, method, headers, body, reserved=reserved
        )

    async def _post_message(self, out: Outgoing) -> None:
        """A notification or a response: the server answers 202 Accepted (or an error).
        Short, and a request's stream may be waiting on it: the pool's reserved lane."""
        response = await self._exchange("POST", out.data, out=out, reserved=True)
        try:
            body = await response.read_all(64 * 1024)  # read to its end: the connection is reused
            if response.status >= 400:
                raise PeerError.of(
                    http_failure(response.status, body[:200].decode("utf-8", "replace"))
                )
        finally:
            await response.aclose()

    async def _post_request(self, out: Outgoing) -> None:
        """The task of one request (or batch): its ids map to the scope a 2026-07-28
        cancellation cancels, and a :class:`ClientError` that ends it becomes one
        :class:`Failed` per id, so each waiting request learns its end."""
        ids = set(out.batch_ids) if out.batch_ids else {out.request_id}
        try:
            with trio.CancelScope() as scope:
                for request_id in ids:
                    self._posts[request_id] = scope
                await self._deliver_request(out, ids)
        except ClientError as exc:
            for request_id in ids:
                await self._push(Failed(request_id, exc))
        finally:
            for request_id in ids:
                self._posts.pop(request_id, None)
                self._unreached.pop(request_id, None)
            # Keyed by id(out): never let a later request inherit this one's position.
            self._readings.pop(id(out), None)

    async def _deliver_request(self, out: Outgoing, ids: set[Any]) -> None:
        """POST ``out`` until every id in ``ids`` is answered, under the module docstring's
        policy: each failure is retried (POSTed again, or resumed with ``Last-Event-ID``)
        or raised, and retries take the connector's backoff, one budget per outage (an
        exchange that delivered something, or stayed up ``_SETTLED`` seconds, ends it)."""
        run: BackoffRun | None = None
        resume: str | None = None
        reinitialized = False
        reading = self._reading(id(out), ids)
        delivered = 0
        while ids:
            try:
                if resume is not None:
                    self.resumed += 1
                    log.info("resuming %s from event %s", out.method, loggable(resume))
                    response = await self._exchange(
                        "GET", b"", accept="text/event-stream", last_event_id=resume
                    )
                else:
                    response = await self._exchange("POST", out.data, out=out)
                for request_id in ids:
                    self._unreached.pop(request_id, None)  # connected: it was sent
                answered_at = trio.current_time()
                try:
                    await self._read_answer(out, response, ids, resume is not None)
                finally:
                    await response.aclose()
                    if reading.delivered > delivered or (
                        response.status < 300 and trio.current_time() - answered_at >= _SETTLED
                    ):
                        delivered = reading.delivered
                        run = None  # it got through: a later outage gets a fresh budget
                if ids:  # the stream ended cleanly without the answer: a cut stream
                    raise TransportLost("the response stream ended before the answer")
                return
            except _SessionLost:
                if resume is not None and not out.repeatable:
                    # The request reached the old session and may have run: only a 404 on
                    # the POST itself proves it did not.
                    raise TransportLost(
                        f"{out.method}: the session was lost before the answer; not re-sent, "
                        "it is not safe to repeat"
                    ) from None
                if reinitialized or out.method == INITIALIZE:
                    raise TransportLost(
                        "the server does not know our session (404), even after re-initializing"
                    ) from None
                reinitialized = True
                await self._session_lost()
                resume = None
                continue
            except _Retry as retry:
                reason, hint, resume = str(retry), retry.hint, retry.resume
            except ConnectFailed as exc:
                if exc.refused and not self.pool.opened:
                    # Never reached: a wrong port or host, not an outage to wait out.
                    raise TransportLost(str(exc), refused=True) from None
                reason, hint = str(exc), None  # nothing was sent: any method may retry
                if resume is None:
                    for request_id in ids:
                        self._unreached[request_id] = reason
            except TransportLost as exc:
                if exc.refused:  # no MCP endpoint at the URL: nothing to wait out
                    raise
                skipped = reading.skipped
                if skipped is not None:
                    # What the client dropped may have been the answer: a retry would bring
                    # it back, so the request ends with its stream.
                    raise BadMessage(
                        f"{out.method}: no answer the client could take on its stream "
                        f"(it skipped {skipped})"
                    ) from None
                if self._resumable(out):
                    resume = reading.last_id or resume
                if resume is None and not out.repeatable:
                    raise TransportLost(
                        f"{out.method}: {exc}; not re-sent, it is not safe to repeat"
                    ) from None
                reason, hint = str(exc), reading.retry
            if run is None:
                run = self.config.backoff.start(clock=trio.current_time())
            delay = run.next_wait(trio.current_time(), hint)
            if delay is None:
                raise TransportLost(
                    f"{out.method}: gave up after {run.attempts} attempt(s) in "
                    f"{run.elapsed:.1f} s: {reason}",
                    attempts=run.attempts,
                )
            log.info(
                "retrying %s in %.3f s (attempt %d): %s",
                out.method,
                delay,
                run.attempts,
                loggable(reason),
            )
            await trio.sleep(delay)

    def _resumable(self, out: Outgoing) -> bool:
        return not out.modern and self.session_id is not None

    async def _read_answer(
        self, out: Outgoing, response: HttpResponse, ids: set[Any], resuming: bool
    ) -> None:
        """Take one response to ``out``: an SSE stream's messages, or a JSON body, pushed to
        the inbox (the ids answered leave ``ids``). What is not an answer is raised for
        ``_deliver_request`` to judge: ``_SessionLost`` (404 on our session), ``_Retry``
        (429, 503), :class:`TransportLost` (a cut, a 404 with no MCP endpoint),
        :class:`PeerError` (an error status, in the server's words when it sent a JSON-RPC
        error) or :class:`BadMessage` (a body over ``max_message_size``, a 2xx without an
        answer the client can read)."""
        status = response.status
        if status == 404 and (self.session_id is not None and not out.modern):
            raise _SessionLost
        if status in (429, 503):
            hint = parse_retry_after(response.header("retry-after"))
            raise _Retry(f"HTTP {status}", hint)
        if resuming and status in (400, 405):
            raise TransportLost(f"the server cannot resume the stream (HTTP {status})")
        if out.method == INITIALIZE and status < 300:
            session = response.header("mcp-session-id")
            if session is not None:
                self.session_id = session
        media = response.media_type
        if media == "text/event-stream" and status < 300:
            await self._read_events(response, out, ids, math.inf)
            if not ids:
                await _drain(response)
            return
        limit = self.config.max_message_size
        try:
            body = await response.read_all(limit)
        except BadMessage:
            raise BadMessage(
                f"{out.method}: the server's answer is larger than the client's "
                f"max_message_size ({limit} bytes)"
            ) from None
        if media == "application/json" and body:
            found = answered(body, ids)
            if isinstance(found, str):
                if status < 300:
                    raise BadMessage(f"{out.method}: the server's answer: {found}")
                found = set()  # an error status with a body that is not ours to read
            if found:
                await self._push(body)
                ids.difference_update(found)
                return
            if status == 404:
                raise self._no_endpoint()
            error = _error_of(body)
            if error is not None:  # an error for no id of ours (id null): e.g. a 401, a 400
                failure = http_failure(status, str(error.get("message", "")), error.get("data"))
                code = error.get("code")
                raise PeerError(
                    code if isinstance(code, int) else failure.code, failure.message, failure.data
                )
        if 200 <= status < 300:
            raise BadMessage(f"{out.method}: HTTP {status} without an answer")
        if status == 404:
            raise self._no_endpoint()
        raise PeerError.of(
            http_failure(status, body[:300].decode("utf-8", "replace").strip(), {"status": status})
        )

    def _no_endpoint(self) -> TransportLost:
        """A 404 that answers no request: nothing at this URL speaks MCP."""
        url = self.config.url
        path = url.target.split("?", 1)[0].rstrip("/")
        hint = "" if path.endswith("/mcp") else f" ({_ENDPOINT_HINT})"
        return TransportLost(
            f"{self.config.description}: HTTP 404 Not Found: no MCP endpoint at this URL{hint}",
            refused=True,
        )

    def _reading(self, key: int, awaiting: set[Any] | None) -> EventReading:
        reading = self._readings.get(key)
        if reading is None:
            reading = self._readings[key] = EventReading(
                self.config.max_message_size, self._seen, awaiting
            )
        return reading

    async def _read_events(
        self, response: HttpResponse, out: Outgoing | None, ids: set[Any], timeout: float
    ) -> None:
        """Deliver the messages of an SSE stream: a request's answer stream (``out``), or
        the session's standing stream (``out`` None); see :class:`EventReading` for what
        is delivered. What it skipped on a request's stream fails the request if the answer
        does not follow (``_deliver_request``)."""
        key = id(out) if out is not None else 0
        reading = self._reading(key, ids if out is not None else None)
        reading.begin()
        on_stream = out is not None and not out.batch_ids and out.request_id is not None
        while True:
            chunk = await response.receive_some(timeout=timeout)
            reading.feed(chunk)
            while True:
                skips = reading.skips
                data = reading.next_message()
                if reading.skips > skips:
                    log.warning("skipped an SSE event: %s", loggable(reading.skipped))
                if data is None:
                    break
                if reading.last_delivered_id is not None:
                    self.delivered.append((self.session_id, reading.last_delivered_id))
                # On one request's own stream: what the server sends there relates to it.
                if on_stream:
                    assert out is not None
                    await self._push(OnStream(out.request_id, data))
                else:
                    await self._push(data)
                if out is not None and not ids:
                    return
            if not chunk:
                return

    async def _push(self, data: bytes | OnStream | Failed) -> None:
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self._send_inbox.send(data)

    async def _session_lost(self) -> None:
        lost = self.session_id
        async with self._reinit_lock:
            if self.session_id != lost:
                return  # another request already opened the new session
            self.session_id = None
            self.protocol_version = None
            reinitialize = self.config.reinitialize
            if reinitialize is None:
                raise TransportLost("the server does not know our session (404)")
            await reinitialize()
            # Event ids are unique within a session only (2025-11-25 "Resumability"): the
            # new session's ids start over, so forget the old session's.
            for reading in self._readings.values():
                reading.last_id = None
            self._seen.clear()

    async def _standing_stream(self) -> None:
        """Handshake era: the session's GET stream, re-opened (``Last-Event-ID``) when cut."""
        run: BackoffRun | None = None
        last_id: str | None = None
        try:
            while not self._closed and self.session_id is not None:
                hint: float | None = None
                try:
                    try:
                        response = await self._exchange(
                            "GET", b"", accept="text/event-stream", last_event_id=last_id
                        )
                    finally:
                        self._standing_answered.set()
                    try:
                        if response.status == 405:
                            log.debug("the server offers no standing stream (405)")
                            return
                        if response.status == 404:
                            await self._session_lost()
                            last_id = None
                            continue
                        if response.status in (429, 503):
                            hint = parse_retry_after(response.header("retry-after"))
                            raise TransportLost(f"HTTP {response.status}")
                        if response.media_type != "text/event-stream":
                            log.warning("the standing stream got HTTP %d", response.status)
                            return
                        delivered = self._reading(0, None).delivered
                        opened_at = trio.current_time()
                        try:
                            await self._read_events(response, None, set(), math.inf)
                        finally:
                            if (
                                self._reading(0, None).delivered > delivered
                                or trio.current_time() - opened_at >= _SETTLED
                            ):
                                run = None  # it was up: the next cut gets a fresh budget
                    finally:
                        await response.aclose()
                    raise TransportLost("the standing stream ended")
                except TransportLost as exc:
                    standing = self._reading(0, None)
                    last_id = standing.last_id or last_id
                    hint = hint if hint is not None else standing.retry
                    if run is None:
                        run = self.config.backoff.start(clock=trio.current_time())
                    delay = run.next_wait(trio.current_time(), hint)
                    if delay is None:
                        log.error("gave up on the standing stream: %s", loggable(exc))
                        # Tell the client: its listeners hear nothing more from this session.
                        error = TransportLost(
                            f"the session's event stream is gone: gave up after "
                            f"{run.attempts} attempt(s) in {run.elapsed:.1f} s: {exc}",
                            attempts=run.attempts,
                        )
                        await self._push(Failed(None, error))
                        return
                    await trio.sleep(delay)
        except ClientError as exc:
            log.error("the standing stream failed: %s", loggable(exc))
        finally:
            self._standing = False
            self._standing_answered.set()


class _SessionLost(Exception):
    """Internal: a 404 for a request that carried our ``Mcp-Session-Id`` (2025-11-25
    "Session Management": the server ended the session or never knew it)."""


async def _drain(response: HttpResponse) -> None:
    """Read what follows the answer on its stream (nothing but its end, normally) so that the
    connection goes back to the pool; give up after ``_DRAIN_WAIT`` (it is closed then)."""
    with trio.move_on_after(_DRAIN_WAIT), suppress(TransportLost):
        while await response.receive_some(timeout=_DRAIN_WAIT):
            pass


def _error_of(body: bytes) -> dict[str, Any] | None:
    """The ``error`` object of a JSON-RPC error response body, else None."""
    try:
        message = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):  # (nesting: the server's TOO_DEEP rule)
        return None
    error = message.get("error") if isinstance(message, dict) else None
    return error if isinstance(error, dict) else None
