"""Proxies and bridges: serve a remote MCP server through ours.

``proxy_server(target)`` is an ordinary :class:`runtime.Server` whose tools, resources,
templates and prompts are the remote's: every list, call, read, get and completion is
forwarded to it through :func:`runtime.client.open_client`, so any target the client reaches
(Streamable HTTP, legacy SSE, WebSocket, TCP, Unix, a FIFO pair, a command over stdio) can be
served on any transport we serve (stdio, HTTP, WebSocket, ...), in either era on each side.
See ``docs/bridges.md``.

How a request crosses the bridge::

    our client --> a transport --> the Server and its middleware --> Forward (innermost)
      initialize, server/discover      answered by us, with the remote's features (_hop)
      subscriptions/listen (2026-07-28) a listen held on the remote, relayed (_listen)
      a forwarded method:
        1. its upstream client: the downstream session's own (handshake era, _session),
           or the shared one (2026-07-28, _shared)
        2. a Call: the request, that client, its params without our hop's _meta (_hop),
           its log level (_relay)
        3. the route of (our client's era, the remote's era) picks the method's handler
           (_eras): sent as it is (_send), in input rounds (_rounds), in a turn on a pooled
           session (_pool), as a translated task (_tasks, _remote_task)
        4. runtime.client sends it to the remote; what the remote sends meanwhile
           (progress, log messages, its questions) goes to the request it belongs to
           (_relay, _rounds, _session, _shared)
        5. the remote's answer, without what belongs to its hop (_hop) --> our client;
           what the client raised about the remote, one precise JSON-RPC error (_forward)

Forwarded faithfully:

- results, untouched (a tool's ``isError`` result is the same result here);
- JSON-RPC errors: a remote error is answered with the same code, message and data;
- progress: a downstream ``progressToken`` gets the remote's ``notifications/progress``;
- cancellation: a downstream cancellation (or timeout) cancels the forwarded request, which
  the client turns into ``notifications/cancelled`` upstream (or a closed POST, 2026-07-28);
- server-to-client requests (sampling, elicitation, roots) the remote sends on a handshake-era
  session's upstream session go to that session's client, and its answer back; asked while
  forwarding a 2026-07-28 request, they become input rounds of that request;
- log messages of a 2026-07-28 request: its level passed on, the remote's messages on the
  forwarded request's stream relayed to it at that level;
- subscriptions, list-changed and log messages (``resources/subscribe``, ``logging/setLevel``,
  ``subscriptions/listen`` and the remote's ``notifications/*``) to the client they belong to;
- tasks (``tasks/*`` and a task-augmented ``tools/call``) in both task protocols, forwarded
  as they are within an era and translated across eras.

Each downstream handshake-era session (an HTTP session, a stdio/TCP/WebSocket connection)
gets an upstream client of its own (:class:`UpstreamSession`), opened by its ``initialize``
and closed when the session ends, so what the remote keeps per session (log level,
subscriptions, roots, tasks, who answers its elicitations) is never shared between our
clients; at most ``max_upstream_sessions`` at once. Stateless 2026-07-28 requests share one
client, opened when serving starts. Where every upstream session is a process (a stdio
remote), at most ``max_upstream_processes`` run at once: past it a new session's
``initialize`` is refused. Every request to the remote has a deadline, ``call_timeout`` (a
remote's task held by ``tasks/result`` excepted: the task bounds it): past it the request is
cancelled upstream (``notifications/cancelled``) and ours answered -32001 naming the limit.

Which request a message of the remote belongs to: over Streamable HTTP, the request on whose
response stream it arrives; progress, by its token; a question naming a task (2025-11-25
``io.modelcontextprotocol/related-task``), that task. Over links without per-request streams
(stdio, TCP, Unix, WebSocket, legacy SSE) a handshake-era session's questions and log
messages go to that session's client (related to its request being forwarded: the only one,
or the newest); 2026-07-28 requests that can be asked questions (``tools/call``,
``resources/read``, ``prompts/get``) are forwarded to a handshake-era remote one at a time per
upstream session (the pool's ``lane`` on the shared one), so what the remote asks or logs
meanwhile is the in-flight request's: up to ``max_parallel`` at once, each beyond the first on
an extra upstream session of its own (by default over TCP, Unix, WebSocket and legacy SSE, not
over stdio or pipes, where a session is a process); to a 2026-07-28 remote (which asks only
through input rounds) the requests that carry a log level go one at a time, for its log
messages.

Each module has one job:

- ``_proxy``: ``proxy_server``, the Server around ``Forward``: its lifespan opens the shared
  client; the kind of target decides the defaults (``proxy_target``: the CLI's TARGET).
- ``_forward``: ``Forward``, the middleware: what the proxy answers itself, the call it
  builds for the rest, the client's errors as JSON-RPC errors.
- ``_eras``: era translation: a route per (downstream era, upstream era), a handler per
  method that pair must translate.
- ``_send``: one call sent to the remote, its answer read in our client's era.
- ``_hop``: what belongs to one hop and is not passed across it.
- ``_session``: each downstream handshake-era session's upstream session.
- ``_shared``: the shared upstream session of 2026-07-28 requests, and who gets what the
  remote sends on it without naming a request.
- ``_pool``: turns and extra upstream sessions over links without per-request streams; the
  budget of upstream processes.
- ``_rounds``: input rounds: a handshake-era remote asking a 2026-07-28 client.
- ``_relay``: the remote's progress and log messages passed on to their request.
- ``_tasks``: tasks across eras: the two task protocols translated.
- ``_remote_task``: a 2026-07-28 remote's task run to its end for a handshake-era client.
- ``_listen``: subscriptions: listens held on the remote, relayed to our clients.
"""

from ._forward import FORWARDED_METHODS, Forward
from ._pool import (
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MAX_UPSTREAM_PROCESSES,
    DEFAULT_PARALLEL_IDLE_TIMEOUT,
)
from ._proxy import proxy_server, proxy_target
from ._send import DEFAULT_CALL_TIMEOUT
from ._session import (
    DEFAULT_MAX_POLL_INTERVAL,
    DEFAULT_MAX_UPSTREAM_SESSIONS,
    DEFAULT_ROUND_TIMEOUT,
    UpstreamSession,
)

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
