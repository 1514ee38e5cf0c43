"""What an HTTP application sees: the request, the errors it may raise, and the
:class:`Exchange` it answers through (the server side of one request/response)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import trio

from ...protocol import INVALID_REQUEST, JSONRPCError, Pieces, encode_error, error_reply
from ._http11 import (
    RequestHead,
    chunk,
    end_chunks,
    response_head,
    simple_response,
    simple_response_head,
)

__all__ = [
    "Exchange",
    "HttpApp",
    "HttpError",
    "HttpRequest",
    "PersistentHttp10Exchange",
    "as_refusal",
    "error_body",
    "media_type",
    "parse_accept",
    "principal_key",
    "refusal",
    "rejection",
]

#: A response body longer than this (bytes) is written beside its head (``writev``) rather
#: than joined to it: copying a big body costs more than the vector.
WRITE_APART_OVER: Final = 64 * 1024


class HttpConnection(Protocol):
    """The connection an exchange writes to (the server's per-connection driver)."""

    async def write(self, data: bytes) -> None: ...

    def write_now(self, data: bytes) -> memoryview | None: ...

    async def write_rest(self, rest: memoryview) -> None: ...

    def write_pair(self, head: bytes, body: bytes | Pieces) -> Awaitable[None]: ...

    async def watch(self) -> bool: ...

    def abort(self) -> None: ...


class HttpError(Exception):
    """Answer the request with ``status``; ``body`` (JSON bytes) and headers optional."""

    #: True when the dispatcher already saw the error (a middleware's own refusal, such as
    #: a rate limit's 429): not reported again to the refusal observer.
    observed: bool = False

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
    #: Read-only (shared with the parser's memo of request heads).
    query: Mapping[str, str]
    #: Lower-cased names, values as sent (decoded latin-1). Read-only (shared with the
    #: parser's memo of request heads).
    headers: Sequence[tuple[str, str]]
    #: The request's content: bytes, or a read-only view of the connection's body buffer
    #: (a Content-Length body that did not come with its head), valid while the request is
    #: served; a copy (``bytes(body)``) keeps it past that.
    body: bytes | memoryview
    connection_id: str
    #: The same by name, repeated fields' values joined with ", " (RFC 9110 5.3).
    fields: Mapping[str, str] = field(repr=False, compare=False)

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (lower case); repeated fields joined with ", "."""
        return self.fields.get(name)


class Exchange:
    """Answers one request. Exactly one of ``respond`` or ``start_stream`` ... ``end``.

    Each call writes once (head, body and end of message joined): one syscall per response
    in the common case, and no half-written head for a peer to wait on.
    """

    __slots__ = (
        "_abort_on_hangup",
        "_chunked",
        "_disconnected",
        "_driver",
        "_head_only",
        "_scopes",
        "_version",
        "after_cancel",
        "close_after",
        "finished",
        "hung_up_seen",
        "request_scope",
        "started",
    )

    def __init__(
        self,
        driver: HttpConnection,
        head: RequestHead,
        request_scope: trio.CancelScope | None = None,
    ) -> None:
        self._driver = driver
        self._version = head.version
        self._head_only = head.method == "HEAD"
        self._chunked = False
        self._abort_on_hangup = False
        self.started = False
        self.finished = False
        #: Whether the client hung up while the request was being answered (set by the
        #: connection, through :meth:`hung_up`; a plain attribute, read per request).
        self.hung_up_seen = False
        self._disconnected: trio.Event | None = None  # made when asked for
        self.close_after = not head.keep_alive
        #: The scopes a hang-up cancels (``cancel_on_disconnect``); made when one is given.
        self._scopes: list[trio.CancelScope] | None = None
        #: A cancel scope the app runs under, entered by the connection for request after
        #: request (a generation): an app may let a request it runs be cancelled through it
        #: (a session POST) instead of entering a scope of its own: benchmarks/README.md,
        #: "One cancel scope per connection generation". When
        #: it is cancelled, ``trio.Cancelled`` unwinds the app, and then ``after_cancel()``,
        #: when the app set it, answers the request (outside the cancelled scope).
        self.request_scope = request_scope
        self.after_cancel: Callable[[], Awaitable[None]] | None = None

    @property
    def disconnected(self) -> trio.Event:
        """Set when the client hung up (EOF or reset) while the request was being answered."""
        if self._disconnected is None:
            self._disconnected = trio.Event()
            if self.hung_up_seen:
                self._disconnected.set()
        return self._disconnected

    def cancel_on_disconnect(self, scope: trio.CancelScope) -> None:
        """Cancel ``scope`` when the client hangs up (at once if it already has); no task.
        Pair with :meth:`forget`."""
        if self.hung_up_seen:
            scope.cancel()
        elif self._scopes is None:
            self._scopes = [scope]
        else:
            self._scopes.append(scope)

    def forget(self, scope: trio.CancelScope) -> None:
        if self._scopes is not None and scope in self._scopes:
            self._scopes.remove(scope)

    def watch(self) -> Awaitable[bool]:
        """Wait until the client sends bytes or hangs up, in the calling task (the
        connection's reader task stops meanwhile): for a response that only waits, such as
        an idle SSE stream, one task less per connection. A hang-up is
        handled as :meth:`hung_up`; True: watch on (nothing arrived, or the client hung up),
        False: bytes arrived and the reader task reads on (stop watching)."""
        return self._driver.watch()

    def abort_on_disconnect(self) -> None:
        """This request dies with its connection: a hang-up cancels the connection's work,
        this request included (for a request that needs no scope of its own)."""
        self._abort_on_hangup = True
        if self.hung_up_seen:
            self.abort()

    def abort(self) -> None:
        """Stop answering: cancel the request being served and close the connection."""
        self._driver.abort()

    def hung_up(self) -> None:
        """The driver saw EOF or a reset: mark it and cancel the registered scopes."""
        self.hung_up_seen = True
        if self._disconnected is not None:
            self._disconnected.set()
        if self._abort_on_hangup:
            self.abort()
        scopes, self._scopes = self._scopes, None
        for scope in scopes or ():
            scope.cancel()

    def _body(self, data: bytes) -> bytes:
        if self._head_only:
            return b""
        return chunk(data) if self._chunked else data

    async def respond(
        self,
        status: int,
        body: bytes = b"",
        *,
        content_type: str | None = "application/json",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.started = True
        fields = tuple(headers) if headers else ()  # the same few per session: cached
        if not body:
            data = simple_response_head(status, None, 0, self.close_after, fields)
        elif self._head_only:
            data = simple_response_head(status, content_type, len(body), self.close_after, fields)
        elif len(body) > WRITE_APART_OVER:
            # A big body is written as it is, beside its head (one writev): joining them
            # copied the whole body once more (a 16 MiB resources/read: 16 MiB of copying).
            head = simple_response_head(status, content_type, len(body), self.close_after, fields)
            await self._driver.write_pair(head, body)
            self.finished = True
            return
        else:  # the common case: head and body made as one byte string, one write
            data = simple_response(status, content_type, body, self.close_after, fields)
        # What the socket takes at once (nearly always all of it) is written without a
        # coroutine for it; only a rest is awaited.
        rest = self._driver.write_now(data)
        if rest is not None:
            await self._driver.write_rest(rest)
        self.finished = True

    async def respond_pieces(self, status: int, body: Pieces) -> None:
        """:meth:`respond` with a JSON body given as ``Pieces`` (a reply holding a long
        text's pieces): written beside its head as one vector, never joined (a 16 MiB text
        is copied once, by its encode: benchmarks/README.md, "Long texts as pieces")."""
        self.started = True
        head = simple_response_head(status, "application/json", body.nbytes, self.close_after)
        if self._head_only:
            await self._driver.write(head)
        else:
            await self._driver.write_pair(head, body)
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
        if self._version < (1, 1):
            self.close_after = True  # an HTTP/1.0 stream ends with the connection
        else:
            self._chunked = True
        data = response_head(
            status, hdrs, length=None, close=self.close_after, version=self._version
        )
        data += self._body(first)
        if end:
            data += self._end()
        await self._driver.write(data)
        if end:
            self.finished = True

    def _end(self) -> bytes:
        return end_chunks() if self._chunked and not self._head_only else b""

    async def write(self, data: bytes) -> None:
        if data:
            await self._driver.write(self._body(data))

    def write_now(self, data: bytes) -> Awaitable[None] | None:
        """Write a part of a streamed response now, as far as the socket takes it without
        waiting: None when it took all of it, else what is left to await (in the same
        task, before anything else is written)."""
        rest = self._driver.write_now(self._body(data))
        return None if rest is None else self._driver.write_rest(rest)

    @property
    def chunked(self) -> bool:
        """The streamed response's body goes as chunks (HTTP/1.1, not HEAD): a caller that
        frames its own chunks writes them with :meth:`write_framed_now`."""
        return self._chunked and not self._head_only

    def write_framed_now(self, data: bytes) -> Awaitable[None] | None:
        """:meth:`write_now` of bytes already framed for the body (whole chunks when
        ``chunked``): one change to many listens is framed in one step each, not an SSE
        event and then a chunk around it (benchmarks/README.md, "Fan-out over HTTP")."""
        rest = self._driver.write_now(data)
        return None if rest is None else self._driver.write_rest(rest)

    async def end(self, last: bytes = b"") -> None:
        """End the streamed response, after ``last`` (its final bytes) if given."""
        await self._driver.write(self._body(last) + self._end())
        self.finished = True


class PersistentHttp10Exchange(Exchange):
    """An :class:`Exchange` for an HTTP/1.0 request that asked to keep its connection
    (``Connection: keep-alive``; the driver makes one only then, so that HTTP/1.1 answers
    pay nothing for it). RFC 9112 appendix C.2.2 (and RFC 2068 section 19.7.1): the
    connection persists only if the response says ``Connection: keep-alive`` too, and its
    length must be known from the head (Content-Length: HTTP/1.0 has no chunked coding, so a
    streamed response still ends with the connection, ``start_stream``)."""

    __slots__ = ()

    async def respond(
        self,
        status: int,
        body: bytes = b"",
        *,
        content_type: str | None = "application/json",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        if not self.close_after:
            headers = [*(headers or ()), _KEEP_ALIVE]
        await super().respond(status, body, content_type=content_type, headers=headers)

    async def respond_pieces(self, status: int, body: Pieces) -> None:
        if self.close_after:
            await super().respond_pieces(status, body)
            return
        self.started = True
        head = simple_response_head(status, "application/json", body.nbytes, False, (_KEEP_ALIVE,))
        if self._head_only:
            await self._driver.write(head)
        else:
            await self._driver.write_pair(head, body)
        self.finished = True


#: The field that keeps an HTTP/1.0 connection open (``PersistentHttp10Exchange``).
_KEEP_ALIVE: Final = ("Connection", "keep-alive")


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


def error_body(message: str, code: int = INVALID_REQUEST, request_id: Any = None) -> bytes:
    """A JSON-RPC error response; no id unless known (what the spec allows on an HTTP
    error)."""
    return encode_error(request_id, code, message)


@functools.lru_cache(maxsize=64)  # clients send the same few Accept values every time
def parse_accept(value: str | None) -> tuple[bool, bool]:
    """(accepts application/json, accepts text/event-stream); a missing header accepts both."""
    if value is None:
        return True, True
    types = {_accepted(part) for part in value.split(",")}
    anything = "*/*" in types
    return (
        anything or "application/json" in types or "application/*" in types,
        anything or "text/event-stream" in types or "text/*" in types,
    )


def _accepted(part: str) -> str:
    """The media range of one Accept element; "" when it has ``q=0`` (RFC 9110 section
    12.4.2: "not acceptable")."""
    media_range, *params = part.lower().split(";")
    for param in params:
        name, _, weight = param.partition("=")
        if name.strip() == "q":
            try:
                if not float(weight.strip()) > 0:  # (nan too)
                    return ""
            except ValueError:
                return ""  # a malformed weight accepts nothing
    return media_range.strip()


@functools.lru_cache(maxsize=64)
def media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()


def refusal(
    status: int, message: str, code: int = INVALID_REQUEST, request_id: Any = None
) -> HttpError:
    """The HttpError answering with ``status`` and a JSON-RPC error body."""
    return HttpError(status, message, error_body(message, code, request_id))


def rejection(
    status: int,
    error: JSONRPCError,
    request_id: Any = None,
    headers: list[tuple[str, str]] | None = None,
) -> HttpError:
    """The HttpError answering with ``status`` and ``error`` as its JSON-RPC body (answering
    ``request_id``, else the id the error recovered)."""
    return HttpError(status, error.message, error_reply(error, request_id), headers)
