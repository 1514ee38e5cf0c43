"""Edge safety for the network transports: Origin/Host allow-lists and HTTP limits.

MCP 2025-11-25 and 2026-07-28 basic/transports, "Security Warning" / "Security & Endpoint":
servers MUST validate the ``Origin`` header on all incoming connections (DNS rebinding) and
answer an invalid one with 403; when running locally they SHOULD bind only to 127.0.0.1.
Checking ``Host`` as well closes the DNS-rebinding hole for clients that send no Origin
(a rebound name reaches the loopback server with the attacker's host name in ``Host``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal
from urllib.parse import urlsplit

__all__ = ["LOOPBACK_NAMES", "EdgePolicy", "HttpLimits", "authority_of", "is_loopback"]

#: Host names that mean "this machine" (the default allow-list when bound to loopback).
LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "[::1]")


def is_loopback(host: str) -> bool:
    """True for a loopback bind address or name ("127.0.0.1", "::1", "localhost")."""
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, str | None]:
    """``"Host"`` header value -> (lower-cased name, port or None); IPv6 keeps brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        name, rest = value[: end + 1], value[end + 1 :]
        return name, rest[1:] if rest.startswith(":") else None
    name, sep, port = value.rpartition(":")
    if not sep:
        return value, None
    return name, port


def _host_matches(value: str, allowed: Iterable[str]) -> bool:
    name, port = _split_host(value)
    if port and not (port.isascii() and port.isdigit()):
        # RFC 3986 section 3.2.3: port = *DIGIT. "localhost:evil.com" names no loopback
        # port; reading it as "localhost" would let a rebound name through.
        return False
    for entry in allowed:
        if entry == "*":
            return True
        e_name, e_port = _split_host(entry)
        if e_name == name and (e_port is None or e_port == port):
            return True
    return False


