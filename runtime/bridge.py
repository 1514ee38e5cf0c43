"""Proxies and bridges: serve a remote MCP server through ours.

``proxy_server(target)`` is an ordinary :class:`runtime.Server` whose tools, resources,
templates and prompts are the remote's: every list, call, read, get and completion is
forwarded to it through :func:`runtime.client.open_client`, so any target the client reaches
(Streamable HTTP, legacy SSE, WebSocket, TCP, Unix, a FIFO pair, a command over stdio) can be
served on any transport we serve (stdio, HTTP, WebSocket, ...), in either era on each side.

Forwarded faithfully:

- results, untouched (a tool's ``isError`` result is the same result here);
- JSON-RPC errors: a remote error is answered with the same code, message and data;
- progress: a downstream ``progressToken`` gets the remote's ``notifications/progress``;
- cancellation: a downstream cancellation (or timeout) cancels the forwarded request, which
  the client turns into ``notifications/cancelled`` upstream (or a closed POST, 2026-07-28);
- server-to-client requests (sampling, elicitation, roots) the remote sends on a handshake-era
  session's upstream session go to that session's client, and its answer back; asked while
  forwarding a 2026-07-28 request, they become input rounds of that request
  (``runtime._bridge_rounds``);
- log messages of a 2026-07-28 request: its level passed on, the remote's messages on the
  forwarded request's stream relayed to it at that level;
- subscriptions, list-changed and log messages (``resources/subscribe``, ``logging/setLevel``,
  ``subscriptions/listen`` and the remote's ``notifications/*``) to the client they belong to;
- tasks (``tasks/*`` and a task-augmented ``tools/call``) in both task protocols, forwarded
  as they are within an era and translated across eras (``runtime._bridge_tasks``).

Each downstream handshake-era session (an HTTP session, a stdio/TCP/WebSocket connection)
gets an upstream client of its own (:class:`UpstreamSession`), opened by its ``initialize``
and closed when the session ends, so what the remote keeps per session (log level,
subscriptions, roots, tasks, who answers its elicitations) is never shared between our
clients; at most ``max_upstream_sessions`` at once. Stateless 2026-07-28 requests share one
client, opened when serving starts. Where every upstream session is a process (a stdio
remote), at most ``max_upstream_processes`` run at once (:class:`ProcessBudget`): past it a
new session's ``initialize`` is refused. Every request to the remote has a deadline,
``call_timeout`` (a remote's task held by ``tasks/result`` excepted: the task bounds it):
past it the request is cancelled upstream (``notifications/cancelled``) and ours answered
-32001 naming the limit.

Which request a message of the remote belongs to: over Streamable HTTP, the request on whose
response stream it arrives; progress, by its token; a question naming a task (2025-11-25
``io.modelcontextprotocol/related-task``), that task. Over links without per-request streams
(stdio, TCP, Unix, WebSocket, legacy SSE) a handshake-era session's questions and log
messages go to that session's client (related to its request being forwarded: the only one,
or the newest); 2026-07-28 requests that can be asked questions (``_ASKING_METHODS``) are
forwarded to a handshake-era remote one at a time per upstream session (the pool's ``lane``
on the shared one), so what the remote asks or logs meanwhile is the in-flight request's: up to
``max_parallel`` at once, each beyond the first on an extra upstream session of its own
(``runtime._bridge_pool``; by default over TCP, Unix, WebSocket and legacy SSE, not over
stdio or pipes, where a session is a process); to a 2026-07-28 remote (which asks only through
input rounds) the requests that carry a log level go one at a time, for its log messages.

The proxy is a middleware (:class:`Forward`) placed innermost in the chain when serving
starts, so the server's own middleware (and ``--middleware``) sees every forwarded request.
Its parts, a module each: a handshake-era session's upstream session
(``runtime._bridge_session``), listens relayed across (``runtime._bridge_listen``), what
belongs to one hop (``runtime._bridge_hop``), input rounds (``runtime._bridge_rounds``),
parallel sessions (``runtime._bridge_pool``), tasks across eras (``runtime._bridge_tasks``) and
a remote's task run to its end (``runtime._bridge_remote_task``). See ``docs/bridges.md``.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import trio

from ._bridge_hop import (
    TASKS_EXTENSION,
    describe,
    per_hop_removed,
    remote_error,
    remote_tool_tasks,
    strip_meta,
)
from ._bridge_listen import serve_listen
from ._bridge_pool import (
    DEFAULT_MAX_PARALLEL,
    DEFAULT_PARALLEL_IDLE_TIMEOUT,
    Connect,
    PooledSession,
    ProcessBudget,
    UpstreamPool,
    client_error,
)
from ._bridge_remote_task import await_remote_task
from ._bridge_rounds import STATE_PREFIX, Forwarding, Relay, requested_level
from ._bridge_session import DEFAULT_MAX_POLL_INTERVAL, DEFAULT_ROUND_TIMEOUT, UpstreamSession
from ._bridge_tasks import ModernClientTasks
from ._context import LOG_LEVELS
from ._lifetime import ServerCrashed
from .client import (
    Backoff,
    Client,
    ClientError,
    Notification,
    PeerError,
    RequestTimeout,
    TransportLost,
    open_client,
)
from .framing import loggable
from .middleware import Middleware, Next, Request
from .protocol import (
    META_LOG_LEVEL,
    MISSING_CLIENT_CAPABILITY,
    REQUEST_TIMEOUT,
    JSONRPCError,
    overloaded,
)

if TYPE_CHECKING:
    from ._server import Server

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_PARALLEL",
    "DEFAULT_MAX_POLL_INTERVAL",
    "DEFAULT_MAX_UPSTREAM_PROCESSES",
    "DEFAULT_MAX_UPSTREAM_SESSIONS",
    "DEFAULT_PARALLEL_IDLE_TIMEOUT",
    "DEFAULT_ROUND_TIMEOUT",
    "FORWARDED_METHODS",
    "Forward",
    "UpstreamSession",
    "proxy_server",
    "proxy_target",
]

#: The requests answered by the remote (2025-11-25 server/tools, server/resources,
#: server/prompts, server/utilities/completion; the same methods in 2026-07-28).
FORWARDED_METHODS: Final = frozenset(
    {
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        # Tasks (2025-11-25 basic/utilities/tasks; the 2026-07-28 tasks extension): a task
        # lives on the remote, so its id is only meaningful on the same upstream session.
        "tasks/get",
        "tasks/result",
        "tasks/cancel",
        "tasks/list",
        "tasks/update",
    }
)

#: Upstream sessions held at once (one per downstream handshake-era session).
DEFAULT_MAX_UPSTREAM_SESSIONS: Final = 64

#: Upstream processes held at once where each upstream session is one (a stdio remote):
#: the shared session's, one per downstream handshake-era session, the pool's extras. A
#: Python server of ours holds about 29 MiB after ``initialize`` (benchmarks' rss_init row),
#: so 16 of them about half a GiB, where the session cap of 64 would let them take 1.9 GiB.
DEFAULT_MAX_UPSTREAM_PROCESSES: Final = 16

#: Seconds the proxy waits for the remote's answer to one request (``call_timeout``,
#: ``--upstream-call-timeout``): as long as ``round_timeout``, since a remote's question to
#: our client (answered by a person, perhaps) is part of its request's time.
DEFAULT_CALL_TIMEOUT: Final = 300.0

_SESSION_KEY: Final = "mcp.bridge.upstream"

log = logging.getLogger("mcp_runtime.bridge")

#: Input rounds answered for one forwarded request (as the client's own limit).
MAX_INPUT_ROUNDS: Final = 10


def _asking(request: Request, timeout: float) -> Callable[[str, Any], Awaitable[Any]]:
    """``ask(method, params)``: a server-to-client request to the client of ``request``
    (handshake era), related to it, its JSON-RPC error passed back as the remote's client
    error."""

    async def ask(method: str, params: Any) -> Any:
        try:
            return await request.context.peer.request(
                method, params, timeout=timeout, related=request.id
            )
        except JSONRPCError as exc:
            raise PeerError(exc.code, exc.message, exc.data) from None

    return ask


class Forward(Middleware):
    """Answers :data:`FORWARDED_METHODS` (and subscriptions, log levels) from the remote:
    through the downstream session's :class:`UpstreamSession`, or ``client`` (the shared
    one, set while serving) for 2026-07-28 requests."""

    def __init__(
        self,
        max_upstream_sessions: int = DEFAULT_MAX_UPSTREAM_SESSIONS,
        *,
        round_timeout: float = DEFAULT_ROUND_TIMEOUT,
        max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
        max_parallel: int = 1,
        parallel_idle_timeout: float = DEFAULT_PARALLEL_IDLE_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        max_upstream_processes: int | None = None,
    ) -> None:
        self.client: Client | None = None
        self.connect: Connect | None = None
        self.max_upstream_sessions = max_upstream_sessions
        self.round_timeout = round_timeout
        self.max_poll_interval = max_poll_interval
        #: The deadline of each request to the remote (``tasks/result`` excepted).
        self.call_timeout = call_timeout
        #: Where each upstream session is a process (a stdio remote): how many may run.
        self.processes = (
            ProcessBudget(max_upstream_processes) if max_upstream_processes is not None else None
        )
        #: 2026-07-28 clients' tasks on a handshake-era remote, translated (_bridge_tasks).
        self.tasks = ModernClientTasks(round_timeout=round_timeout)
        #: The upstream sessions open now (one per downstream handshake-era session).
        self.sessions: set[UpstreamSession] = set()
        #: Where forwardings run that outlive a downstream request (input rounds); set
        #: while serving.
        self.nursery: trio.Nursery | None = None
        #: Forwardings of modern requests through a handshake-era shared client, oldest
        #: first; and those parked in an input round, by their ``requestState``.
        self.forwardings: list[Forwarding] = []
        self.parked: dict[str, Forwarding] = {}
        #: Whether the remote's link ties each message to its request (Streamable HTTP:
        #: per-request response streams); set by proxy_server from the target.
        self.streams_per_request = True
        #: Without per-request streams: 2026-07-28 requests that can be asked questions are
        #: forwarded to a handshake-era remote one at a time per upstream session (a turn,
        #: held until the remote's request ends, input rounds included); up to
        #: ``max_parallel`` at once, the first on the shared session (the pool's lane), each
        #: other on an extra upstream session of its own (runtime._bridge_pool).
        self.pool = UpstreamPool(max_parallel, parallel_idle_timeout, self.processes)
        #: 2026-07-28 requests being forwarded through the shared client that carry a log
        #: level, and the relay passing the remote's log messages on to each.
        self.relays: dict[Request, Relay] = {}
        #: The log level set on a handshake-era shared client (the lowest any 2026-07-28
        #: request asked for: each request's own level is applied when relaying).
        self.shared_level: str | None = None

    async def _session(self, request: Request) -> UpstreamSession:
        """The downstream session's upstream session, opened on first use (its
        ``initialize``, or the first request of a session we did not see initialize)."""
        state = request.session.state
        upstream = state.get(_SESSION_KEY)
        if not isinstance(upstream, UpstreamSession):
            connect = self.connect
            if connect is None:
                raise RuntimeError("the proxy is not serving")
            if len(self.sessions) >= self.max_upstream_sessions:
                raise overloaded(
                    f"the proxy holds {len(self.sessions)} upstream sessions "
                    "(max_upstream_sessions)",
                    limit="max_upstream_sessions",
                    max=self.max_upstream_sessions,
                )
            processes = self.processes
            if processes is not None and not processes.try_take():
                # Refused, not queued: a session holds its process until it ends (DELETE,
                # expiry, a closed connection), which may be half an hour away.
                raise overloaded(
                    f"the proxy runs {processes.used} upstream processes (max_upstream_processes)",
                    limit="max_upstream_processes",
                    max=processes.limit,
                )
            caps = request.session.client_capabilities
            if request.method == "initialize":
                asked = request.params.get("capabilities")
                caps = asked if isinstance(asked, dict) else {}
            upstream = UpstreamSession(
                request.context.peer, caps, self.round_timeout, self.max_poll_interval
            )
            state[_SESSION_KEY] = upstream
            self.sessions.add(upstream)

            async def hold() -> None:
                try:
                    await upstream.run(connect)  # returns once its process is gone
                finally:
                    self.sessions.discard(upstream)
                    state.pop(_SESSION_KEY, None)
                    if processes is not None:
                        processes.give_back()

            try:
                request.context.peer.start_soon(hold, name="bridge upstream session")
            except RuntimeError:
                self.sessions.discard(upstream)
                state.pop(_SESSION_KEY, None)
                if processes is not None:
                    processes.give_back()
                raise
        await upstream.ready.wait()
        if upstream.client is None:
            raise JSONRPCError(-32603, upstream.failure or "the upstream session ended")
        return upstream

    async def on_notification(self, request: Request, call_next: Next) -> None:
        await call_next()
        if request.method == "notifications/roots/list_changed" and request.era == "handshake":
            upstream = request.session.state.get(_SESSION_KEY)
            if isinstance(upstream, UpstreamSession) and upstream.client is not None:
                with contextlib.suppress(ClientError):
                    await upstream.client.notify("notifications/roots/list_changed")

    async def on_request(self, request: Request, call_next: Next) -> Any:
        method = request.method
        handshake = request.era == "handshake"
        if method == "initialize":
            opened = await self._session(request)
            return describe(await call_next(), opened.client, modern=False)
        if method == "server/discover":
            return describe(await call_next(), self.client, modern=True)
        if method == "subscriptions/listen" and not handshake:
            if self.client is None:
                raise RuntimeError("the proxy is not connected to its remote server")
            return await serve_listen(self.client, request)
        if method not in FORWARDED_METHODS and method not in _SESSION_METHODS:
            return await call_next()
        upstream: UpstreamSession | None = None
        if handshake:
            upstream = await self._session(request)
            client = upstream.client
            assert client is not None
        else:
            client = self.client
            if client is None:
                raise RuntimeError("the proxy is not connected to its remote server")
        try:
            if method in _SESSION_METHODS:
                return await self._session_method(request, call_next, client, upstream)
            params = strip_meta(dict(request.params))
            level = None if handshake else requested_level(request)
            if level is not None and client.era == "modern":
                # 2026-07-28 server/utilities/logging: the level travels with the request.
                params["_meta"] = {**(params.get("_meta") or {}), META_LOG_LEVEL: level}
            elif level is not None:
                await self._lower_shared_level(client, level)
            if client.era != request.era and (
                method.startswith("tasks/") or method == "tools/call"
            ):
                crossed = await self._tasks_across(client, method, params, request, upstream)
                if crossed is not _NOT_A_TASK:
                    return crossed
            if not handshake and client.era == "handshake" and method in _ASKING_METHODS:
                return await self._forward_rounds(client, method, params, request)
            if (
                not handshake
                and client.era == "modern"
                and level is not None
                and not self.streams_per_request
            ):
                # A 2026-07-28 remote over a link without per-request streams: its log
                # messages name no request, so requests that want them go one at a time
                # per upstream session (the lane on the shared one) and get what arrives
                # meanwhile (on_shared_notification); up to max_parallel at once.
                return await self._forward_in_turn(client, method, params, request, level)
            if upstream is None:
                return await self._forward_relaying(client, method, params, request, level)
            # A handshake-era session's requests in flight: its remote's questions relate
            # to them (UpstreamSession.handler).
            upstream.in_flight.append(request)
            try:
                return await self._forward_relaying(client, method, params, request, level)
            finally:
                upstream.in_flight.remove(request)
        except TransportLost as exc:
            if upstream is not None:
                upstream.lost()
            raise JSONRPCError(
                -32603,
                f"the remote MCP server is unreachable: {exc}",
                {"attempts": exc.attempts},
            ) from None
        except PeerError:
            raise
        except RequestTimeout as exc:
            # The client cancelled it upstream (notifications/cancelled) when it expired.
            raise JSONRPCError(
                REQUEST_TIMEOUT,
                f"Request timed out: the remote MCP server did not answer {exc.method} "
                f"within {exc.timeout:g} s (call_timeout)",
                {"timeoutSeconds": exc.timeout, "limit": "call_timeout"},
            ) from None
        except ClientError as exc:
            raise JSONRPCError(-32603, f"the remote MCP server: {exc}") from None

    async def _tasks_across(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        request: Request,
        upstream: UpstreamSession | None,
    ) -> Any:
        """Tasks translated between the two task protocols (``runtime._bridge_tasks``), or
        ``_NOT_A_TASK`` for a ``tools/call`` that is not one."""
        if upstream is not None:  # a handshake-era client, a 2026-07-28 remote
            tasks = upstream.tasks
            assert tasks is not None
            if method.startswith("tasks/"):
                return await tasks.handle(method, params, _asking(request, self.round_timeout))
            if "task" not in params:
                return _NOT_A_TASK

            async def forward(sent: dict[str, Any]) -> Any:
                return await self._forward(client, method, sent, request, None, keep_task=True)

            return await tasks.call(params, forward)
        # A 2026-07-28 client, a handshake-era remote.
        if method.startswith("tasks/"):
            return await self.tasks.handle(client, method, params)
        caps = client.description.capabilities if client.description else {}
        if not remote_tool_tasks(caps):
            return _NOT_A_TASK
        support = await self.tasks.task_support(client, str(params.get("name")))
        if support not in ("optional", "required"):
            return _NOT_A_TASK
        extensions = request.context.client_capabilities.get("extensions")
        if not (isinstance(extensions, dict) and TASKS_EXTENSION in extensions):
            if support == "required":
                # SEP-2663 "Required Capabilities": -32021 naming the extension.
                raise JSONRPCError(
                    MISSING_CLIENT_CAPABILITY,
                    f"Missing required client capability: the {TASKS_EXTENSION} extension",
                    {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
                )
            return _NOT_A_TASK
        if self.nursery is None:
            raise RuntimeError("the proxy is not serving")
        return await self.tasks.call(client, params, self.nursery)

    async def _session_method(
        self, request: Request, call_next: Next, client: Client, upstream: UpstreamSession | None
    ) -> Any:
        """``logging/setLevel``, ``resources/subscribe``/``unsubscribe`` (handshake era):
        state of the downstream session, so set on its upstream session (where the client
        keeps it across reconnections)."""
        method = request.method
        try:
            if method == "logging/setLevel":
                result = await call_next()  # ours validates the level and records it
                await client.set_logging_level(str(request.params.get("level")))
                return result
            uri = str(request.params.get("uri"))
            assert upstream is not None  # handshake era only (_SESSION_METHODS)
            if method == "resources/subscribe":
                await upstream.subscribe(client, uri)
            else:
                await upstream.unsubscribe(client, uri)
            return {}
        except PeerError as exc:
            raise remote_error(exc.code, exc.message, exc.data) from None

    async def _lower_shared_level(self, client: Client, level: str) -> None:
        """A handshake-era remote logs at its session's level: the shared client's session
        is set to the lowest level a 2026-07-28 request asked for (each request then gets
        only what its own level lets through, see :class:`Relay`)."""
        current = self.shared_level
        if current is not None and LOG_LEVELS.index(current) <= LOG_LEVELS.index(level):
            return
        self.shared_level = level
        try:
            await client.set_logging_level(level)  # re-applied by the client on reconnect
        except PeerError as exc:
            log.warning("the remote refused logging/setLevel %s: %s", level, loggable(exc))

    async def _forward_rounds(
        self, client: Client, method: str, params: dict[str, Any], request: Request
    ) -> Any:
        """A 2026-07-28 request through a handshake-era remote: the remote's questions become
        input rounds of the downstream request (``runtime._bridge_rounds``)."""
        state = params.get("requestState")
        forwarding: Forwarding | None = None
        if isinstance(state, str) and state.startswith(STATE_PREFIX):
            forwarding = self.parked.pop(state, None)
            if forwarding is None:
                raise JSONRPCError(
                    -32602, "Invalid params: requestState is unknown or its request ended"
                )
            forwarding.linger.cancel()
            forwarding.answer(params.get("inputResponses"))
        else:
            pooled: PooledSession | None = None
            if not self.streams_per_request:
                # No per-request streams to the remote: one such forwarding at a time on an
                # upstream session, so what the remote sends meanwhile is its (the module
                # docstring's rule); up to max_parallel on sessions of their own.
                pooled = await self._take_turn()
                if pooled is not None:
                    client = pooled.client or client
            try:
                forwarding = self._start_forwarding(client, method, params, request, pooled)
            except BaseException:
                if not self.streams_per_request:
                    self.pool.give_turn_back(pooled)
                raise
        try:
            finished, value = await forwarding.outcome(request)
        except PeerError as exc:
            raise remote_error(exc.code, exc.message, exc.data) from None
        if finished:
            return per_hop_removed(value)
        self.parked[forwarding.state] = forwarding
        return {
            "resultType": "input_required",
            "inputRequests": value,
            "requestState": forwarding.state,
        }

    async def _take_turn(self) -> PooledSession | None:
        """A turn for a forwarding (``UpstreamPool.take_turn``): ``None`` for the shared
        session, else an extra upstream session (its log level the shared one's)."""
        nursery, connect = self.nursery, self.connect
        if nursery is None or connect is None:
            raise RuntimeError("the proxy is not serving")
        pooled = await self.pool.take_turn(connect, nursery)
        if pooled is None:
            return None
        try:
            level = self.shared_level
            if level is not None and pooled.level != level and pooled.client is not None:
                await pooled.client.set_logging_level(level)
                pooled.level = level
        except PeerError as exc:
            log.warning("the remote refused logging/setLevel %s: %s", level, loggable(exc))
        except BaseException:
            self.pool.give_turn_back(pooled)
            raise
        return pooled

    def _start_forwarding(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        request: Request,
        pooled: PooledSession | None = None,
    ) -> Forwarding:
        nursery = self.nursery
        if nursery is None:
            raise RuntimeError("the proxy is not serving")
        forwarding = Forwarding(request, self.round_timeout)
        relay = Relay(lambda: forwarding.current)
        if pooled is not None:
            pooled.forwarding = forwarding  # its session's questions and log messages
            pooled.sink = forwarding.note

        async def send() -> Any:
            return await client.request(
                method,
                params,
                # The whole forwarding, input rounds included; a round nobody comes back to
                # ends sooner (round_timeout).
                timeout=self.call_timeout,
                progress=relay.progress,
                on_notification=relay.note,
                on_request=forwarding.ask,
            )

        async def run() -> None:
            # The shared session's forwardings (its questions go to the newest of them).
            shared = pooled is None
            if shared:
                self.forwardings.append(forwarding)
            try:
                await forwarding.run(send, relay)
            finally:
                if shared:
                    self.forwardings.remove(forwarding)
                if not self.streams_per_request:
                    self.pool.give_turn_back(
                        pooled, lost=isinstance(forwarding.error, TransportLost)
                    )
            try:
                if forwarding.state in self.parked and not forwarding.abandoned:
                    # The remote answered while our client was between two rounds: its
                    # retry gets the outcome (and what the remote said meanwhile), if it
                    # comes within round_timeout.
                    with forwarding.linger, trio.move_on_after(self.round_timeout):
                        await trio.sleep_forever()
            finally:
                self.parked.pop(forwarding.state, None)

        nursery.start_soon(run)
        return forwarding

    async def _forward(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        request: Request,
        progress: Any,
        on_notification: Any = None,
        *,
        keep_task: bool = False,
    ) -> Any:
        ask = _asking(request, self.round_timeout)
        for _round in range(MAX_INPUT_ROUNDS + 1):
            try:
                # The downstream request's cancel scope bounds it too. A 2025-11-25
                # tasks/result waits for its task to end, however long it runs: the task's
                # ttl bounds it, not our deadline.
                result = await client.request(
                    method,
                    params,
                    timeout=None if method == "tasks/result" else self.call_timeout,
                    progress=progress,
                    on_notification=on_notification,
                    # A question on this request's own stream (Streamable HTTP) is this
                    # request's: asked of its client, related to it.
                    on_request=ask if request.era == "handshake" else None,
                )
            except PeerError as exc:
                raise remote_error(exc.code, exc.message, exc.data) from None
            kind = result.get("resultType") if isinstance(result, dict) else None
            if kind == "task" and (request.era == "modern" or keep_task):
                # 2026-07-28 tasks extension: the remote made a task; its id is the
                # remote's, polled through us with tasks/get (forwarded).
                return per_hop_removed(result, keep_result_type=True)
            if kind == "task":
                # A handshake-era client did not ask for a task (the 2026-07-28 tasks
                # extension is not declared across eras): run it to its end for it.
                return await await_remote_task(
                    client, result, ask, max_poll_interval=self.max_poll_interval
                )
            if kind != "input_required":
                return per_hop_removed(result)
            if request.era == "modern":
                # 2026-07-28 basic/patterns/mrtr: our client answers the round and retries
                # with inputResponses and the remote's requestState, both forwarded as is.
                return per_hop_removed(result, keep_result_type=True)
            # A handshake-era client: each input request becomes a server-to-client request.
            answers: dict[str, Any] = {}
            for key, asked in (result.get("inputRequests") or {}).items():
                answers[key] = await ask(str(asked.get("method")), asked.get("params"))
            params = {**params, "inputResponses": answers}
            if "requestState" in result:
                params["requestState"] = result["requestState"]
            else:
                params.pop("requestState", None)
        raise JSONRPCError(-32603, f"{method}: the remote asked for input {MAX_INPUT_ROUNDS} times")

    async def _forward_in_turn(
        self, client: Client, method: str, params: dict[str, Any], request: Request, level: str
    ) -> Any:
        """A 2026-07-28 request that carries a log level, to a 2026-07-28 remote, in a turn:
        on the shared session or an extra one of its own, so the log messages on that
        session are this request's."""
        pooled = await self._take_turn()
        lost = False
        try:
            if pooled is None:
                return await self._forward_relaying(client, method, params, request, level)
            assert pooled.client is not None
            return await self._forward_relaying(
                pooled.client, method, params, request, level, pooled=pooled
            )
        except TransportLost:
            lost = True
            raise
        finally:
            self.pool.give_turn_back(pooled, lost=lost)

    async def _forward_relaying(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        request: Request,
        level: str | None,
        *,
        pooled: PooledSession | None = None,
    ) -> Any:
        """Forward, passing on the remote's progress (when the request has a
        ``progressToken``) and, for a 2026-07-28 request that carries a log level, the log
        messages the remote sends on the forwarded request's stream."""
        token = request.meta.get("progressToken")
        if not isinstance(token, str | int) and level is None:
            return await self._forward(client, method, params, request, None)
        relay = Relay(lambda: request)
        if pooled is not None:
            pooled.sink = relay.note  # what the remote logs on its session is this request's
        elif level is not None:
            self.relays[request] = relay
        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay.run)
            try:
                return await self._forward(
                    client,
                    method,
                    params,
                    request,
                    relay.progress if isinstance(token, str | int) else None,
                    relay.note if level is not None else None,
                )
            finally:
                self.relays.pop(request, None)
                relay.close()

    def on_shared_notification(self, note: Notification) -> None:
        """The shared client's notifications (synchronously). Over a link without
        per-request streams a handshake-era remote's log message names no request: it goes to
        the one 2026-07-28 forwarding in flight (the lane makes it the only one)."""
        if note.method == "notifications/tools/list_changed":
            self.tasks.support.clear()  # tools' taskSupport is read again on next use
        if self.streams_per_request or note.method != "notifications/message":
            return
        if len(self.forwardings) == 1:
            self.forwardings[0].note(note)
        elif not self.forwardings and len(self.relays) == 1:
            # A 2026-07-28 remote (or a request that cannot be asked): the one request in
            # flight that wants log messages (the lane keeps it the only one).
            next(iter(self.relays.values())).note(note)

    def handler(self, method: str) -> Any:
        """The shared client's handler for the remote's ``method`` requests."""

        async def forward(params: dict[str, Any]) -> Any:
            # Only 2026-07-28 requests use the shared client: such a client can only be
            # asked in an input round of its own request. A question that arrived on a
            # forwarded request's stream went to its forwarding already (on_request); one
            # over a link that cannot tell (stdio, TCP, WebSocket, legacy SSE) goes to the
            # newest forwarding, as a handshake-era session's do (UpstreamSession.handler).
            bridged = await self.tasks.ask_for(params)
            if bridged is not None:  # a translated task's question (related-task _meta)
                return await bridged.ask(method, params, self.round_timeout)
            if self.forwardings:
                return await self.forwardings[-1].ask(method, params)
            raise PeerError(
                -32601, f"Method not found: {method} (no 2026-07-28 request being forwarded)"
            )

        return forward


