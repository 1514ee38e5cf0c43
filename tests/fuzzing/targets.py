"""Coverage-guided fuzz targets (atheris) for the byte-level parsers: the three framers, the
HTTP/1.1 request parser with its body reader, the client's HTTP/1.1 response parser, and the
JSON-RPC envelope decoder; and what the client reads from a server it does not trust, per
transport, down to the decode of results, errors and params (``client_stdio``,
``http_response``, ``client_sse``, ``client_websocket``).

Each target takes any bytes and checks the parser's contract: it returns frames/heads within
its caps or raises its one documented error (FramingError, ProtocolError, ProtocolViolation,
JSONRPCError); anything else escaping is a crash, which atheris reports with the input that
caused it. The first byte of the input picks how the rest is cut into ``feed`` calls (1 to
17 bytes each, or 0xFF: all at once), so split reads are explored too. ``python -m
tests.fuzzing`` runs them (see docs/reliability.md).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import trio
import trio.testing
from msgspec import UNSET, Raw
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    Request,
    TextMessage,
)

from runtime.bridge._hop import (
    describe,
    per_hop_removed,
    remote_tool_tasks,
    with_subscription,
    without_subscription,
)
from runtime.bridge._listen import listen_filter
from runtime.bridge._remote_task import await_remote_task
from runtime.bridge._tasks import (
    HandshakeClientTasks,
    ModernClientTasks,
    _without_related,
    detailed_task,
    legacy_task,
    related_task,
)
from runtime.client import (
    BadMessage,
    CallToolResult,
    ClientError,
    ListToolsResult,
    PeerError,
    ReadResourceResult,
    ServerDescription,
    Task,
)
from runtime.client._decode import decode_value, params_of, peer_error
from runtime.client._events import EventReading, SeenIds, answered
from runtime.client._http import ProtocolViolation, ResponseParser
from runtime.client._websocket import FrameTracker
from runtime.framing import ContentLengthFramer, FramingError, NdjsonFramer, SSEDecoder
from runtime.protocol import META_RELATED_TASK as RELATED_TASK
from runtime.protocol import (
    META_SUBSCRIPTION_ID,
    JSONRPCError,
    Kind,
    classify,
    decode_frame,
    decode_item,
    decode_messages,
)
from runtime.transports.http._http11 import BodyReader, ProtocolError, RequestParser

MAX_FRAME = 512
MAX_HEAD = 1024
MAX_BODY = 2048
#: The client targets' cap on a message: room for nesting past the decoder's limit (about
#: 1,000 levels, 2 bytes each), which a smaller cap would skip before any decode.
MAX_MESSAGE = 3072
#: The client targets cut their input in pieces this many times larger: the framers' own
#: targets explore byte-sized reads; these spend their time in the decode behind them.
CLIENT_PIECES = 32


def _pieces(data: bytes, scale: int = 1) -> Iterator[bytes]:
    if not data:
        return
    rest = data[1:]
    # all at once, or 1..17 bytes (times ``scale``) a piece
    step = max(1, len(rest)) if data[0] == 0xFF else (data[0] % 17 + 1) * scale
    for start in range(0, len(rest), step):
        yield rest[start : start + step]


def _drain_frames(framer: NdjsonFramer | ContentLengthFramer | SSEDecoder) -> bool:
    """Call next_frame until it wants more bytes (the frames must respect the cap); True
    after a fatal error, which must then stick (raised again, not a frame)."""
    while not framer.finished:
        try:
            frame = framer.next_frame()
        except FramingError as exc:
            assert isinstance(exc.reason, str) and exc.offset >= 0
            if exc.fatal:
                try:
                    framer.next_frame()
                except FramingError as again:
                    assert again.fatal
                else:
                    raise AssertionError("a fatal framing error did not stick") from None
                return True
            continue
        if frame is None:
            return False
        if isinstance(framer, SSEDecoder):
            assert len(frame.data) <= MAX_FRAME  # type: ignore[union-attr]
        else:
            assert isinstance(frame, bytes) and len(frame) <= MAX_FRAME
    return False


def _framer_target(
    make: Callable[[], NdjsonFramer | ContentLengthFramer | SSEDecoder],
) -> Callable[[bytes], None]:
    def one_input(data: bytes) -> None:
        framer = make()
        for piece in _pieces(data):
            if framer.finished:
                return
            framer.feed(piece)
            if _drain_frames(framer):
                return
        if not framer.finished:
            framer.feed(b"")  # EOF
            _drain_frames(framer)

    return one_input


ndjson = _framer_target(lambda: NdjsonFramer(max_frame_size=MAX_FRAME))
content_length = _framer_target(lambda: ContentLengthFramer(max_frame_size=MAX_FRAME))
sse = _framer_target(lambda: SSEDecoder(max_frame_size=MAX_FRAME))


def http11(data: bytes) -> None:
    """Requests (heads and bodies) off one connection's bytes, as the server reads them."""
    parser = RequestParser(MAX_HEAD, 20)
    reader: BodyReader | None = None
    try:
        for piece in _pieces(data):
            parser.feed(piece)
            while True:
                if reader is None:
                    head = parser.next_head()
                    if head is None:
                        break
                    assert head.method and " " not in head.method
                    assert head.content_length is None or head.content_length >= -1
                    assert head.version in ((1, 0), (1, 1))
                    whole = BodyReader.whole(head, parser.buffer, MAX_BODY)
                    if whole is not None:
                        assert len(whole) == head.content_length
                        continue
                    reader = BodyReader(head, MAX_BODY)
                if not reader.read(parser.buffer):
                    break
                assert len(reader.body) <= MAX_BODY
                reader = None
    except ProtocolError as exc:
        assert 400 <= exc.status < 600 and exc.reason


