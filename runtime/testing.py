"""Test your server in-process: a JSON-RPC client wired to it through trio memory streams.

    from runtime.testing import open_client

    async def test_add():                       # pytest-trio, trio_mode = true
        async with open_client(app) as client:  # initialize handshake already done
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result["content"][0]["text"] == "3"

The messages cross the same framing, decoding and supervision code as stdio or TCP, so what
passes here passes on the wire. Errors come back as :class:`runtime.JSONRPCError`.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio
import trio.testing

from ._server import Server
from .core import JSONRPCError, Session
from .framing import NdjsonFramer
from .protocol import encode_error, encode_notification, encode_request, encode_result
from .transports import FramedChannel

__all__ = ["TestClient", "open_client"]

RequestHandler = Callable[[str, Any], Awaitable[Any]]


class _Message(msgspec.Struct):
    jsonrpc: str = "2.0"
    id: int | str | float | None = None
    method: str | None = None
    params: Any = None
    result: Any = None
    error: dict[str, Any] | None = None


class TestClient:
    """A minimal MCP client. ``notifications`` collects what the server sent unasked."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        channel: FramedChannel,
        on_request: RequestHandler | None,
        modern_meta: dict[str, Any] | None = None,
    ) -> None:
        self._channel = channel
        #: When set (a 2026-07-28 client), merged into every request's ``params._meta``.
        self.modern_meta = modern_meta
        self._ids = itertools.count(1)
        self._pending: dict[Any, tuple[trio.Event, list[_Message]]] = {}
        self._on_request = on_request
        self.notifications: list[dict[str, Any]] = []
        self._notified = trio.Condition()
        self.initialize_result: dict[str, Any] | None = None

    # -- raw access -------------------------------------------------------------------------

    async def send_raw(self, message: bytes) -> None:
        """Send one unframed message exactly as given (invalid JSON included)."""
        await self._channel.send([(message, None)])

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result; raises JSONRPCError for an error reply.

        A modern (2026-07-28) client adds its per-request ``_meta`` (version, capabilities,
        client info) to ``params`` unless ``params`` already has those keys.
        """
        if self.modern_meta is not None:
            params = dict(params or {})
            params["_meta"] = {**self.modern_meta, **params.get("_meta", {})}
        request_id = next(self._ids)
        slot: tuple[trio.Event, list[_Message]] = (trio.Event(), [])
        self._pending[request_id] = slot
        try:
            await self._channel.send([(encode_request(request_id, method, params), None)])
            await slot[0].wait()
        finally:
            del self._pending[request_id]
        reply = slot[1][0]
        if reply.error is not None:
            raise JSONRPCError(
                reply.error.get("code", 0), reply.error.get("message", ""), reply.error.get("data")
            )
        return reply.result

    async def notify(self, method: str, params: Any = None) -> None:
        await self._channel.send([(encode_notification(method, params), None)])

    async def wait_for_notification(self, method: str) -> dict[str, Any]:
        """The first collected notification with this method (waits for it to arrive)."""
        async with self._notified:
            while True:
                for note in self.notifications:
                    if note.get("method") == method:
                        return note
                await self._notified.wait()

    # -- MCP conveniences -------------------------------------------------------------------

    async def initialize(
        self, protocol_version: str = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "runtime.testing", "version": "0"},
            },
        )
        await self.notify("notifications/initialized")
        self.initialize_result = result
        return result

    async def ping(self) -> Any:
        return await self.request("ping")

    async def list_tools(self) -> list[dict[str, Any]]:
        return (await self.request("tools/list"))["tools"]  # type: ignore[no-any-return]

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}})

    async def list_resources(self) -> list[dict[str, Any]]:
        return (await self.request("resources/list"))["resources"]  # type: ignore[no-any-return]

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        result = await self.request("resources/templates/list")
        return result["resourceTemplates"]  # type: ignore[no-any-return]

    async def read_resource(self, uri: str) -> Any:
        return await self.request("resources/read", {"uri": uri})

    async def list_prompts(self) -> list[dict[str, Any]]:
        return (await self.request("prompts/list"))["prompts"]  # type: ignore[no-any-return]

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        return await self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    # -- the reader -------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        # Server-to-client requests are answered in their own tasks, so a slow answer (a
        # user thinking) never stops the client from reading, e.g. a cancellation.
        async with trio.open_nursery() as answering:
            while True:
                try:
                    frame = await self._channel.receive()
                except (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError):
                    answering.cancel_scope.cancel()
                    return
                decoded = msgspec.json.decode(frame)
                for item in decoded if isinstance(decoded, list) else [decoded]:
                    message = msgspec.convert(item, _Message)
                    if message.method is not None and message.id is not None:
                        answering.start_soon(self._answer, message)
                    else:
                        await self._on_message(message, item)

    async def _on_message(self, message: _Message, raw: dict[str, Any]) -> None:
        if message.method is None:
            slot = self._pending.get(message.id)
            if slot is not None:
                slot[1].append(message)
                slot[0].set()
            return
        async with self._notified:
            self.notifications.append(raw)
            self._notified.notify_all()

    async def _answer(self, message: _Message) -> None:
        """Answer a server-to-client request (sampling, elicitation, roots, ping)."""
        assert message.method is not None and message.id is not None
        if self._on_request is None:
            reply = encode_error(message.id, -32601, f"Method not found: {message.method}")
        else:
            try:
                reply = encode_result(
                    message.id, await self._on_request(message.method, message.params)
                )
            except JSONRPCError as exc:
                reply = encode_error(message.id, exc.code, exc.message, exc.data)
        await self._channel.send([(reply, None)])


@asynccontextmanager
async def open_client(
    server: Server,
    *,
    initialize: bool = True,
    protocol_version: str = "2025-11-25",
    capabilities: dict[str, Any] | None = None,
    on_request: RequestHandler | None = None,
) -> AsyncIterator[TestClient]:
    """Serve ``server`` on an in-memory connection and yield a client for it.

    With ``protocol_version="2026-07-28"`` the client is stateless (modern era): no
    ``initialize``; every request carries ``_meta`` with the version and ``capabilities``.
    Otherwise the handshake runs first (unless ``initialize=False``).

    On exit the client closes its side; the server sees EOF and finishes like a stdio server
    would. ``on_request(method, params)`` answers server-to-client requests.
    """
    client_end, server_end = trio.testing.memory_stream_pair()
    max_frame = server.limits.max_frame_size
    server_channel = FramedChannel(server_end, server_end, NdjsonFramer(max_frame_size=max_frame))
    client_channel = FramedChannel(client_end, client_end, NdjsonFramer(max_frame_size=max_frame))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: server.serve_connection(server_channel, session=Session("memory"))
        )
        modern_meta = None
        if protocol_version >= "2026":
            modern_meta = {
                "io.modelcontextprotocol/protocolVersion": protocol_version,
                "io.modelcontextprotocol/clientCapabilities": capabilities or {},
                "io.modelcontextprotocol/clientInfo": {"name": "runtime.testing", "version": "0"},
            }
        client = TestClient(client_channel, on_request, modern_meta)
        nursery.start_soon(client._read_loop)
        try:
            if initialize and modern_meta is None:
                await client.initialize(protocol_version, capabilities)
            yield client
        finally:
            await client_end.send_stream.aclose()
            nursery.cancel_scope.deadline = trio.current_time() + 5
