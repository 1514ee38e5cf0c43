"""``open_client(target, ...)``: read the target, pick the connector, start the client.

The one door to a server for users, the CLI's client verbs (``runtime.cli``), the testing
kit and the bridge (``runtime.bridge`` reaches its remote through here, so any target the
client reaches can be bridged). What it guarantees:

- **The target decides the transport**, read in a fixed order: a list is a command line;
  ``http(s)://`` is Streamable HTTP unless its path names the legacy HTTP+SSE endpoint
  (``is_legacy_sse_url``); then ``ws(s)://``, ``tcp://HOST:PORT``, ``unix:PATH``,
  ``pipe:DIR``; anything else a server file ``path.py[:obj]`` (``is_server_file``) or a
  command line split as a shell would. :func:`connector_for` makes that choice alone, so
  the bridge and the CLI pick exactly as :func:`open_client` does.
- **Every limit is checked before anything is connected**: a value out of range (the pool's
  sizes, ``max_message_size``, an era the transport has no such thing as) is a
  ``ValueError`` naming it, with no process spawned and no socket opened.
- **One exception, not a group**: the client's own nursery is wrapped in
  ``single_errors``, so a caller catches :class:`TransportLost` or :class:`PeerError` as
  such. The handshake (or the ``server/discover`` probe) is done before the client is
  yielded, and leaving the block closes the link whatever happened (a spawned server is
  stopped, its process group or tree ended: ``runtime.client._connectors``).
"""

from __future__ import annotations

import os
import shlex
import ssl
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..protocol import LATEST_HANDSHAKE_VERSION, Implementation
from ._auth import Auth
from ._backoff import Backoff
from ._client import (
    MAX_LIST_ITEMS,
    MAX_LIST_PAGES,
    Client,
    Era,
    Notification,
    RequestHandler,
    choose_era,
    keep_link,
)
from ._connectors import (
    Connector,
    PipeConnector,
    SocketConnector,
    StdioConnector,
)
from ._http import (
    DEFAULT_IDLE_CONNECTION_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_IDLE_CONNECTIONS,
    check_pool_limits,
)
from ._legacy import LegacySseConnector, is_legacy_sse_url
from ._link import single_errors
from ._requests import DEFAULT_MAX_SERVER_REQUESTS
from ._streamable import HttpConnector
from ._websocket import WebSocketConnector

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "connector_for",
    "is_server_file",
    "open_client",
    "server_command",
]

#: The largest message the client takes from a server (``open_client(max_message_size=)``):
#: the server's own ``Limits.max_frame_size`` default, so that what our server may send, our
#: client reads. A bigger answer fails its request with ``BadMessage`` naming this limit.
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024


def server_command(target: str, framing: str = "ndjson") -> list[str]:
    """The command that serves a server file ``path.py[:obj]`` over stdio."""
    return [sys.executable, "-m", "runtime", "serve", target, "--framing", framing]


def is_server_file(target: str) -> bool:
    """Whether ``target`` names a server file ``path.py[:obj]`` (served by ``mcp-runtime
    serve`` over stdio) rather than a command line."""
    path = target.split(":", 1)[0] if not os.path.exists(target) else target
    return path.endswith(".py") and " " not in target.strip()