#: The result types the client decodes answers into (a sample; all are msgspec Structs).
_RESULT_TYPES: tuple[Any, ...] = (
    Any,
    ListToolsResult,
    CallToolResult,
    ReadResourceResult,
    ServerDescription,
)


def _client_message(data: bytes) -> None:
    """One message from the server through the client's decode (``Conversation.read``):
    judged by the server's rules, then what the waiting request or a served request
    decodes. Only a ``JSONRPCError`` item and ``BadMessage`` may say no; nothing raises out."""
    for item in decode_messages(data):
        if isinstance(item, JSONRPCError):
            assert isinstance(item.message, str) and item.message
            continue
        if item.method is UNSET:  # a response
            if isinstance(item.error, Raw):
                try:
                    error = decode_value(item.error, "the error")
                except BadMessage as exc:
                    assert str(exc)
                    continue
                assert isinstance(peer_error(error), PeerError)
            else:
                assert isinstance(item.result, Raw)
                for result_type in _RESULT_TYPES:
                    try:
                        decode_value(item.result, "the result", result_type)
                    except BadMessage as exc:
                        assert str(exc)
        else:  # a request or a notification
            params = params_of(item.params)
            assert params is None or isinstance(params, dict)


def client_stdio(data: bytes) -> None:
    """A stdio (or TCP, Unix, pipe) server's NDJSON into the client: frames within the
    client's cap, each through its message decode."""
    framer = NdjsonFramer(max_frame_size=MAX_MESSAGE)
    for piece in [*_pieces(data, CLIENT_PIECES), b""]:
        framer.feed(piece)
        while not framer.finished:
            try:
                frame = framer.next_frame()
            except FramingError:
                continue  # NDJSON: never fatal, the frame was skipped
            if frame is None:
                break
            _client_message(frame)


def _events_into_client(reading: EventReading, pieces: list[bytes]) -> None:
    for piece in pieces:
        reading.feed(piece)
        while (message := reading.next_message()) is not None:
            assert len(message) <= 4 * MAX_MESSAGE  # UTF-8 of a decoded event within the cap
            _client_message(message)
    assert reading.skipped is None or reading.skips > 0


def client_sse(data: bytes) -> None:
    """An SSE answer stream into the client's reading (``_events.EventReading``: ids,
    ``retry:``, replays, skips, the answer) and each message through its decode; then the
    same bytes as the session's standing stream."""
    pieces = [*_pieces(data, CLIENT_PIECES), b""]
    awaiting: set[Any] = {1, "a"}
    reading = EventReading(MAX_MESSAGE, SeenIds(size=8), awaiting)
    _events_into_client(reading, pieces)
    assert awaiting <= {1, "a"}
    assert reading.retry is None or reading.retry >= 0
    _events_into_client(EventReading(MAX_MESSAGE, SeenIds(size=8), None), pieces)