def _origin_parts(origin: str) -> tuple[str, str] | None:
    """``scheme://host[:port]`` -> (scheme, "host[:port]"), or None when malformed."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc or parts.path not in ("", "/"):
        return None
    return parts.scheme.lower(), parts.netloc.lower()


def authority_of(target: str) -> str | None:
    """The authority of an absolute-form request target (``http://host:port/path``), which
    RFC 9112 section 3.2.2 says the server uses instead of ``Host``; None for origin-form
    (``/path``) and the other forms, "" for an absolute URI without one."""
    if target[:1] == "/" or "://" not in target:
        return None
    try:
        return urlsplit(target).netloc
    except ValueError:
        return ""


@dataclass(frozen=True, slots=True)
class EdgePolicy:
    """Which ``Host`` and ``Origin`` values may reach the server.

    ``allowed_hosts``: entries ``name`` (any port) or ``name:port``; ``"*"`` allows any;
    None allows any. ``allowed_origins``: entries ``scheme://name`` (any port) or
    ``scheme://name:port``; ``"*"`` allows any. A request without ``Origin`` (not a
    browser) passes the origin check; a same-origin request (Origin's host equals ``Host``)
    passes it too; ``Origin: null`` never does unless ``"*"`` is listed.

    ``any_host_paths``: paths whose requests pass the ``Host`` check whatever they name (the
    Origin check still applies): the health probes. Docker's ``HEALTHCHECK`` (a request to
    ``127.0.0.1`` inside the container), Kubernetes' ``httpGet`` probes (the pod's IP) and
    HAProxy's ``option httpchk`` (over HTTP/1.0, no Host at all) cannot name the public host
    the allow-list holds, and what those paths answer (live, ready or why not) reveals
    nothing a rebound page could use.
    """

    allowed_hosts: frozenset[str] | None = None
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    any_host_paths: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def for_bind(
        cls,
        bind_host: str,
        *,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        any_host_paths: Iterable[str] = (),
    ) -> EdgePolicy:
        """The default policy for a server bound to ``bind_host``: the loopback names
        (hosts, and http/https origins on any port) when bound to loopback, else any
        ``Host`` and same-origin only. Explicit lists replace the defaults.
        ``any_host_paths``: see the class."""
        loopback = is_loopback(bind_host)
        if allowed_hosts is not None:
            hosts: frozenset[str] | None = frozenset(h.strip().lower() for h in allowed_hosts)
        elif loopback:
            hosts = frozenset(LOOPBACK_NAMES)
        else:
            hosts = None
        if allowed_origins is not None:
            origins = frozenset(o.strip().lower().rstrip("/") for o in allowed_origins)
        elif loopback:
            origins = frozenset(f"{s}://{n}" for s in ("http", "https") for n in LOOPBACK_NAMES)
        else:
            origins = frozenset()
        return cls(hosts, origins, frozenset(any_host_paths))

    def check(self, host: str | None, origin: str | None, path: str | None = None) -> str | None:
        """Return why the request must get 403, or None when it may pass (``path``: the
        request's, for ``any_host_paths``)."""
        if self.allowed_hosts is not None and path not in self.any_host_paths:
            if host is None:
                return "missing Host header"
            if not _host_matches(host, self.allowed_hosts):
                return "Host not allowed"
        if origin is None or "*" in self.allowed_origins:
            return None
        parts = _origin_parts(origin)
        if parts is None:
            return "Origin not allowed"
        scheme, netloc = parts
        if host is not None and netloc == host.strip().lower():
            return None  # same origin
        for entry in self.allowed_origins:
            e_parts = _origin_parts(entry)
            if e_parts is None or e_parts[0] != scheme:
                continue
            if _host_matches(netloc, (e_parts[1],)):
                return None
        return "Origin not allowed"


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Bounds for the HTTP and WebSocket transports (on top of ``runtime.Limits``).

    Each answers clearly when hit: the HTTP status is named per field.
    """

    #: Largest request body; larger gets 413. None: ``Limits.max_frame_size`` (4 MiB).
    max_body_size: int | None = None
    #: Request header fields per request; more gets 431. 100 is what common servers allow.
    max_header_count: int = 100
    #: Bytes of request line plus headers; more gets 431. 16 KiB fits any real client.
    max_header_size: int = 16 * 1024
    #: Seconds from a request's first byte (or the connection's accept) until its whole
    #: head has arrived; past it the connection is closed (slowloris, dribbled headers).
    header_timeout: float = 10.0
    #: Seconds between body chunks before the connection is closed (slow senders).
    body_timeout: float = 30.0
    #: Seconds from a body's first byte until its last: past it 408 and the connection is
    #: closed, however steadily the bytes trickle in (a body sent at one byte per chunk
    #: timeout would otherwise hold its connection slot for ever). 60 s carries the
    #: largest default body (4 MiB) at 70 KB/s.
    body_total_timeout: float = 60.0
    #: Bytes per second a request body must average from its first byte on, once
    #: ``body_rate_grace`` seconds have passed; under it 408 and the connection is closed (0:
    #: no such bound). A body trickled at a byte every two seconds is cut after the grace, not
    #: at ``body_total_timeout``. 500 B/s is Apache's ``mod_reqtimeout`` default ``MinRate``;
    #: a body that comes with its head (most) is never measured.
    min_body_rate: float = 500.0
    #: Seconds a body may take before ``min_body_rate`` applies (a slow start, a short stall).
    body_rate_grace: float = 5.0
    #: Seconds an idle keep-alive connection waits for its next request.
    keep_alive_timeout: float = 30.0
    #: Concurrent TCP connections; past it a new connection gets 503 and is closed.
    max_connections: int = 1000
    #: Concurrent connections from one client address (an IPv4 address, an IPv6 /64); past
    #: it a new connection from there gets 503 and is closed. None: half of
    #: ``max_connections`` (at least 1), so that one address never holds every slot (twenty
    #: tricklers filled ``--max-connections 20`` for a minute). Behind a reverse proxy every
    #: client has the proxy's address: set it to ``max_connections`` and bound clients at the
    #: proxy (docs/deploy.md).
    max_connections_per_address: int | None = None
    #: Handshake-era sessions this process holds at once (a shared store's too: its copies
    #: here). At the cap see ``session_eviction``.
    max_sessions: int = 10_000
    #: At ``max_sessions``: "lru" ends the least recently used idle session to make room
    #: (idle: no POST or GET being answered, no request running, no open stream; its id then
    #: gets 404, which clients answer by initializing again, 2025-11-25 basic/transports
    #: "Session Management"; with a shared store only this process's copy goes, and the
    #: session lives on in the store). Most clients never send DELETE: refusing, the cap
    #: stayed full of abandoned sessions until they expired (``session_idle_timeout``, 30
    #: min). With none idle, or "refuse", ``initialize`` gets 503.
    session_eviction: Literal["lru", "refuse"] = "lru"
    #: Seconds without a request before a session expires (and releases everything).
    session_idle_timeout: float = 30 * 60.0
    #: Open SSE streams (GET and POST) per session; past it 429.
    max_streams_per_session: int = 32
    #: Events kept per session for ``Last-Event-ID`` replay (oldest dropped first).
    max_replay_events: int = 1000
    #: Seconds between SSE keep-alive comments on a quiet stream (0: none). Checked once per
    #: interval, not per event: a stream that just carried an event gets its next one within
    #: two intervals.
    sse_keepalive: float = 15.0
    #: ``retry`` (milliseconds) sent on SSE streams so clients know when to reconnect.
    sse_retry_ms: int = 1000
    #: Handshake-era session POSTs: answer every request of a client that accepts
    #: ``text/event-stream`` as a (resumable) SSE stream, as the official SDK does, instead
    #: of plain JSON when the answer is the only message (2025-11-25 basic/transports
    #: leaves the choice to the server; JSON is the cheaper default).
    prefer_sse: bool = False
    #: Messages queued for one response stream before it is cut (the client may resume).
    stream_queue_size: int = 1024
    #: Seconds between WebSocket pings; None disables them.
    ws_ping_interval: float | None = 20.0
    #: Seconds to wait for a pong before closing the WebSocket.
    ws_ping_timeout: float = 20.0
    #: Seconds from a WebSocket message's first fragment until its last: past it the
    #: socket is closed with 1008 (a message trickled a fragment at a time would otherwise
    #: hold its connection for ever). Pings keep an idle socket alive, not this.
    ws_message_timeout: float = 60.0

    def __post_init__(self) -> None:
        for name in (
            "max_header_count",
            "max_header_size",
            "max_connections",
            "max_sessions",
            "max_streams_per_session",
            "max_replay_events",
            "stream_queue_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_body_size is not None and self.max_body_size < 1:
            raise ValueError("max_body_size must be at least 1")
        if self.max_connections_per_address is not None and self.max_connections_per_address < 1:
            raise ValueError("max_connections_per_address must be at least 1")
        if self.session_eviction not in ("lru", "refuse"):
            raise ValueError('session_eviction must be "lru" or "refuse"')
        if self.min_body_rate < 0 or self.body_rate_grace < 0:
            raise ValueError("min_body_rate and body_rate_grace must not be negative")

    @property
    def connections_per_address(self) -> int:
        """``max_connections_per_address``, its default (half of ``max_connections``)
        resolved."""
        if self.max_connections_per_address is not None:
            return self.max_connections_per_address
        return max(1, self.max_connections // 2)
