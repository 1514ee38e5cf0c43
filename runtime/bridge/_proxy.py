"""``proxy_server``: an ordinary ``Server`` serving a remote MCP server through ours.

The server's handlers are its own (``initialize``, ``ping``, our name and version); the
``Forward`` middleware, placed innermost when serving starts, answers everything else from
the remote. Serving opens the shared upstream client (the server's lifespan: a remote that
cannot be reached ends serving at once with one line, ``ServerCrashed``) and closes it when
serving ends. What kind of target the remote is decides two defaults: whether its link ties
each message to its request (Streamable HTTP), and whether another session with it is a
connection (cheap: parallel forwarding on by default) or a process (counted against
``max_upstream_processes``).
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import trio

from .. import ServerCrashed
from ..client import Auth, Backoff, Client, ClientError, open_client
from ._forward import Forward
from ._pool import (
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MAX_UPSTREAM_PROCESSES,
    DEFAULT_PARALLEL_IDLE_TIMEOUT,
    client_error,
)
from ._send import DEFAULT_CALL_TIMEOUT
from ._session import (
    DEFAULT_MAX_POLL_INTERVAL,
    DEFAULT_MAX_UPSTREAM_SESSIONS,
    DEFAULT_ROUND_TIMEOUT,
)

if TYPE_CHECKING:
    from .. import Server

__all__ = ["proxy_server", "proxy_target"]


def proxy_server(
    target: str | Sequence[str],
    *,
    name: str = "mcp-runtime-proxy",
    era: str = "auto",
    framing: str = "ndjson",
    headers: Mapping[str, str] | None = None,
    bearer_token: str | None = None,
    auth: Auth | None = None,
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
    -32010, and a parallel forwarding waits for the shared session. ``auth``: the
    authorization scheme for an HTTP remote (:class:`runtime.client.OAuth`), shared by
    every upstream session, which refreshes its tokens for as long as the proxy serves."""
    from .. import Server

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
        streams_per_request=_streams_per_request(target),
    )

    def connect(**handlers: Any) -> contextlib.AbstractAsyncContextManager[Client]:
        return open_client(
            target,
            era=era,  # type: ignore[arg-type]
            framing=framing,
            headers=headers,
            bearer_token=bearer_token,
            auth=auth,
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
        shared = forward.shared
        async with contextlib.AsyncExitStack() as stack:
            processes = forward.processes
            if processes is not None:
                # The shared session's process, given back once it is closed (LIFO).
                processes.try_take()  # always there: the budget is at least 1
                stack.callback(processes.give_back)
            try:
                client = await stack.enter_async_context(connect(**shared.handlers()))
            except (ClientError, BaseExceptionGroup) as exc:
                # One line for the CLI (it exits 1 on ServerCrashed), not a traceback.
                reason = client_error(exc)
                if reason is None:
                    raise
                raise ServerCrashed(f"cannot reach the remote MCP server: {reason}") from None
            try:
                async with trio.open_nursery() as nursery:
                    shared.serving(client, connect, nursery)
                    try:
                        yield None
                    finally:
                        nursery.cancel_scope.cancel()
            finally:
                shared.stopped()

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