def connector_for(
    target: str | Sequence[str],
    *,
    framing: str = "ndjson",
    headers: Mapping[str, str] | None = None,
    backoff: Backoff | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float | None = 10.0,
    close_grace: float = 2.0,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    respawn: bool = False,
    max_idle_connections: int = DEFAULT_MAX_IDLE_CONNECTIONS,
    idle_connection_timeout: float = DEFAULT_IDLE_CONNECTION_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    auth: Auth | None = None,
) -> Connector:
    """The connector for a target (see :func:`open_client`)."""
    check_pool_limits(max_idle_connections, idle_connection_timeout, max_connections)
    if isinstance(max_message_size, bool) or not isinstance(max_message_size, int):
        raise ValueError(f"max_message_size must be an int >= 1, not {max_message_size!r}")
    if max_message_size < 1:
        raise ValueError(f"max_message_size must be >= 1, not {max_message_size}")
    if not isinstance(target, str):
        return StdioConnector(
            list(target),
            framing=framing,
            env=env,
            cwd=cwd,
            close_grace=close_grace,
            max_frame_size=max_message_size,
            read_timeout=read_timeout,
            respawn=respawn,
        )
    text = target.strip()
    if text.startswith(("http://", "https://")) and is_legacy_sse_url(text):
        return LegacySseConnector(
            text,
            headers=headers,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout if read_timeout is not None else 30.0,
            max_message_size=max_message_size,
            ssl_context=ssl_context,
            max_idle_connections=max_idle_connections,
            idle_connection_timeout=idle_connection_timeout,
            max_connections=max_connections,
            auth=auth,
        )
    if text.startswith(("http://", "https://")):
        return HttpConnector(
            text,
            headers=headers,
            backoff=backoff,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout if read_timeout is not None else 30.0,
            max_message_size=max_message_size,
            ssl_context=ssl_context,
            max_idle_connections=max_idle_connections,
            idle_connection_timeout=idle_connection_timeout,
            max_connections=max_connections,
            auth=auth,
        )
    if text.startswith(("ws://", "wss://")):
        return WebSocketConnector(
            text,
            headers=headers,
            max_message_size=max_message_size,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            ssl_context=ssl_context,
        )
    if text.startswith("tcp://"):
        host, _, port = text[len("tcp://") :].rstrip("/").rpartition(":")
        if not host or not (port.isascii() and port.isdigit()):
            raise ValueError(f"invalid TCP target {target!r}: expected tcp://HOST:PORT")
        return SocketConnector(
            host=host.strip("[]"),
            port=int(port),
            framing=framing,
            max_frame_size=max_message_size,
            read_timeout=read_timeout,
            connect_timeout=connect_timeout,
        )
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ValueError(f"invalid Unix target {target!r}: expected unix:PATH")
        return SocketConnector(
            path=path,
            framing=framing,
            max_frame_size=max_message_size,
            read_timeout=read_timeout,
            connect_timeout=connect_timeout,
        )
    if text.startswith("pipe:"):
        return PipeConnector(
            text[len("pipe:") :],
            framing=framing,
            max_frame_size=max_message_size,
            read_timeout=read_timeout,
            connect_timeout=connect_timeout,
        )
    if not text:
        raise ValueError("an empty target")
    server_file = is_server_file(text)
    command = server_command(text, framing) if server_file else shlex.split(text)
    return StdioConnector(
        command,
        framing=framing,
        env=env,
        cwd=cwd,
        close_grace=close_grace,
        max_frame_size=max_message_size,
        read_timeout=read_timeout,
        respawn=respawn,
        restart_after_probe=not server_file,
    )