def http_response(data: bytes) -> None:
    """The client's response parser (``mcp-runtime call`` against a hostile server): one
    response's head and body, or its ProtocolViolation, nothing else; a Content-Length body
    is that long, and the body ends (``b""``) only when the parser says it is complete.
    A whole body then goes where the Streamable HTTP link sends it: an SSE body into the
    client's SSE reading, any other into the answer probe and the message decode."""
    parser = ResponseParser()
    body = bytearray()
    try:
        for piece in [*_pieces(data), b""]:  # then EOF
            parser.feed(piece)
            if not parser.head():
                continue
            assert not 100 <= parser.status < 200  # interim responses are skipped
            while (chunk := parser.body()) is not None:
                if not chunk:
                    assert parser.complete
                    length = parser.headers.get("content-length")
                    framed = "transfer-encoding" in parser.headers or parser.status in (204, 304)
                    if length is not None and not framed:
                        assert len(body) == int(length)
                    _answer_body(parser.headers.get("content-type", ""), bytes(body))
                    return
                body += chunk
    except ProtocolViolation as exc:
        assert str(exc)


def _answer_body(content_type: str, body: bytes) -> None:
    if content_type.split(";", 1)[0].strip().lower() == "text/event-stream":
        reading = EventReading(MAX_MESSAGE, SeenIds(size=8), {1})
        _events_into_client(reading, [body, b""] if body else [b""])  # (b"" is the end)
        return
    found = answered(body, {1, "a"})
    assert isinstance(found, str) or found <= {1, "a"}
    _client_message(body)


_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 1.3


def _ws_client() -> tuple[WSConnection, bytes]:
    """A wsproto client connection past its opening handshake (subprotocol mcp), and the
    server's 101 response that completed it."""
    connection = WSConnection(ConnectionType.CLIENT)
    request = connection.send(Request(host="h", target="/mcp", subprotocols=["mcp"]))
    found = re.search(rb"(?i)sec-websocket-key: *(\S+)", request)
    assert found is not None
    accept = base64.b64encode(hashlib.sha1(found.group(1) + _WS_GUID).digest())
    response = (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: mcp\r\n\r\n"
    )
    connection.receive_data(response)
    list(connection.events())
    return connection, response


def client_websocket(data: bytes) -> None:
    """A WebSocket server's frames: the client's frame tracker (``StallGuard``'s, which
    must never raise) and wsproto, as trio-websocket drives it, with each whole message
    (at most the cap) through the client's message decode, as ``_WebSocketLink`` takes it."""
    connection, response = _ws_client()
    tracker = FrameTracker()
    tracker.feed(response)
    text: list[str] = []
    binary: list[bytes] = []
    size = 0
    for piece in _pieces(data, CLIENT_PIECES):
        tracker.feed(piece)
        assert isinstance(tracker.mid_message, bool)
        connection.receive_data(piece)
        for event in connection.events():
            if isinstance(event, CloseConnection):
                return
            if isinstance(event, Ping):
                connection.send(event.response())
            elif isinstance(event, Message):
                size += len(event.data)
                if size > MAX_MESSAGE:  # trio-websocket closes with 1009 here
                    return
                if isinstance(event, TextMessage):
                    text.append(event.data)
                elif isinstance(event, BytesMessage):
                    binary.append(bytes(event.data))
                if event.message_finished:
                    _client_message("".join(text).encode("utf-8") + b"".join(binary))
                    text, binary, size = [], [], 0


def jsonrpc(data: bytes) -> None:
    """The envelope decoder: a message, a batch, or -32700/-32600, nothing else."""
    try:
        message = decode_frame(data)
    except JSONRPCError as exc:
        assert exc.code in (-32700, -32600)
        return
    items = message if isinstance(message, list) else None
    for item in items if items is not None else []:
        try:
            classify(decode_item(item))
        except JSONRPCError as exc:
            assert exc.code in (-32700, -32600)
    if items is None:
        try:
            assert classify(message) in (Kind.REQUEST, Kind.NOTIFICATION, Kind.RESPONSE)  # type: ignore[arg-type]
        except JSONRPCError as exc:
            assert exc.code == -32600


TARGETS: dict[str, Callable[[bytes], None]] = {
    "ndjson": ndjson,
    "content_length": content_length,
    "sse": sse,
    "http11": http11,
    "http_response": http_response,
    "jsonrpc": jsonrpc,
    "client_stdio": client_stdio,
    "client_sse": client_sse,
    "client_websocket": client_websocket,
}


