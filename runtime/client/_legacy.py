"""The legacy HTTP+SSE transport (MCP 2024-11-05 basic/transports "HTTP with SSE"),
deprecated since 2025-03-26 and still spoken by older servers.

``GET`` on the SSE URL opens the session's one stream; its first event, ``endpoint``, names
the URL to POST messages to (relative URLs resolve against the SSE URL). POSTs are answered
202 and every server message arrives on the stream. The session lives as long as the stream:
when it drops, the client reconnects (a new GET, with backoff) and initializes a new session.
Only the handshake era exists on this transport.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Final

import trio

from ..framing import FramingError, SSEDecoder, redact_url
from ..protocol import http_failure
from ._auth import Auth, authorized_exchange
from ._errors import BadMessage, PeerError, TransportLost
from ._http import (
    DEFAULT_IDLE_CONNECTION_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_IDLE_CONNECTIONS,
    HttpPool,
    HttpResponse,
    Url,
    check_pool_limits,
)
from ._link import Link, Outgoing
from ._unreached import refused_status

__all__ = ["LegacySseConnector", "is_legacy_sse_url"]

#: How long the server may take to name its message endpoint.
_ENDPOINT_TIMEOUT: Final = 10.0


def is_legacy_sse_url(url: str) -> bool:
    """A URL whose path ends in ``/sse`` is taken for a 2024-11-05 SSE endpoint (the
    convention of that revision's servers, ours included)."""
    return Url.parse(url).target.split("?", 1)[0].rstrip("/").endswith("/sse")


class LegacySseConnector:
    """Opens a 2024-11-05 HTTP+SSE link to ``url`` (the SSE endpoint): its GET, then the
    ``endpoint`` event within ``_ENDPOINT_TIMEOUT`` seconds, before the link is yielded.

    Each ``open`` is a new session with a pool of its own, closed with it. It raises
    :class:`TransportLost` when the GET is not answered ``200 text/event-stream`` (``refused``
    for a 4xx other than 408 and 429: no wait makes it an SSE endpoint), when the stream ends
    or stays silent before naming its endpoint, and when the endpoint is of another origin.
    ``reconnects`` is True: the session ends with its stream, so the client's keeper opens a
    new one (and initializes again) after a loss. ``open_client`` pins the handshake era for
    it, the only one this transport has.
    """

    reconnects = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
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
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_message_size = max_message_size
        self.ssl_context = ssl_context
        self.max_idle_connections = max_idle_connections
        self.idle_connection_timeout = idle_connection_timeout
        self.max_connections = max_connections
        # What logs and errors name it by: never a password or a key in the URL.
        self.description = redact_url(url)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Link]:
        # One pool per session: the GET stream holds a connection of its own for its whole
        # life; the POSTs share the pool's persistent connections.
        pool = HttpPool(
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            ssl_context=self.ssl_context,
            max_idle=self.max_idle_connections,
            idle_timeout=self.idle_connection_timeout,
            max_connections=self.max_connections,
        )
        try:
            response = await authorized_exchange(
                pool,
                self.auth,
                self.url,
                "GET",
                [("Accept", "text/event-stream"), *self.headers.items()],
            )
        except BaseException:
            await pool.aclose()
            raise
        try:
            if response.status != 200 or response.media_type != "text/event-stream":
                # A 4xx says no (404: nothing here; 401/403: not for us): waiting cannot
                # change it, but 408 and 429 ask for a later try, and a 5xx may pass.
                raise TransportLost(
                    f"{self.description}: not an SSE endpoint (HTTP {response.status}, "
                    f"{response.media_type or 'no content type'})",
                    refused=refused_status(response.status),
                )
            link = _LegacyLink(self, response, pool)
            with trio.fail_after(_ENDPOINT_TIMEOUT):
                await link.read_endpoint()
            yield link
        except trio.TooSlowError:
            raise TransportLost(f"{self.description}: no endpoint event") from None
        finally:
            await response.aclose()
            await pool.aclose()


class _LegacyLink:
    """One session's link (the :class:`Link` contract): ``send`` POSTs each message to the
    session's endpoint on the pool's reserved lane and returns when the server took it (202),
    ``receive`` returns the ``message`` events of the one stream, in order; other events are
    ignored. An event over ``max_message_size`` is skipped (:class:`BadMessage`, the stream
    goes on). A POST answered 404 means the server no longer knows the session
    (:class:`TransportLost`); any other error status is the server's :class:`PeerError`.
    No per-request streams, so no :class:`OnStream` frames and no :class:`Failed` records.
    """

    def __init__(self, config: LegacySseConnector, response: HttpResponse, pool: HttpPool) -> None:
        self.config = config
        self._response = response
        self._pool = pool
        self._decoder = SSEDecoder(max_frame_size=config.max_message_size)
        self.endpoint: Url | None = None

    async def _next_event(self) -> tuple[str, str]:
        while True:
            try:
                event = self._decoder.next_event()
            except FramingError as exc:
                raise BadMessage(f"skipped an SSE event: {exc}") from None
            if event is not None:
                return event.event, event.data
            chunk = await self._response.receive_some(timeout=float("inf"))
            self._decoder.feed(chunk)
            if not chunk:
                raise trio.EndOfChannel

    async def read_endpoint(self) -> None:
        while self.endpoint is None:
            try:
                kind, data = await self._next_event()
            except trio.EndOfChannel:
                raise TransportLost(
                    f"{self.config.description}: closed before the endpoint"
                ) from None
            if kind == "endpoint":
                self.endpoint = self._endpoint(data.strip())

    def _endpoint(self, reference: str) -> Url:
        """The POST URL an ``endpoint`` event names, resolved against the SSE URL. It must
        be of the same origin: the client's headers (its token among them) go with every
        POST, so a stream naming another host must not redirect them there."""
        url = self.config.url
        try:
            endpoint = url.join(reference)
        except ValueError:  # (urlsplit: an unclosed "[", a port out of range...)
            raise TransportLost(
                f"{self.config.description}: bad endpoint {reference[:200]!r}"
            ) from None
        if (endpoint.scheme, endpoint.host, endpoint.port) != (url.scheme, url.host, url.port):
            raise TransportLost(
                f"{self.config.description}: the endpoint {reference[:200]!r} is not of the "
                f"SSE stream's origin {url.scheme}://{url.authority}"
            )
        return endpoint

    async def send(self, out: Outgoing) -> None:
        assert self.endpoint is not None
        # Short (202, the answer comes on the stream): the pool's reserved lane, so that
        # the client's answer to the server's question never waits behind requests.
        response = await authorized_exchange(
            self._pool,
            self.config.auth,
            self.endpoint,
            "POST",
            [("Content-Type", "application/json"), *self.config.headers.items()],
            out.data,
            reserved=True,
        )
        try:
            body = await response.read_all(64 * 1024)  # read to its end: the connection is reused
            if response.status >= 300:
                if response.status == 404:
                    raise TransportLost("the server does not know our SSE session (404)")
                raise PeerError.of(
                    http_failure(
                        response.status,
                        body[:200].decode("utf-8", "replace"),
                        {"status": response.status},
                    )
                )
        finally:
            await response.aclose()

    async def receive(self) -> bytes:
        while True:
            kind, data = await self._next_event()
            if kind == "message" and data:
                return data.encode("utf-8")

    async def aclose(self) -> None:
        await self._response.aclose()
        await self._pool.aclose()
