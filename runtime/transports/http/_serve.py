"""``serve_http``: Streamable HTTP (both eras) and legacy HTTP+SSE on one listener.

Task tree (nothing outlives ``serve_http``)::

    serve_http
    ├── sessions nursery   one task per handshake-era / legacy session, the idle reaper
    └── connections nursery
        ├── accept loop    stops at shutdown
        └── one task per TCP connection (_http11 parser), each request answered in it

Shutdown: stop accepting; refuse new POSTs with 503; sessions' connections stop reading,
give in-flight requests ``Limits.shutdown_grace`` and end, which finishes their SSE streams
(final events first); idle keep-alive connections close at once; whatever still runs
after the grace (plus one second) is cancelled.
"""

from __future__ import annotations

import hmac
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from ...auth import BEARER_TOKEN_SYNTAX, AuthConfig, is_bearer_token, parse_authorization
from ...protocol import Refusal
from ...stores import EventStore, MemoryEventStore, Store
from ._auth import Authenticate, Gate
from ._edge import EdgePolicy, HttpLimits
from ._exchange import Exchange, HttpError, HttpRequest
from ._legacy import LegacySseEndpoint
from ._server import serve_http_listeners
from ._session import SessionRegistry
from ._streamable import StreamableEndpoint

if TYPE_CHECKING:
    from .. import ServerPort

__all__ = ["serve_http"]

Endpoint = Callable[[HttpRequest, Exchange], Awaitable[None]]

log = logging.getLogger("mcp_runtime.http")
#: The Prometheus text exposition format, version 0.0.4.
_PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