def _ws_frame(payload: bytes, *, opcode: int = 0x1, fin: bool = True) -> bytes:
    """One unmasked WebSocket frame from a server (RFC 6455 5.2)."""
    size = len(payload)
    if size < 126:
        head = bytes([(0x80 if fin else 0) | opcode, size])
    elif size < 1 << 16:
        head = bytes([(0x80 if fin else 0) | opcode, 126]) + size.to_bytes(2, "big")
    else:
        head = bytes([(0x80 if fin else 0) | opcode, 127]) + size.to_bytes(8, "big")
    return head + payload


_NESTED = b"[" * 1200 + b"]" * 1200  # past the decoder's limit, within MAX_MESSAGE
_NESTED_RESULT = b'{"jsonrpc":"2.0","id":1,"result":' + _NESTED + b"}"
_NESTED_ERROR = b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":' + _NESTED + b"}}"
_NESTED_PARAMS = b'{"jsonrpc":"2.0","id":"d","method":"roots/list","params":{"x":' + _NESTED + b"}}"

#: Seeds for each target (also run by tests/fuzzing/test_targets.py without atheris).
SEEDS: dict[str, list[bytes]] = {
    "ndjson": [b'\x03{}\n{"a":1}\r\n\n', b"\x00" + b"x" * 600 + b"\nok\n", b"\x05tail"],
    "content_length": [
        b"\x04Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]",
        b"\x01Content-Length: -1\r\n\r\n",
        b"\x02content-length: 99999999999999999999\r\n\r\n",
        b"\x00Content-Type: x\r\nContent-Length: 1\r\n\r\n1",
    ],
    "sse": [
        b"\x02data: a\ndata: b\nid: 7\nretry: 10\n\n",
        b"\x00\xef\xbb\xbfevent: x\r\ndata\r\r\n",
    ],
    "http11": [
        b"\x07POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"\x03POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nab\r\n0\r\nX: y\r\n\r\n",
        b"\x01POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
        b"\x00GET http://x/ HTTP/1.0\r\n\r\n",
        b"\x00GE http://x[ HTTP/1.0\r\n\r\n",  # once a crash: urlsplit's ValueError
    ],
    "http_response": [
        # The answers of tests/client/test_hostile_answers.py: nested past the decoder's
        # limit, as JSON and as an SSE event, and a body over the cap (announced).
        b"\xffHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(_NESTED_RESULT)
        + _NESTED_RESULT,
        b"\xffHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: "
        + _NESTED_RESULT
        + b"\n\n",
        b"\x10HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4194305\r\n"
        b"\r\n{}",
        # A Content-Length past int()'s 4,300 digits (its ValueError escaped the parser).
        b"\x10HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
        + b"9" * 5000
        + b"\r\n\r\n{}",
        # Found by the first run of the SSE extension (a fault of the harness: an empty SSE
        # body fed as two ends): a complete chunked SSE answer with no body.
        b"\x00HTTP/1.1 200 OK\r\nTransfer-Encoding: chunkedHTTP/1.1 200 OK\r\n"
        b"Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n8ell&\r\n"
        b"7;x=1\r\n, world\r\n0\r\nT: x\r\r\n\r\n-5\r\nhello world\r\n",
        b"\x05HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;x=1\r\n, world\r\n0\r\nT: x\r\n\r\n",
        b"\x02HTTP/1.1 202 Accepted\r\nContent-Length: 4\r\nX-A: 1\r\nx-a: 2\r\n\r\nbody",
        b"\x10HTTP/1.0 404 Not Found\r\n\r\nuntil the end",
        # Once crashes: RecursionError, then ValueError from int() ("\xb2" is "2" superscript).
        b"\xff" + b"HTTP/1.1 100 Continue\r\n\r\n" * 3000 + b"HTTP/1.1 204 No Content\r\n\r\n",
        b"\x00HTTP/1.1 2\xb20 OK\r\n\r\n",
        b"\x00HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n",
        b"\x00HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello world\r\n",
    ],
    # The client's side: the inputs of the hostile-server tests (tests/client/), each once
    # a crash or a hang: two requests with one id, 100,000 levels of nesting (here 1,200:
    # past the decoder's limit all the same, in inputs small enough to mutate fast), an
    # answer past the size cap, then what the client must still read after them.
    "client_stdio": [
        b"\xff"
        + b'{"jsonrpc":"2.0","id":7,"method":"roots/list"}\n' * 2
        + b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n',
        b"\xff" + _NESTED_RESULT + b"\n" + _NESTED_ERROR + b"\n" + _NESTED_PARAMS + b"\n",
        b"\xff" + b'{"jsonrpc":"2.0","id":1,"result":"' + b"x" * (MAX_MESSAGE + 8) + b'"}\n'
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}\n',
        b"\x03" + b'[{"jsonrpc":"2.0","id":"p1","method":"ping"},{"jsonrpc":"1.0"},7]\n',
        b'\x00{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":3}}\n',
    ],
    "client_sse": [
        b"\x05id: s_1\nretry: 700\n\nid: s_2\ndata: "
        + b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}\n\nid: s_2\ndata: {}\n\n',
        b"\xffdata: " + _NESTED_RESULT + b'\n\ndata: {"jsonrpc":"2.0","id":"a","result":{}}\n\n',
        b"\xffdata: " + b"x" * (MAX_MESSAGE + 8) + b"\n\nevent: other\ndata: {}\n\n",
        b'\x00data: {"jsonrpc":"2.0","id":7,"method":"roots/list"}\r\n\r\n',
    ],
    "client_websocket": [
        b"\xff" + _ws_frame(b'{"jsonrpc":"2.0","id":7,"method":"roots/list"}') * 2,
        b"\xff" + _ws_frame(_NESTED_RESULT),
        b"\x05"
        + _ws_frame(b'{"jsonrpc":', fin=False)
        + _ws_frame(b"", opcode=0x9)
        + _ws_frame(b'"2.0","method":"x"}', opcode=0x0),
        b"\xff" + _ws_frame(b"x" * (MAX_MESSAGE + 8)),
        b"\xff" + _ws_frame(b"\x03\xe8", opcode=0x8),
    ],
    "jsonrpc": [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b'[{"jsonrpc":"2.0","method":"x"},1,[]]',
        b"[" * 2000 + b"]" * 2000,
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}',
    ],
}


