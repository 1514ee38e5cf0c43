"""Test your server in-process: an MCP client wired to it through trio memory streams.

    from runtime.testing import open_client

    async def test_add():                       # pytest-trio, trio_mode = true
        async with open_client(app) as client:  # initialize handshake already done
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result.text == "3"
            assert result.structured == {"result": 3}

The messages cross the same framing, decoding and supervision code as stdio or TCP, so what
passes here passes on the wire. Protocol errors come back as :class:`runtime.JSONRPCError`.

Every helper returns a typed result (:class:`ToolResult`, :class:`ReadResult`,
:class:`PromptResult`, or a list of :class:`Tool`, :class:`Resource`,
:class:`ResourceTemplate`, :class:`Prompt`), and each result is also a read-only mapping over
the JSON the server sent (``result["content"][0]["text"]``), so a test can assert on the
typed view or on the exact wire form. ``list_*`` follow ``nextCursor`` to the last page;
``list_*_page(cursor)`` return one :class:`Page`.

With the pytest plugin (installed with this package, entry point ``pytest11``), define a
fixture named ``mcp_server`` that returns your ``Server`` and ask for ``mcp_client``; the
``@pytest.mark.mcp_client(...)`` marker passes keywords to :func:`open_client`.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

import msgspec
import trio
import trio.testing

from ._server import Server
from .core import Session
from .framing import NdjsonFramer
from .protocol import (
    ELICITATION_CREATE,
    INITIALIZE,
    INITIALIZED,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROGRESS_TOKEN,
    META_PROTOCOL_VERSION,
    METHOD_NOT_FOUND,
    PING,
    PROGRESS,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_UNSUBSCRIBE,
    ROOTS_LIST,
    ROOTS_LIST_CHANGED,
    SAMPLING_CREATE_MESSAGE,
    TOOLS_CALL,
    TOOLS_LIST,
    JSONRPCError,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    relayed_error,
)
from .transports import FramedChannel

__all__ = [
    "ElicitationHandler",
    "Page",
    "ProgressCallback",
    "Prompt",
    "PromptResult",
    "ReadResult",
    "RequestHandler",
    "Resource",
    "ResourceTemplate",
    "Result",
    "RootsHandler",
    "SamplingHandler",
    "TestClient",
    "Tool",
    "ToolResult",
    "accept",
    "cancel",
    "decline",
    "open_client",
    "sampled",
]

#: ``on_request(method, params) -> result``: answers any server-to-client request.
RequestHandler = Callable[[str, Any], Awaitable[Any]]
#: ``elicitation(params) -> ElicitResult`` (see :func:`accept`, :func:`decline`, :func:`cancel`).
ElicitationHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
#: ``sampling(params) -> CreateMessageResult`` (see :func:`sampled`).
SamplingHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
#: ``roots() -> [{"uri": ..., "name": ...}, ...]``
RootsHandler = Callable[[], Awaitable[Sequence[Mapping[str, Any]]]]
#: ``progress(progress, total, message)``, sync or async.
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]

#: A list helper stops after this many pages (a server whose cursors never end is a bug).
MAX_PAGES = 1000
#: ``call_tool`` answers at most this many 2026-07-28 input rounds (a tool that never stops
#: asking is a bug).
MAX_INPUT_ROUNDS = 100


class _Message(msgspec.Struct):
    jsonrpc: str = "2.0"
    id: int | str | float | None = None
    method: str | None = None
    params: Any = None
    result: Any = None
    error: dict[str, Any] | None = None


# -- typed results ----------------------------------------------------------------------------


class Result(Mapping[str, Any]):
    """A result as the server sent it: typed properties over ``raw``, which stays readable
    (and comparable) as a mapping."""

    __slots__ = ("raw",)

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw: dict[str, Any] = dict(raw)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.raw!r})"

    @property
    def meta(self) -> dict[str, Any]:
        """``_meta`` (empty when absent)."""
        return dict(self.raw.get("_meta") or {})


def _text_of(blocks: Sequence[Mapping[str, Any]]) -> str:
    return "".join(block["text"] for block in blocks if isinstance(block.get("text"), str))


class ToolResult(Result):
    """A ``tools/call`` result."""

    __slots__ = ()

    @property
    def content(self) -> list[dict[str, Any]]:
        return list(self.raw.get("content") or [])

    @property
    def text(self) -> str:
        """The text content blocks, joined."""
        return _text_of(self.content)

    @property
    def structured(self) -> Any:
        """``structuredContent``, or None."""
        return self.raw.get("structuredContent")

    @property
    def is_error(self) -> bool:
        return bool(self.raw.get("isError", False))

    @property
    def input_required(self) -> bool:
        """True for a 2026-07-28 ``input_required`` result the client did not resolve (no
        handler for what the server asked)."""
        return self.raw.get("resultType") == "input_required"


class ReadResult(Result):
    """A ``resources/read`` result."""

    __slots__ = ()

    @property
    def contents(self) -> list[dict[str, Any]]:
        return list(self.raw.get("contents") or [])

    @property
    def text(self) -> str:
        return _text_of(self.contents)


class PromptResult(Result):
    """A ``prompts/get`` result."""

    __slots__ = ()

    @property
    def description(self) -> str | None:
        return self.raw.get("description")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.raw.get("messages") or [])


class _Entry(Result):
    """One entry of a list result: every kind has a ``name`` and may have a description."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self.raw["name"])

    @property
    def description(self) -> str | None:
        return self.raw.get("description")