async def serve_http(
    hooks: ServerPort,
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    path: str | None = "/mcp",
    sse_path: str | None = None,
    messages_path: str = "/messages",
    allowed_origins: Iterable[str] | None = None,
    allowed_hosts: Iterable[str] | None = None,
    limits: HttpLimits | None = None,
    max_body_size: int = 4 * 1024 * 1024,
    authenticate: Authenticate | None = None,
    auth: AuthConfig | None = None,
    event_store: EventStore | None = None,
    store: Store | None = None,
    health_paths: tuple[str, str] | None = ("/healthz", "/readyz"),
    sock: socket.socket | None = None,
    metrics: Callable[[], bytes] | None = None,
    metrics_path: str = "/metrics",
    metrics_token: str | None = None,
    sockets: Sequence[socket.socket] | None = None,
    shutdown: trio.Event,
    task_status: trio.TaskStatus[tuple[Any, ...]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over HTTP until ``shutdown`` is set (then drain) or cancelled.

    ``hooks``: the server to serve, as the transports see it (``ServerPort``; the name is
    the one this parameter always had).
    ``path``: the Streamable HTTP endpoint (None: none); ``sse_path``: the legacy
    2024-11-05 stream endpoint (None: none), whose POSTs go to ``messages_path``.
    Reports the bound address through ``task_status``.

    ``auth`` (``runtime.auth.AuthConfig``): every request needs a valid bearer token,
    ``tools/call`` also the tool's scopes; the RFC 9728 metadata document is served without
    authentication at each of ``auth.resource_metadata.well_known_paths()``. Or
    ``authenticate``, the generic hook (``runtime.transports.http.Authenticate``).
    With either, a session is bound to the principal that created it.

    ``store`` (``runtime.stores``, already running): when shared, handshake-era sessions
    and their SSE events live there, so any replica serves any session's POST or GET.

    ``sock``: an already listening socket to accept on (instead of binding ``host:port``).

    ``health_paths`` (liveness, readiness; None: none): GET liveness answers 200 while the
    process serves; readiness answers 200 ``{"ready":true}``, or 503 while draining
    (shutdown). While the shared store is unreachable the replica still serves 2026-07-28
    requests and the sessions it holds (what needs the store gets its own 503 + Retry-After),
    so it stays ready: 200 ``{"ready":true,"degraded":"store unreachable"}``, a balancer
    that took it out would cut the stateless traffic too. Neither needs authentication, and
    both answer any ``Host`` (``EdgePolicy.any_host_paths``: probes cannot name the public
    host of ``allowed_hosts``).

    ``sockets``: already bound, listening sockets to accept on instead of opening
    ``host:port`` (``mcp-runtime dev`` keeps one across reloads); closed on exit.

    ``metrics``: when given, ``GET metrics_path`` answers what it returns, as the Prometheus
    text format (``runtime.middleware.Metrics.render``); off by default. With
    ``metrics_token`` it needs ``Authorization: Bearer <metrics_token>`` (the scheme in any
    case, RFC 9110 section 11.1; the token compared in constant time; else 401 with
    ``WWW-Authenticate: Bearer``, RFC 6750 section 3); without it, like the metadata
    documents, none (bind to loopback or filter it at the proxy).
    """
    if metrics_token and not is_bearer_token(metrics_token):
        raise ValueError(f"metrics_token: {BEARER_TOKEN_SYNTAX}")
    expected = metrics_token.encode() if metrics_token else None
    limits = limits or HttpLimits()
    gate = Gate(auth, authenticate)
    body_limit = limits.max_body_size or max_body_size
    policy = EdgePolicy.for_bind(
        host,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        any_host_paths=health_paths or (),
    )
    shared = store if store is not None and store.shared else None
    if event_store is None and shared is not None:
        event_store = shared.events
    events = event_store or MemoryEventStore(limits.max_replay_events)
    if sockets is None and sock is not None:  # a listening socket shared by --workers
        sockets = [sock]
    if sockets is not None:  # (and mcp-runtime dev keeps one across reloads)
        listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(s)) for s in sockets]
    else:
        listeners = await trio.open_tcp_listeners(port, host=host)
    address = listeners[0].socket.getsockname()
    try:
        async with trio.open_nursery() as sessions_nursery:
            registry = SessionRegistry(
                hooks, limits, events, sessions_nursery, shutdown, shared=shared
            )
            sessions_nursery.start_soon(registry.reap)
            endpoint = StreamableEndpoint(hooks, limits, registry, shutdown, gate)
            sessions_nursery.start_soon(endpoint.stop_at_shutdown)
            streamable: Endpoint = endpoint
            legacy = LegacySseEndpoint(limits, registry, shutdown, messages_path, gate)
            sse_stream: Endpoint = legacy.stream
            sse_messages: Endpoint = legacy.messages
            observe = hooks.on_refusal

            # The MCP endpoint first (nearly every request), unless a metadata document
            # is served at that very path.
            mcp_path = path if path not in gate.metadata else None

            def app(request: HttpRequest, exchange: Exchange) -> Awaitable[None]:
                # A router: returns the coroutine of the endpoint that answers this path.
                target = request.path
                if shutdown.is_set():
                    # Draining: a connection opened now gets its answer and is closed; only
                    # the health paths serve (the balancer sends nothing new here).
                    exchange.close_after = True
                    if health_paths is None or target not in health_paths:
                        raise HttpError(
                            503, "Service Unavailable: draining", headers=[("Retry-After", "1")]
                        )
                if target == mcp_path:
                    return streamable(request, exchange)
                document = gate.metadata.get(target)
                if document is not None:
                    # RFC 9728 section 3: public, fetched with GET, no token needed.
                    if request.method != "GET":
                        raise HttpError(405, "Method Not Allowed", headers=[("Allow", "GET")])
                    return exchange.respond(200, document)
                if path is not None and target == path:
                    return streamable(request, exchange)
                route = gate.routes.get(target)
                if route is not None:  # an authorization server's endpoint (AuthConfig.routes)
                    return gate.serve_route(route, request, exchange)
                if metrics is not None and target == metrics_path:
                    if request.method != "GET":
                        raise HttpError(405, "Method Not Allowed", headers=[("Allow", "GET")])
                    if expected is not None and not _bearer_matches(
                        request.header("authorization"), expected
                    ):
                        raise HttpError(
                            401,
                            "Unauthorized: the metrics endpoint needs its bearer token",
                            headers=[("WWW-Authenticate", 'Bearer realm="metrics"')],
                        )
                    return exchange.respond(200, metrics(), content_type=_PROMETHEUS_TEXT)
                if sse_path is not None and target == sse_path:
                    return sse_stream(request, exchange)
                if sse_path is not None and target == messages_path:
                    return sse_messages(request, exchange)
                if health_paths is not None and target in health_paths:
                    return health(request, exchange, target == health_paths[1])
                raise HttpError(404, "Not Found")

            if observe is not None:  # else the router as it is: nothing on its path
                # Around the router: its own refusals (404, 405, 401, 503 draining) and
                # its endpoints'.
                app = _observed(app, observe)  # type: ignore[assignment]

            async def health(request: HttpRequest, exchange: Exchange, readiness: bool) -> None:
                if request.method not in ("GET", "HEAD"):
                    raise HttpError(405, "Method Not Allowed", headers=[("Allow", "GET")])
                headers = [("Cache-Control", "no-store")]
                if not readiness:
                    await exchange.respond(200, b'{"live":true}', headers=headers)
                elif shutdown.is_set():
                    body = b'{"ready":false,"reason":"draining"}'
                    await exchange.respond(503, body, headers=headers)
                elif store is not None and not store.ready:
                    body = b'{"ready":true,"degraded":"store unreachable"}'
                    await exchange.respond(200, body, headers=headers)
                else:
                    await exchange.respond(200, b'{"ready":true}', headers=headers)

            async with trio.open_nursery() as connections:

                async def drain_deadline() -> None:
                    # The grace period counts from the shutdown, however long accepting
                    # goes on for readiness probes (serve_http_listeners ``drain``).
                    await shutdown.wait()
                    deadline = trio.current_time() + hooks.shutdown_grace + 1.0
                    connections.cancel_scope.deadline = deadline
                    sessions_nursery.cancel_scope.deadline = deadline

                connections.start_soon(drain_deadline)
                log.info(
                    "listening transport=http address=%s path=%s sse_path=%s",
                    address,
                    path,
                    sse_path,
                )
                task_status.started(address)
                await serve_http_listeners(
                    listeners,
                    app,
                    policy=policy,
                    limits=limits,
                    max_body_size=body_limit,
                    write_timeout=hooks.write_timeout,
                    shutdown=shutdown,
                    handler_nursery=connections,
                    drain=hooks.shutdown_grace,
                    on_refusal=observe,
                )
    finally:
        with trio.CancelScope(shield=True):
            for listener in listeners:
                await listener.aclose()


class _Named(msgspec.Struct):
    method: Any = None
    id: Any = None


class _ErrorBody(msgspec.Struct):
    error: dict[str, Any] | None = None


def _observed(endpoint: Endpoint, observe: Callable[[Refusal], None]) -> Endpoint:
    """``endpoint`` telling ``observe`` of each request it refuses with an HttpError (one
    the dispatcher did not already see: ``HttpError.observed``)."""

    async def call(request: HttpRequest, exchange: Exchange) -> None:
        try:
            await endpoint(request, exchange)
        except HttpError as exc:
            if not exc.observed:
                try:
                    observe(_refusal_of(request, exc))
                except Exception:
                    log.exception("refusal observer failed")
            raise

    return call


def _bearer_matches(authorization: str | None, expected: bytes) -> bool:
    """Whether ``authorization`` is ``Bearer <expected>``, read as the OAuth resource server
    reads it (``parse_authorization``), the token compared in constant time."""
    if authorization is None:
        return False
    kind, token = parse_authorization(authorization)
    return kind == "token" and hmac.compare_digest(token.encode(), expected)


def _refusal_of(request: HttpRequest, exc: HttpError) -> Refusal:
    """The Refusal for ``exc``: its JSON-RPC code when its body is one error, and the method
    and id of the request when its body names them."""
    code = None
    if exc.body:
        try:
            error = msgspec.json.decode(exc.body, type=_ErrorBody).error
        except msgspec.DecodeError:
            error = None
        if error is not None and isinstance(error.get("code"), int):
            code = error["code"]
    method = request_id = None
    if request.body:
        try:
            named = msgspec.json.decode(request.body, type=_Named)
        except msgspec.DecodeError:
            pass
        else:
            method = named.method if isinstance(named.method, str) else None
            request_id = named.id
    return Refusal(
        code,
        exc.reason,
        "http",
        request.connection_id,
        method,
        request_id,
        status=exc.status,
    )