# -- The bridge's translation: what it makes of a remote's messages ---------------------------
#
# What reaches the bridge from a remote has passed the client's decode (valid JSON, a
# response, notification or request); the bridge then reshapes it for its own client: results
# lose what belongs to the remote's hop, task shapes are translated across the two task
# protocols, notifications get our subscription id, the remote's capabilities become ours.
# ``bridge_translation`` decodes the input as the client does (``msgspec.json.decode``; not
# JSON: the client refused it, nothing to do) and hands it, by the first byte, to one of those
# paths; the async ones run against ``_Remote``, which answers each request of the bridge with
# the next fuzzed reply (a JSON array: one reply per element). A path may only return what a
# client can be sent, or raise what becomes a JSON-RPC error answer there: ``JSONRPCError``
# (with an integer code) or the client's ``ClientError`` (the proxy answers -32603).

import copy  # noqa: E402 - this block is appended whole; the client targets precede it
from typing import Any  # noqa: E402


class _Remote:
    """The remote behind the bridge's client: each request answered with the next reply,
    decoded as ``Client.request`` decodes it; a reply that is an array is an error answer
    instead, its first item the error object (made a ``PeerError`` by the client's own
    ``peer_error``); ``get_task`` decodes a reply as a ``Task`` as ``Client.get_task`` does
    (``BadMessage`` when it is not one); once the replies run out, the remote answers
    -32603."""

    def __init__(self, replies: list[Any], era: str = "modern") -> None:
        self.replies = replies
        self.era = era
        self.description: ServerDescription | None = None

    async def request(self, method: str, params: Any = None, **_: Any) -> Any:
        await trio.lowlevel.checkpoint()
        if not self.replies:
            raise PeerError(-32603, f"{method}: no more replies")
        reply = self.replies.pop(0)
        if isinstance(reply, list):
            raise peer_error(reply[0] if reply else None)
        return reply

    async def get_task(self, task_id: str) -> Task:
        reply = await self.request("tasks/get", {"taskId": task_id})
        try:
            return msgspec.convert(reply, Task)
        except msgspec.ValidationError as exc:
            raise BadMessage(f"tasks/get: the result does not match the schema: {exc}") from None

    async def update_task(self, task_id: str, responses: Any) -> None:
        await self.request("tasks/update", {"taskId": task_id, "inputResponses": responses})

    async def cancel_task(self, task_id: str) -> Any:
        return await self.request("tasks/cancel", {"taskId": task_id})


