"""Coverage-guided fuzz targets (atheris) for the byte-level parsers: the three framers, the
HTTP/1.1 request parser with its body reader, the client's HTTP/1.1 response parser, and the
JSON-RPC envelope decoder.

Each target takes any bytes and checks the parser's contract: it returns frames/heads within
its caps or raises its one documented error (FramingError, ProtocolError, ProtocolViolation,
JSONRPCError); anything else escaping is a crash, which atheris reports with the input that
caused it. The first byte of the input picks how the rest is cut into ``feed`` calls (1 to
17 bytes each, or 0xFF: all at once), so split reads are explored too. ``python -m
tests.fuzzing`` runs them (see docs/reliability.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from runtime.client._http import ProtocolViolation, ResponseParser
from runtime.framing import ContentLengthFramer, FramingError, NdjsonFramer, SSEDecoder
from runtime.protocol import JSONRPCError, Kind, classify, decode_frame, decode_item
from runtime.transports.http._http11 import BodyReader, ProtocolError, RequestParser

MAX_FRAME = 512
MAX_HEAD = 1024
MAX_BODY = 2048


def _pieces(data: bytes) -> Iterator[bytes]:
    if not data:
        return
    rest = data[1:]
    step = max(1, len(rest)) if data[0] == 0xFF else data[0] % 17 + 1  # all at once, or 1..17
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


def http_response(data: bytes) -> None:
    """The client's response parser (``mcp-runtime call`` against a hostile server): one
    response's head and body, or its ProtocolViolation, nothing else; a Content-Length body
    is that long, and the body ends (``b""``) only when the parser says it is complete."""
    parser = ResponseParser()
    body = 0
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
                        assert body == int(length)
                    return
                body += len(chunk)
    except ProtocolViolation as exc:
        assert str(exc)


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
}

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
    "jsonrpc": [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b'[{"jsonrpc":"2.0","method":"x"},1,[]]',
        b"[" * 2000 + b"]" * 2000,
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}',
    ],
}