class Tool(_Entry):
    """One entry of ``tools/list``."""

    __slots__ = ()

    @property
    def title(self) -> str | None:
        return self.raw.get("title")

    @property
    def input_schema(self) -> dict[str, Any]:
        return dict(self.raw.get("inputSchema") or {})

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.raw.get("outputSchema")

    @property
    def annotations(self) -> dict[str, Any]:
        return dict(self.raw.get("annotations") or {})


class Resource(_Entry):
    """One entry of ``resources/list``."""

    __slots__ = ()

    @property
    def uri(self) -> str:
        return str(self.raw["uri"])

    @property
    def mime_type(self) -> str | None:
        return self.raw.get("mimeType")


class ResourceTemplate(_Entry):
    """One entry of ``resources/templates/list``."""

    __slots__ = ()

    @property
    def uri_template(self) -> str:
        return str(self.raw["uriTemplate"])

    @property
    def mime_type(self) -> str | None:
        return self.raw.get("mimeType")


class Prompt(_Entry):
    """One entry of ``prompts/list``."""

    __slots__ = ()

    @property
    def arguments(self) -> list[dict[str, Any]]:
        return list(self.raw.get("arguments") or [])


R = TypeVar("R", bound=Result)


class Page(Generic[R]):
    """One page of a list method: its items and the cursor of the next page (None: last)."""

    __slots__ = ("items", "next_cursor")

    def __init__(self, items: list[R], next_cursor: str | None) -> None:
        self.items = items
        self.next_cursor = next_cursor

    def __repr__(self) -> str:
        return f"Page({len(self.items)} items, next_cursor={self.next_cursor!r})"


# -- answers for server-to-client requests ----------------------------------------------------


