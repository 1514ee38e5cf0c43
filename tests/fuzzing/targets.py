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

from runtime.client import (
    BadMessage,
    CallToolResult,
    ListToolsResult,
    PeerError,
    ReadResourceResult,
    ServerDescription,
)
from runtime.client._conversation import _params, peer_error
from runtime.client._events import EventReading, SeenIds, answered
from runtime.client._http import ProtocolViolation, ResponseParser
from runtime.client._websocket import FrameTracker
from runtime.client._wire import Unreadable, decode_incoming, decode_value
from runtime.framing import ContentLengthFramer, FramingError, NdjsonFramer, SSEDecoder
from runtime.protocol import JSONRPCError, Kind, classify, decode_frame, decode_item
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
    """One message from the server through the client's decode (``Conversation._read``):
    judged by the server's rules, then what the waiting request or a served request
    decodes. Only ``Unreadable`` and ``BadMessage`` may say no; nothing raises out."""
    for item in decode_incoming(data):
        if isinstance(item, Unreadable):
            assert isinstance(item.reason, str) and item.reason
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
            params = _params(item.params)
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