#: ``_tasks_across``: the request is not a task; forward it as any other.
_NOT_A_TASK: Final = object()

#: The 2026-07-28 requests that may get an input round (basic/patterns/mrtr).
_ASKING_METHODS: Final = frozenset({"tools/call", "resources/read", "prompts/get"})

#: Per-session requests the proxy answers itself after setting them on the upstream session.
_SESSION_METHODS: Final = frozenset(
    {"logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)


def proxy_server(
    target: str | Sequence[str],
    *,
    name: str = "mcp-runtime-proxy",
    era: str = "auto",
    framing: str = "ndjson",
    headers: Mapping[str, str] | None = None,
    bearer_token: str | None = None,
    backoff: Backoff | None = None,
    max_upstream_sessions: int = DEFAULT_MAX_UPSTREAM_SESSIONS,
    round_timeout: float = DEFAULT_ROUND_TIMEOUT,
    max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
    max_parallel: int | None = None,
    parallel_idle_timeout: float = DEFAULT_PARALLEL_IDLE_TIMEOUT,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    max_upstream_processes: int = DEFAULT_MAX_UPSTREAM_PROCESSES,
) -> Server:
    """A :class:`runtime.Server` serving the MCP server at ``target`` (any target
    :func:`runtime.client.open_client` takes). A shared client is connected when serving
    starts (its lifespan; it answers 2026-07-28 requests) and closed when serving ends; each
    downstream handshake-era session gets its own (at most ``max_upstream_sessions``).
    ``round_timeout``: seconds a remote's question waits for our client's answer (a
    server-to-client request, or a 2026-07-28 client's input round); ``max_poll_interval``:
    the longest wait, in seconds, between two polls of a remote's task run for our client.
    ``max_parallel``: over a link without per-request streams, 2026-07-28 requests that can
    be asked questions forwarded at once to a handshake-era remote, each beyond the first on
    an extra upstream session of its own (default :data:`DEFAULT_MAX_PARALLEL` over TCP,
    Unix, WebSocket and legacy SSE; 1, one at a time, over stdio and pipes, where a session
    is a process); an extra session is closed after ``parallel_idle_timeout`` seconds
    unused. ``call_timeout``: seconds the proxy waits for the remote's answer to a request
    before cancelling it upstream and answering -32001 (a remote's task waited for by
    ``tasks/result`` excepted). ``max_upstream_processes``: where every upstream session is
    a process (a command run over stdio, a server file), how many may run at once (the
    shared session's included); past it a new session's ``initialize`` is refused with
    -32010, and a parallel forwarding waits for the shared session."""
    from ._server import Server

    if max_upstream_sessions < 1:
        raise ValueError("max_upstream_sessions must be at least 1")
    if not round_timeout > 0:
        raise ValueError("round_timeout must be a positive number of seconds")
    if not max_poll_interval > 0:
        raise ValueError("max_poll_interval must be a positive number of seconds")
    if not call_timeout > 0:
        raise ValueError("call_timeout must be a positive number of seconds")
    if max_upstream_processes < 1:
        raise ValueError("max_upstream_processes must be at least 1")
    if max_parallel is None:
        max_parallel = DEFAULT_MAX_PARALLEL if _sessions_cheap(target) else 1
    forward = Forward(
        max_upstream_sessions,
        round_timeout=round_timeout,
        max_poll_interval=max_poll_interval,
        max_parallel=max_parallel,
        parallel_idle_timeout=parallel_idle_timeout,
        call_timeout=call_timeout,
        max_upstream_processes=max_upstream_processes if _spawns(target) else None,
    )
    forward.streams_per_request = _streams_per_request(target)

    def connect(**handlers: Any) -> contextlib.AbstractAsyncContextManager[Client]:
        return open_client(
            target,
            era=era,  # type: ignore[arg-type]
            framing=framing,
            headers=headers,
            bearer_token=bearer_token,
            backoff=backoff,
            # Every request to the remote unless it says otherwise (the initialize, polls,
            # log levels, subscriptions); a listen is held open regardless.
            timeout=call_timeout,
            **handlers,
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[None]:
        # Innermost: the middleware added before (the file's, --middleware) wraps us.
        if forward in app.middleware_chain:
            app.middleware_chain.remove(forward)
        app.middleware_chain.append(forward)
        async with contextlib.AsyncExitStack() as stack:
            processes = forward.processes
            if processes is not None:
                # The shared session's process, given back once it is closed (LIFO).
                processes.try_take()  # always there: the budget is at least 1
                stack.callback(processes.give_back)
            try:
                client = await stack.enter_async_context(
                    connect(
                        sampling=forward.handler("sampling/createMessage"),
                        elicitation=forward.handler("elicitation/create"),
                        roots=forward.handler("roots/list"),
                        on_notification=forward.on_shared_notification,
                    )
                )
            except (ClientError, BaseExceptionGroup) as exc:
                # One line for the CLI (it exits 1 on ServerCrashed), not a traceback.
                reason = client_error(exc)
                if reason is None:
                    raise
                raise ServerCrashed(f"cannot reach the remote MCP server: {reason}") from None
            forward.client = client
            forward.connect = connect
            try:
                async with trio.open_nursery() as nursery:
                    forward.nursery = nursery
                    try:
                        yield None
                    finally:
                        nursery.cancel_scope.cancel()
            finally:
                forward.client = None
                forward.connect = None
                forward.nursery = None
                forward.shared_level = None

    app = Server(name, lifespan=lifespan)
    app.add_middleware(forward)
    return app


def _streams_per_request(target: str | Sequence[str]) -> bool:
    """Whether ``target`` is Streamable HTTP, whose per-request response streams tie each
    message of the remote to its request (a legacy ``/sse`` URL, stdio, TCP, Unix, pipes
    and WebSocket do not)."""
    if not isinstance(target, str) or not target.startswith(("http://", "https://")):
        return False
    return not urlsplit(target).path.rstrip("/").endswith("/sse")


def _spawns(target: str | Sequence[str]) -> bool:
    """Whether each session with ``target`` is a process of its own: a command (stdio) or a
    server file, anything that is not a URL, a socket or a FIFO pair."""
    return not _sessions_cheap(target) and not (
        isinstance(target, str) and target.startswith("pipe:")
    )


def _sessions_cheap(target: str | Sequence[str]) -> bool:
    """Whether another session with ``target`` is a connection (a URL, TCP, Unix), not a
    process (stdio) or a FIFO pair (pipes)."""
    return isinstance(target, str) and target.startswith(
        ("http://", "https://", "ws://", "wss://", "tcp://", "unix:")
    )


def proxy_target(target: str) -> str | list[str]:
    """The CLI's TARGET as :func:`open_client` takes it: ``stdio:COMMAND ARGS`` is a command
    line (split as a shell would); anything else (a URL, ``unix:``, ``pipe:``) is kept."""
    if target.startswith("stdio:"):
        command = shlex.split(target[len("stdio:") :])
        if not command:
            raise ValueError("stdio: needs a command line, e.g. 'stdio:python server.py'")
        return command
    return target