def accept(content: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An elicitation result: the user accepted (with the form's ``content``)."""
    result: dict[str, Any] = {"action": "accept"}
    if content is not None:
        result["content"] = dict(content)
    return result


def decline() -> dict[str, Any]:
    """An elicitation result: the user declined."""
    return {"action": "decline"}


def cancel() -> dict[str, Any]:
    """An elicitation result: the user dismissed the request."""
    return {"action": "cancel"}


def sampled(text: str, *, model: str = "test-model") -> dict[str, Any]:
    """A ``sampling/createMessage`` result: the model answered ``text``."""
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
        "stopReason": "endTurn",
    }


# -- the client -------------------------------------------------------------------------------


class TestClient:
    """A small MCP client. ``notifications`` collects what the server sent unasked."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        channel: FramedChannel,
        on_request: RequestHandler | None,
        modern_meta: dict[str, Any] | None = None,
        *,
        elicitation: ElicitationHandler | None = None,
        sampling: SamplingHandler | None = None,
        roots: RootsHandler | Sequence[Mapping[str, Any] | str] | None = None,
    ) -> None:
        self._channel = channel
        #: When set (a 2026-07-28 client), merged into every request's ``params._meta``.
        self.modern_meta = modern_meta
        self._ids = itertools.count(1)
        self._pending: dict[Any, tuple[trio.Event, list[_Message]]] = {}
        self._on_request = on_request
        self._handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {}
        if elicitation is not None:
            self._handlers[ELICITATION_CREATE] = elicitation
        if sampling is not None:
            self._handlers[SAMPLING_CREATE_MESSAGE] = sampling
        self._roots = roots
        if roots is not None:
            self._handlers[ROOTS_LIST] = self._list_roots
        self._progress: dict[str, ProgressCallback] = {}
        self._tokens = itertools.count(1)
        self.notifications: list[dict[str, Any]] = []
        self._notified = trio.Condition()
        self.initialize_result: dict[str, Any] | None = None

    # -- raw access -------------------------------------------------------------------------

    async def send_raw(self, message: bytes) -> None:
        """Send one unframed message exactly as given (invalid JSON included)."""
        await self._channel.send([(message, None)])

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result (the JSON as sent); raises JSONRPCError
        for an error reply.

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
            raise relayed_error(
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
            INITIALIZE,
            {
                "protocolVersion": protocol_version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "runtime.testing", "version": "0"},
            },
        )
        await self.notify(INITIALIZED)
        self.initialize_result = result
        return result

    async def ping(self) -> Any:
        return await self.request(PING)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Call a tool. ``progress`` receives the call's ``notifications/progress`` (a
        progress token is added to ``_meta``). In the 2026-07-28 era, input the server asks
        for (elicitation, sampling, roots) is answered by the client's handlers and the call
        retried until it completes; without a handler the ``input_required`` result is
        returned as is."""
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        request_meta = dict(meta or {})
        token: str | None = None
        if progress is not None:
            token = f"runtime.testing-{next(self._tokens)}"
            request_meta[META_PROGRESS_TOKEN] = token
            self._progress[token] = progress
        if request_meta:
            params["_meta"] = request_meta
        try:
            result = await self.request(TOOLS_CALL, params)
            rounds = 0
            while self.modern_meta is not None and result.get("resultType") == "input_required":
                rounds += 1
                if rounds > MAX_INPUT_ROUNDS:
                    raise AssertionError(f"{name} asked for input {MAX_INPUT_ROUNDS} times")
                requests: dict[str, Any] = result.get("inputRequests") or {}
                if not all(item.get("method") in self._handlers for item in requests.values()):
                    break
                responses = {
                    key: await self._handlers[item["method"]](item.get("params") or {})
                    for key, item in requests.items()
                }
                retry = {**params, "inputResponses": responses}
                if "requestState" in result:
                    retry["requestState"] = result["requestState"]
                result = await self.request(TOOLS_CALL, retry)
        finally:
            if token is not None:
                del self._progress[token]
        return ToolResult(result)

    async def read_resource(self, uri: str) -> ReadResult:
        return ReadResult(await self.request(RESOURCES_READ, {"uri": uri}))

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> PromptResult:
        params = {"name": name, "arguments": arguments or {}}
        return PromptResult(await self.request(PROMPTS_GET, params))

    async def list_tools(self) -> list[Tool]:
        """Every tool, following ``nextCursor`` to the last page."""
        return await self._list_all(self.list_tools_page)

    async def list_resources(self) -> list[Resource]:
        """Every resource, following ``nextCursor`` to the last page."""
        return await self._list_all(self.list_resources_page)

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """Every resource template, following ``nextCursor`` to the last page."""
        return await self._list_all(self.list_resource_templates_page)

    async def list_prompts(self) -> list[Prompt]:
        """Every prompt, following ``nextCursor`` to the last page."""
        return await self._list_all(self.list_prompts_page)

    async def list_tools_page(self, cursor: str | None = None) -> Page[Tool]:
        """One page of ``tools/list`` (does not follow ``nextCursor``)."""
        return await self._page(TOOLS_LIST, "tools", Tool, cursor)

    async def list_resources_page(self, cursor: str | None = None) -> Page[Resource]:
        """One page of ``resources/list`` (does not follow ``nextCursor``)."""
        return await self._page(RESOURCES_LIST, "resources", Resource, cursor)

    async def list_resource_templates_page(
        self, cursor: str | None = None
    ) -> Page[ResourceTemplate]:
        """One page of ``resources/templates/list`` (does not follow ``nextCursor``)."""
        return await self._page(
            RESOURCES_TEMPLATES_LIST, "resourceTemplates", ResourceTemplate, cursor
        )

    async def list_prompts_page(self, cursor: str | None = None) -> Page[Prompt]:
        """One page of ``prompts/list`` (does not follow ``nextCursor``)."""
        return await self._page(PROMPTS_LIST, "prompts", Prompt, cursor)

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe`` (handshake era)."""
        await self.request(RESOURCES_SUBSCRIBE, {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        await self.request(RESOURCES_UNSUBSCRIBE, {"uri": uri})

    async def roots_changed(self) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``)."""
        await self.notify(ROOTS_LIST_CHANGED)

    async def _page(self, method: str, key: str, kind: type[R], cursor: str | None) -> Page[R]:
        result = await self.request(method, {"cursor": cursor} if cursor is not None else None)
        return Page([kind(item) for item in result[key]], result.get("nextCursor"))

    async def _list_all(self, fetch: Callable[[str | None], Awaitable[Page[R]]]) -> list[R]:
        items: list[R] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await fetch(cursor)
            items.extend(page.items)
            if page.next_cursor is None:
                return items
            cursor = page.next_cursor
        raise AssertionError(f"the server gave more than {MAX_PAGES} pages")

    async def _list_roots(self, params: Any) -> dict[str, Any]:
        roots = self._roots
        if callable(roots):
            listed: Sequence[Mapping[str, Any] | str] = await roots()
        else:
            listed = roots or []
        return {
            "roots": [{"uri": root} if isinstance(root, str) else dict(root) for root in listed]
        }

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
        if message.method == PROGRESS and isinstance(message.params, dict):
            params: dict[str, Any] = message.params
            callback = self._progress.get(str(params.get("progressToken")))
            if callback is not None:
                outcome = callback(
                    params.get("progress", 0), params.get("total"), params.get("message")
                )
                if inspect.isawaitable(outcome):
                    await outcome
        async with self._notified:
            self.notifications.append(raw)
            self._notified.notify_all()

    async def _answer(self, message: _Message) -> None:
        """Answer a server-to-client request (sampling, elicitation, roots, ping)."""
        assert message.method is not None and message.id is not None
        handler = self._handlers.get(message.method)
        try:
            if handler is not None:
                reply = encode_result(message.id, await handler(message.params or {}))
            elif self._on_request is not None:
                reply = encode_result(
                    message.id, await self._on_request(message.method, message.params)
                )
            elif message.method == PING:
                reply = encode_result(message.id, {})
            else:
                unknown = f"Method not found: {message.method}"
                reply = encode_error(message.id, METHOD_NOT_FOUND, unknown)
        except JSONRPCError as exc:
            reply = encode_error(message.id, exc.code, exc.message, exc.data)
        await self._channel.send([(reply, None)])


def _capabilities(
    given: dict[str, Any] | None,
    elicitation: ElicitationHandler | None,
    sampling: SamplingHandler | None,
    roots: object,
) -> dict[str, Any]:
    """The client capabilities: as given, plus those its handlers imply."""
    capabilities = dict(given or {})
    if elicitation is not None:
        capabilities.setdefault("elicitation", {"form": {}})
    if sampling is not None:
        capabilities.setdefault("sampling", {})
    if roots is not None:
        capabilities.setdefault("roots", {"listChanged": True})
    return capabilities


@asynccontextmanager
async def open_client(
    server: Server,
    *,
    initialize: bool = True,
    protocol_version: str = "2025-11-25",
    capabilities: dict[str, Any] | None = None,
    on_request: RequestHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    sampling: SamplingHandler | None = None,
    roots: RootsHandler | Sequence[Mapping[str, Any] | str] | None = None,
) -> AsyncIterator[TestClient]:
    """Serve ``server`` on an in-memory connection and yield a client for it.

    With ``protocol_version="2026-07-28"`` the client is stateless (modern era): no
    ``initialize``; every request carries ``_meta`` with the version and ``capabilities``.
    Otherwise the handshake runs first (unless ``initialize=False``).

    Server-to-client requests: ``elicitation(params)``, ``sampling(params)`` and ``roots``
    (a list of URIs or root objects, or an async function returning one) answer their
    methods and declare their capabilities; ``on_request(method, params)`` answers the rest.

    On exit the client closes its side; the server sees EOF and finishes like a stdio server
    would. An exception raised in the ``async with`` block (a failed ``assert``) comes out
    as itself, not wrapped in an ExceptionGroup.
    """
    client_end, server_end = trio.testing.memory_stream_pair()
    max_frame = server.limits.max_frame_size
    server_channel = FramedChannel(server_end, server_end, NdjsonFramer(max_frame_size=max_frame))
    client_channel = FramedChannel(client_end, client_end, NdjsonFramer(max_frame_size=max_frame))
    capabilities = _capabilities(capabilities, elicitation, sampling, roots)
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: server.serve_connection(server_channel, session=Session("memory"))
            )
            modern_meta = None
            if protocol_version >= "2026":
                modern_meta = {
                    META_PROTOCOL_VERSION: protocol_version,
                    META_CLIENT_CAPABILITIES: capabilities,
                    META_CLIENT_INFO: {
                        "name": "runtime.testing",
                        "version": "0",
                    },
                }
            client = TestClient(
                client_channel,
                on_request,
                modern_meta,
                elicitation=elicitation,
                sampling=sampling,
                roots=roots,
            )
            nursery.start_soon(client._read_loop)
            try:
                if initialize and modern_meta is None:
                    await client.initialize(protocol_version, capabilities)
                yield client
            except BaseException as exc:
                body_error = exc
                raise
            finally:
                await client_end.send_stream.aclose()
                nursery.cancel_scope.deadline = trio.current_time() + 5
    except BaseExceptionGroup as group:
        # trio wraps the block's exception in the nursery's group; a test wants its own
        # AssertionError (or error) back, plain, when it is the only thing that went wrong.
        if body_error is not None and _only(group, body_error):
            raise body_error.with_traceback(body_error.__traceback__) from None
        raise


def _only(group: BaseExceptionGroup[BaseException], error: BaseException) -> bool:
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        elif not isinstance(exc, trio.Cancelled):
            leaves.append(exc)

    walk(group)
    return leaves == [error]