@asynccontextmanager
async def open_client(
    target: str | Sequence[str],
    *,
    era: Era = "auto",
    framing: str = "ndjson",
    headers: Mapping[str, str] | None = None,
    bearer_token: str | None = None,
    timeout: float | None = 60.0,
    connect_timeout: float = 10.0,
    read_timeout: float | None = 10.0,
    backoff: Backoff | None = None,
    close_grace: float = 2.0,
    client_info: Implementation | None = None,
    sampling: RequestHandler | None = None,
    elicitation: RequestHandler | None = None,
    roots: RequestHandler | None = None,
    on_notification: Callable[[Notification], Any] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    respawn: bool = False,
    handshake_version: str | None = None,
    max_idle_connections: int = DEFAULT_MAX_IDLE_CONNECTIONS,
    idle_connection_timeout: float = DEFAULT_IDLE_CONNECTION_TIMEOUT,
    max_list_pages: int = MAX_LIST_PAGES,
    max_list_items: int = MAX_LIST_ITEMS,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    max_server_requests: int = DEFAULT_MAX_SERVER_REQUESTS,
    auth: Auth | None = None,
) -> AsyncIterator[Client]:
    """Connect to an MCP server and yield a ready :class:`Client`.

    ``target``: ``http(s)://`` (Streamable HTTP; a URL whose path ends in ``/sse`` is the legacy
    2024-11-05 HTTP+SSE transport), ``ws(s)://`` (WebSocket), ``tcp://HOST:PORT``,
    ``unix:PATH``, ``pipe:DIR`` (a FIFO pair made by ``mcp-runtime serve --transport pipe``),
    a server file ``path.py[:obj]`` (spawned with ``mcp-runtime serve`` over stdio), or a
    command line (a string, split like a shell would, or a list) spawned over stdio.

    ``era``: ``auto`` probes ``server/discover`` (2026-07-28) and falls back to the
    ``initialize`` handshake; ``modern`` or ``handshake`` pin one. ``framing``: ``ndjson`` or
    ``content-length`` for stream transports. ``timeout``: default per-request timeout
    (seconds, None: none). ``read_timeout``: a message that started arriving must finish
    within it. ``backoff``: the reconnection policy (:class:`Backoff`). ``close_grace``: how
    long a stdio server gets after EOF, and again after SIGTERM. ``sampling``,
    ``elicitation``, ``roots``: handlers for the server's requests (declared as capabilities).
    ``handshake_version``: the revision offered in ``initialize`` (default 2025-11-25;
    2025-03-26 is the one that allows JSON-RPC batches over HTTP).
    ``respawn``: start a stdio server again (with backoff) when it exits or breaks; off by
    default, so that a crash is an error rather than a silent restart.
    ``max_idle_connections`` (default 4, >= 0) and ``idle_connection_timeout`` (seconds,
    default 20, > 0): the HTTP transports' connection pool (Streamable HTTP and legacy
    HTTP+SSE): how many idle keep-alive connections it keeps per origin, and how long one may
    sit idle before it is closed rather than reused (keep it under the server's own idle
    timeout: ours closes after ``HttpLimits.keep_alive_timeout``, 30 s). Other transports
    ignore both. ``max_list_pages`` (default 1,000) and ``max_list_items`` (default 100,000):
    the most pages and items one ``all_*`` listing follows before it stops with
    :class:`ClientError` naming the limit (a server may hand out a fresh cursor forever).
    ``max_connections`` (default 100, >= 3): connections the HTTP pool holds at
    once, busy and idle (requests beyond wait for one; the last is kept for the client's
    answers to the server, which a request's stream may be waiting on).
    ``max_message_size`` (bytes, default 4 MiB): the largest message taken from the server,
    every transport; a bigger answer fails its request with :class:`BadMessage` naming it.
    ``max_server_requests`` (default 64, >= 1): the server's requests (sampling,
    elicitation, roots, ping) served at once; more are refused at once with -32010.
    ``auth``: an authorization scheme for the HTTP transports (:class:`OAuth`: discovery,
    login, refresh and step-up, docs/client.md "Log in to a remote server"); it is asked
    for every request's headers and told of each 401/403. Other transports refuse it
    (ValueError): MCP authorization is defined for HTTP only (stdio servers take their
    credentials from the environment). ``bearer_token`` and ``auth`` exclude each other.
    Out of range: ValueError, before anything is connected.

    Raises :class:`TransportLost` when the server cannot be reached (after the backoff
    policy, for transports that reconnect) and :class:`PeerError` when it refuses the
    handshake. On exit the link is closed (a stdio server is stopped, its group killed).
    """
    if auth is not None and bearer_token is not None:
        raise ValueError("give bearer_token or auth, not both")
    all_headers = dict(headers or {})
    if bearer_token is not None:
        all_headers["Authorization"] = f"Bearer {bearer_token}"
    policy = backoff if backoff is not None else Backoff()
    connector = connector_for(
        target,
        framing=framing,
        headers=all_headers,
        backoff=policy,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        close_grace=close_grace,
        env=env,
        cwd=cwd,
        ssl_context=ssl_context,
        respawn=respawn,
        max_idle_connections=max_idle_connections,
        idle_connection_timeout=idle_connection_timeout,
        max_connections=max_connections,
        max_message_size=max_message_size,
        auth=auth,
    )
    if auth is not None and not isinstance(connector, (HttpConnector, LegacySseConnector)):
        raise ValueError("auth is for the HTTP transports (http:// and https:// targets)")
    if isinstance(connector, LegacySseConnector):
        if era == "modern":
            raise ValueError("the legacy HTTP+SSE transport (2024-11-05) has no 2026-07-28 era")
        era = "handshake"
    async with single_errors(), trio.open_nursery() as nursery:
        client = Client(
            connector,
            nursery,
            era=era,
            timeout=timeout,
            backoff=policy,
            client_info=client_info,
            sampling=sampling,
            elicitation=elicitation,
            roots=roots,
            on_notification=on_notification,
            handshake_version=handshake_version or LATEST_HANDSHAKE_VERSION,
            max_list_pages=max_list_pages,
            max_list_items=max_list_items,
            max_server_requests=max_server_requests,
        )
        if isinstance(connector, HttpConnector):
            connector.reinitialize = client.reinitialize
        await nursery.start(keep_link, client)
        try:
            await choose_era(client)
            yield client
        finally:
            await client.aclose()
            nursery.cancel_scope.cancel()
