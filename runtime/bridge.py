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
- server-to-client requests (sampling, elicitation, roots) the remote sends while one of our
  handshake-era requests is being forwarded go to that request's client, and its answer back.

The proxy is a middleware (:class:`Forward`) placed innermost in the chain when serving
starts, so the server's own middleware (and ``--middleware``) sees every forwarded request.
See ``docs/bridges.md``.
"""

from __future__ import annotations

import contextlib
import math
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import trio

from ._lifetime import ServerCrashed
from .client import Backoff, Client, ClientError, PeerError, open_client
from .middleware import Middleware, Next, Request
from .protocol import JSONRPCError

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["FORWARDED_METHODS", "Forward", "proxy_server", "proxy_target"]

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
    }
)

#: The remote's capabilities we serve (subscriptions and list-changed are not forwarded).
_FEATURES: Final = ("tools", "resources", "prompts", "completions")

_PER_HOP_FIELDS: Final = ("resultType", "ttlMs", "cacheScope")
_META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"

#: Input rounds answered for one forwarded request (as the client's own limit).
MAX_INPUT_ROUNDS: Final = 10

#: How long a forwarded server-to-client request may wait for our client's answer.
SERVER_REQUEST_TIMEOUT: Final = 300.0


def _strip_meta(params: dict[str, Any]) -> dict[str, Any]:
    """Our client's ``_meta`` is not the remote's: keep only what is not per-hop
    (2026-07-28 ``io.modelcontextprotocol/*`` keys and the progress token are ours)."""
    meta = params.pop("_meta", None)
    if isinstance(meta, dict):
        kept = {
            k: v
            for k, v in meta.items()
            if k != "progressToken" and not k.startswith("io.modelcontextprotocol/")
        }
        if kept:
            params["_meta"] = kept
    return params


async def _ask(request: Request, method: str, params: Any) -> Any:
    """A server-to-client request to the client of ``request`` (handshake era), its JSON-RPC
    error passed back as the remote's client error."""
    try:
        return await request.context.peer.request(
            method, params, timeout=SERVER_REQUEST_TIMEOUT, related=request.id
        )
    except JSONRPCError as exc:
        raise PeerError(exc.code, exc.message, exc.data) from None


def _client_error(exc: BaseException) -> ClientError | None:
    """The client's error inside ``exc`` (possibly nested in exception groups), if any."""
    if isinstance(exc, ClientError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _client_error(inner)
            if found is not None:
                return found
    return None


def _per_hop_removed(result: Any, *, keep_result_type: bool = False) -> Any:
    """The remote's result without what belongs to its hop: 2026-07-28 ``resultType``, the
    cache hints (server/utilities/caching) and ``_meta`` serverInfo. Our server adds its own
    to a modern request's result; a handshake-era client never sees them."""
    if not isinstance(result, dict):
        return result
    for key in _PER_HOP_FIELDS:
        if not (keep_result_type and key == "resultType"):
            result.pop(key, None)
    meta = result.get("_meta")
    if isinstance(meta, dict):
        meta.pop(_META_SERVER_INFO, None)
        if not meta:
            del result["_meta"]
    return result


class Forward(Middleware):
    """Answers :data:`FORWARDED_METHODS` from the remote ``client`` (set while serving)."""

    def __init__(self) -> None:
        self.client: Client | None = None
        #: Requests being forwarded now, oldest first: where the remote's server-to-client
        #: requests go (the newest handshake-era one that can carry them).
        self.in_flight: list[Request] = []

    async def on_request(self, request: Request, call_next: Next) -> Any:
        method = request.method
        if method in ("initialize", "server/discover"):
            return self._describe(await call_next())
        if method not in FORWARDED_METHODS:
            return await call_next()
        client = self.client
        if client is None:
            raise RuntimeError("the proxy is not connected to its remote server")
        params = _strip_meta(dict(request.params))
        token = request.meta.get("progressToken")
        self.in_flight.append(request)
        try:
            if not isinstance(token, str | int):
                return await self._forward(client, method, params, request, None)
            return await self._forward_with_progress(client, method, params, request, token)
        finally:
            self.in_flight.remove(request)

    async def _forward(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        request: Request,
        progress: Any,
    ) -> Any:
        for _round in range(MAX_INPUT_ROUNDS + 1):
            try:
                # No timeout of our own: the downstream request's cancel scope bounds it.
                result = await client.request(method, params, timeout=None, progress=progress)
            except PeerError as exc:
                raise JSONRPCError(exc.code, exc.message, exc.data) from None
            if not isinstance(result, dict) or result.get("resultType") != "input_required":
                return _per_hop_removed(result)
            if request.era == "modern":
                # 2026-07-28 basic/patterns/mrtr: our client answers the round and retries
                # with inputResponses and the remote's requestState, both forwarded as is.
                return _per_hop_removed(result, keep_result_type=True)
            # A handshake-era client: each input request becomes a server-to-client request.
            answers: dict[str, Any] = {}
            for key, asked in (result.get("inputRequests") or {}).items():
                answers[key] = await _ask(request, str(asked.get("method")), asked.get("params"))
            params = {**params, "inputResponses": answers}
            if "requestState" in result:
                params["requestState"] = result["requestState"]
            else:
                params.pop("requestState", None)
        raise JSONRPCError(-32603, f"{method}: the remote asked for input {MAX_INPUT_ROUNDS} times")

    async def _forward_with_progress(
        self,
        client: Client,
        method: str,
        params: dict[str, Any],
        request: Request,
        token: str | int,
    ) -> Any:
        send, receive = trio.open_memory_channel[dict[str, Any]](math.inf)

        def progress(value: float, total: float | None, message: str | None) -> None:
            note: dict[str, Any] = {"progressToken": token, "progress": value}
            if total is not None:
                note["total"] = total
            if message is not None:
                note["message"] = message
            send.send_nowait(note)

        async def relay() -> None:
            async for note in receive:
                await request.context.peer.notify(
                    "notifications/progress", note, related=request.id
                )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay)
            try:
                return await self._forward(client, method, params, request, progress)
            finally:
                send.close()

    def _describe(self, result: Any) -> Any:
        """Our ``initialize``/``server/discover`` result, with the remote's features."""
        client = self.client
        if client is None or client.description is None or not isinstance(result, dict):
            return result
        remote = client.description
        caps = dict(result.get("capabilities") or {})
        for feature in _FEATURES:
            caps.pop(feature, None)
            if feature in remote.capabilities:
                caps[feature] = {}
        result["capabilities"] = caps
        if remote.instructions and "instructions" not in result:
            result["instructions"] = remote.instructions
        return result

    def handler(self, method: str) -> Any:
        """The client's handler for the remote's ``method`` requests."""

        async def forward(params: dict[str, Any]) -> Any:
            for request in reversed(self.in_flight):
                if request.era == "handshake":
                    return await _ask(request, method, params)
            # A 2026-07-28 client can only be asked in an input round of its own request,
            # and the remote's request waits for an answer now: not bridged (docs/bridges.md).
            raise PeerError(
                -32601, f"Method not found: {method} (no handshake-era client request to ask)"
            )

        return forward


def proxy_server(
    target: str | Sequence[str],
    *,
    name: str = "mcp-runtime-proxy",
    era: str = "auto",
    framing: str = "ndjson",
    headers: Mapping[str, str] | None = None,
    bearer_token: str | None = None,
    backoff: Backoff | None = None,
) -> Server:
    """A :class:`runtime.Server` serving the MCP server at ``target`` (any target
    :func:`runtime.client.open_client` takes). The remote is connected when serving starts
    (its lifespan) and closed when serving ends."""
    from ._server import Server

    forward = Forward()

    @contextlib.asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[None]:
        # Innermost: the middleware added before (the file's, --middleware) wraps us.
        if forward in app.middleware_chain:
            app.middleware_chain.remove(forward)
        app.middleware_chain.append(forward)
        async with contextlib.AsyncExitStack() as stack:
            try:
                client = await stack.enter_async_context(
                    open_client(
                        target,
                        era=era,  # type: ignore[arg-type]
                        framing=framing,
                        headers=headers,
                        bearer_token=bearer_token,
                        backoff=backoff,
                        timeout=None,
                        sampling=forward.handler("sampling/createMessage"),
                        elicitation=forward.handler("elicitation/create"),
                        roots=forward.handler("roots/list"),
                    )
                )
            except (ClientError, BaseExceptionGroup) as exc:
                # One line for the CLI (it exits 1 on ServerCrashed), not a traceback.
                reason = _client_error(exc)
                if reason is None:
                    raise
                raise ServerCrashed(f"cannot reach the remote MCP server: {reason}") from None
            forward.client = client
            try:
                yield None
            finally:
                forward.client = None

    app = Server(name, lifespan=lifespan)
    app.add_middleware(forward)
    return app


def proxy_target(target: str) -> str | list[str]:
    """The CLI's TARGET as :func:`open_client` takes it: ``stdio:COMMAND ARGS`` is a command
    line (split as a shell would); anything else (a URL, ``unix:``, ``pipe:``) is kept."""
    if target.startswith("stdio:"):
        command = shlex.split(target[len("stdio:") :])
        if not command:
            raise ValueError("stdio: needs a command line, e.g. 'stdio:python server.py'")
        return command
    return target