def _sendable(value: Any) -> None:
    """What the bridge passes on must encode as JSON (our server encodes it next)."""
    msgspec.json.encode(value)


def _documented(exc: BaseException) -> None:
    """An error the bridge raises must be one its server answers precisely."""
    if isinstance(exc, JSONRPCError):
        assert type(exc.code) is int, f"a JSON-RPC error code that is not an integer: {exc.code!r}"
        assert isinstance(exc.message, str)
        _sendable(exc.data)
    elif not isinstance(exc, ClientError):
        raise exc


async def _answers(call: Any) -> Any:
    try:
        result = await call
    except (JSONRPCError, ClientError) as exc:
        _documented(exc)
        return None
    _sendable(result)
    return result


def _result_route(value: Any) -> None:
    """A forwarded request's result, as the bridge passes it on (both eras)."""
    for keep in (False, True):
        out = per_hop_removed(copy.deepcopy(value), keep_result_type=keep)
        _sendable(out)
        if isinstance(out, dict):
            assert "ttlMs" not in out and "cacheScope" not in out
            assert keep or "resultType" not in out
            meta = out.get("_meta")
            assert not isinstance(meta, dict) or "io.modelcontextprotocol/serverInfo" not in meta


def _notification_route(value: Any) -> None:
    """A remote's notification params (``Notification.params`` is an object)."""
    if not isinstance(value, dict):
        return
    out = without_subscription(copy.deepcopy(value))
    _sendable(out)
    meta = out.get("_meta")
    assert not isinstance(meta, dict) or META_SUBSCRIPTION_ID not in meta
    ours = with_subscription(copy.deepcopy(value), 7)
    _sendable(ours)
    assert ours["_meta"][META_SUBSCRIPTION_ID] == 7


def _request_route(value: Any) -> None:
    """A remote's request params: the task it names, and its params without that ``_meta``."""
    task_id = related_task(value)
    assert task_id is None or isinstance(task_id, str)
    if isinstance(value, dict):
        out = _without_related(copy.deepcopy(value))
        _sendable(out)
        meta = out.get("_meta")
        assert not isinstance(meta, dict) or RELATED_TASK not in meta


def _task_shape_route(value: Any) -> None:
    """A remote's task object (the bridge checks it is an object first) in the other era's
    shape."""
    if not isinstance(value, dict):
        return
    old, new = legacy_task(copy.deepcopy(value)), detailed_task(copy.deepcopy(value))
    _sendable(old)
    _sendable(new)
    assert "ttl" in old and "ttlMs" not in old and "resultType" not in old
    assert "ttlMs" in new and "ttl" not in new


def _describe_route(value: Any) -> None:
    """The remote's ``initialize`` (or ``server/discover``) result: as our own declares it,
    and what a downstream listen asking for everything is acknowledged and passed on."""
    try:
        description = msgspec.convert(value, ServerDescription)
    except msgspec.ValidationError:
        return  # the client refuses it (BadMessage): the bridge never sees it
    everything = {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "resourcesListChanged": True,
        "resourceSubscriptions": ["a"],
        "taskIds": ["t"],
    }
    honored, filter_ = listen_filter(everything, description.capabilities)
    _sendable(honored)
    assert set(filter_) <= {"tools", "prompts", "resources", "resource_uris", "task_ids"}
    assert remote_tool_tasks(description.capabilities) in (True, False)
    for era in ("modern", "handshake"):
        remote = _Remote([], era)
        remote.description = description
        for modern in (True, False):
            ours = {"protocolVersion": "x", "capabilities": {"tools": {}}, "serverInfo": {}}
            _sendable(describe(ours, remote, modern=modern))  # type: ignore[arg-type]


def _replies(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _run(route: Any, value: Any) -> None:
    """``route(replies)`` in trio, its sleeps (poll intervals) skipped by the mock clock."""
    trio.run(route, _replies(value), clock=trio.testing.MockClock(autojump_threshold=0))


async def _handshake_client_tasks(replies: list[Any]) -> None:
    """A handshake-era client's task through a 2026-07-28 remote (``HandshakeClientTasks``):
    the first reply answers the task-augmented call; each request about the task then meets
    the remote's other replies from the start."""
    remote = _Remote(copy.deepcopy(replies))
    tasks = HandshakeClientTasks(remote, max_poll_interval=1.0)  # type: ignore[arg-type]

    async def forward(sent: dict[str, Any]) -> Any:
        return per_hop_removed(await remote.request("tools/call", sent), keep_result_type=True)

    async def ask(method: str, params: Any) -> Any:
        _sendable(params)
        return {"action": "decline"}

    created = await _answers(
        tasks.call({"name": "t", "arguments": {}, "task": {"ttl": 9}}, forward)
    )
    if not isinstance(created, dict):
        return
    task_id = created["task"]["taskId"]  # a CreateTaskResult (2025-11-25): {"task": Task}
    assert isinstance(task_id, str), created
    for method in ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel"):
        remote.replies = copy.deepcopy(replies[1:])
        await _answers(tasks.handle(method, {"taskId": task_id}, ask))


async def _modern_client_tasks(replies: list[Any]) -> None:
    """A 2026-07-28 client's task through a handshake-era remote (``ModernClientTasks``),
    its watcher holding the remote's ``tasks/result``: the replies, in turn, are its
    tools/list pages, the call's, the watcher's and those of the requests about the task."""
    remote = _Remote(replies, "handshake")
    tasks = ModernClientTasks(round_timeout=1.0)
    await _answers(tasks.task_support(remote, "t"))  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        created = await _answers(tasks.call(remote, {"name": "t"}, nursery))  # type: ignore[arg-type]
        if isinstance(created, dict) and created.get("resultType") == "task":
            assert isinstance(created.get("taskId"), str), created  # a DetailedTask names itself
            task = {"taskId": created["taskId"]}
            await trio.sleep(0.1)  # the watcher takes its reply
            got = await _answers(tasks.handle(remote, "tasks/get", task))  # type: ignore[arg-type]
            error = got.get("error") if isinstance(got, dict) else None
            assert not isinstance(error, dict) or type(error.get("code")) is int, got
            await _answers(tasks.handle(remote, "tasks/cancel", task))  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()


async def _remote_task(replies: list[Any]) -> None:
    """A 2026-07-28 remote running a handshake-era client's call as a task, run to its end
    (``await_remote_task``): the first reply is the task it made, the others its polls."""
    created = replies.pop(0) if replies else None
    if not isinstance(created, dict):
        return

    async def ask(method: str, params: Any) -> Any:
        _sendable(params)
        return {"action": "decline"}

    remote = _Remote(replies)
    await _answers(await_remote_task(remote, created, ask, max_poll_interval=1.0))  # type: ignore[arg-type]


_BRIDGE_ROUTES: list[Any] = [
    _result_route,
    _notification_route,
    _request_route,
    _task_shape_route,
    _describe_route,
    lambda value: _run(_handshake_client_tasks, value),
    lambda value: _run(_modern_client_tasks, value),
    lambda value: _run(_remote_task, value),
]


def bridge_translation(data: bytes) -> None:
    """A remote's reply, notification or request bytes through the bridge's translation."""
    if not data:
        return
    try:
        value = msgspec.json.decode(data[1:])
    except msgspec.DecodeError:
        return  # not JSON: the client refuses it before the bridge sees anything
    _BRIDGE_ROUTES[data[0] % len(_BRIDGE_ROUTES)](value)


TARGETS["bridge_translation"] = bridge_translation
SEEDS["bridge_translation"] = [
    b'\x00{"content":[],"resultType":"complete","ttlMs":5,"_meta":{"io.modelcontextprotocol/serverInfo":{}}}',
    b'\x01{"uri":"a","_meta":{"io.modelcontextprotocol/subscriptionId":3,"x":1}}',
    b'\x02{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}},"message":"?"}',
    b'\x03{"taskId":"t","status":"working","ttlMs":1000,"pollIntervalMs":5}',
    b'\x04{"protocolVersion":"2026-07-28","capabilities":{"tools":{"listChanged":true},'
    b'"tasks":{"requests":{"tools":{"call":{}}}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}',
    b'\x05[{"resultType":"task","taskId":"t","status":"working","ttlMs":1},'
    b'{"taskId":"t","status":"input_required","inputRequests":{"a":{"method":"elicitation/create",'
    b'"params":{"message":"m"}}}},{},{"taskId":"t","status":"completed","result":{"content":[]}}]',
    b'\x06[{"tools":[{"name":"t","execution":{"taskSupport":"optional"}}]},'
    b'{"task":{"taskId":"r","status":"working","ttl":1}},{"content":[]},{"taskId":"r","status":"completed"}]',
    b'\x07[{"taskId":"t","status":"working","pollIntervalMs":1},'
    b'{"taskId":"t","status":"failed","error":{"code":-32000,"message":"no"}}]',
    # Once crashes, each fixed with the bridge code it found wrong: a remote's task without a
    # taskId answered as a CreateTaskResult without one; a tools/list whose tools is a number
    # (TypeError); tasks/list sorting a task without a taskId (KeyError); a handshake-era
    # remote's "resultType": "task" with no task passed on to a 2026-07-28 client (the input
    # as it reads now that this route's replies are taken in turn); an input request's params
    # that are an array (dict() of it: TypeError).
    b'\x05[{"resultType":"task","taskaId":"t","status":"working","ttlMs":1},{"taskId":"t","status":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m"}}}},{},{"taskId":"t","itatus":"cpleted","result":{"content":[]}}]',
    b'\x06[{"tools":1},{"ts":[{"name":"t","attlMs":1},{"taskIMs":1},{"taskId":"t","s":"inneded","inputn":{"taort":"optionaq"}}]},{"t":[]},{"taskId":"r","states":"completed"}]',
    b'\x05[{"resultType":"task","taskId":"trking","ttlMs":1},{"tWskId":"t","statussts":{"a":{"method":"elicite","params":{"message":"m"}}}},{},{"taskId":"t","status":"completed","re":"id","Requests":{"a":{"method":"elicite","params":{"message":"m"}}}},{},{"taskId":"t","status":"completed","result":{"content":[]}}]',
    b'\x06[{"tools":[]},{"resultType":"task","status":"working","ttlMs":1}]',
    b'\x05[{"resultType":"task","taskId":"t","status":"working","ttlMs":1},{"taskId":"t","status":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":[1]}}},{},{"taskId":"t","status":"completed","result":{"content":[]}}]',
    # Found by reading the paths the target drives (the fuzzer had not reached them): an
    # error code `true` passed on as the code (Python counts True as an int), from a task's
    # error object and from an error answer (an array reply); a poll interval of 10**400 ms
    # (OverflowError dividing it).
    b'\x07[{"taskId":"t","status":"working","pollIntervalMs":1},'
    b'{"taskId":"t","status":"failed","error":{"code":true,"message":"no"}}]',
    b'\x05[{"resultType":"task","taskId":"t","status":"working"},'
    b'{"taskId":"t","status":"failed","error":{"code":true,"message":"no"}}]',
    b'\x06[{"tools":[]},{"task":{"taskId":"r","status":"working"}},[{"code":true,"message":"x"}],'
    b'{"taskId":"r","status":"failed"},{"taskId":"r","status":"failed"}]',
    b'\x05[{"resultType":"task","taskId":"t","status":"working"},[{"code":false,"message":"x"}]]',
    b'\x05[{"resultType":"task","taskId":"t","status":"working"},'
    b'{"taskId":"t","status":"working","pollIntervalMs":1' + b"0" * 400 + b"}]",
    b'\x07[{"taskId":"t","status":"working","pollIntervalMs":1' + b"0" * 400 + b"}]",
    # ... and capabilities whose levels are not objects: `requests` an array, `tools` a number
    # (AttributeError, TypeError building our initialize result), `tools` a string ("call"
    # in "call" was a declaration), list kinds whose capability is not an object.
    b'\x04{"protocolVersion":"x","capabilities":{"tasks":{"requests":[1]}}}',
    b'\x04{"protocolVersion":"x","capabilities":{"tasks":{"requests":{"tools":5}}}}',
    b'\x04{"protocolVersion":"x","capabilities":{"tasks":{"requests":{"tools":"call"}}}}',
    b'\x04{"protocolVersion":"x","capabilities":{"tools":[1],"resources":"subscribe"}}',
]
