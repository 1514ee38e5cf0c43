"""runtime.transports.http._http11: the server's own HTTP/1.1 request parser and response heads."""

from __future__ import annotations

import dataclasses

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.transports.http import _http11
from runtime.transports.http._http11 import (
    BodyReader,
    ProtocolError,
    RequestHead,
    RequestParser,
    chunk,
    end_chunks,
    response_head,
    simple_response,
    simple_response_head,
)

BASIC = b"POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Length: 5\r\n\r\nhello"


def parse(data: bytes, max_size: int = 16 * 1024, max_count: int = 100) -> RequestHead | None:
    parser = RequestParser(max_size, max_count)
    parser.feed(data)
    return parser.next_head()


def status_of(data: bytes, **kw: int) -> int:
    with pytest.raises(ProtocolError) as info:
        parse(data, **kw)
    return info.value.status


def test_a_request_head_and_its_body() -> None:
    parser = RequestParser(16 * 1024, 100)
    parser.feed(BASIC + b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    head = parser.next_head()
    assert head is not None
    assert (head.method, head.target, head.version) == ("POST", "/mcp?x=1", (1, 1))
    assert (head.path, head.query) == ("/mcp", {"x": "1"})  # the target split once, here
    with pytest.raises(TypeError):
        head.query["x"] = "2"  # type: ignore[index]
    assert head.headers == (("host", "127.0.0.1:8000"), ("content-length", "5"))
    assert head.content_length == 5 and head.keep_alive and not head.expect_continue
    body = BodyReader(head, 100)
    assert body.read(parser.buffer) and bytes(body.body) == b"hello"
    second = parser.next_head()  # pipelined: the next request waited in the buffer
    assert second is not None and second.method == "GET" and second.content_length is None
    assert (second.path, second.query) == ("/", {})


def test_a_whole_body_already_read_is_taken_without_a_reader() -> None:
    parser = RequestParser(16 * 1024, 100)
    parser.feed(BASIC + b"next")
    head = parser.next_head()
    assert head is not None
    assert BodyReader.whole(head, parser.buffer, 4) is None  # over the limit: the reader's 413
    assert BodyReader.whole(head, parser.buffer, 100) == b"hello" and parser.buffer == b"next"
    partial = parse(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\nhell")
    assert partial is not None and BodyReader.whole(partial, bytearray(b"hell"), 100) is None
    chunked = parse(CHUNKED)
    assert chunked is not None and BodyReader.whole(chunked, bytearray(CHUNKED), 10**6) is None
    # The body is all the buffer holds (nothing pipelined behind it): taken, buffer emptied.
    parser = RequestParser(16 * 1024, 100)
    parser.feed(BASIC)
    head = parser.next_head()
    assert head is not None and parser.buffer == b"hello"
    assert BodyReader.whole(head, parser.buffer, 5) == b"hello" and parser.buffer == b""


def test_incomplete_heads_wait_and_leading_empty_lines_are_ignored() -> None:
    parser = RequestParser(16 * 1024, 100)
    parser.feed(b"\r\n\r\nPOST /mcp HTTP/1.1\r\nHost: h\r\n")
    assert parser.next_head() is None
    parser.feed(b"\r\n")
    head = parser.next_head()
    assert head is not None and head.target == "/mcp"


def test_header_values_lose_surrounding_whitespace_and_names_are_lowered() -> None:
    head = parse(b"GET / HTTP/1.1\r\nHOST:   h  \r\nX-A:\tv 1\t\r\nX-Empty:\r\n\r\n")
    assert head is not None
    assert head.headers == (("host", "h"), ("x-a", "v 1"), ("x-empty", ""))


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"POST /mcp HTTP/1.1\nHost: h\n\n", 400),  # bare LF line ends
        (b"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400),  # whitespace before the colon
        (b"GET / HTTP/1.1\r\nHost: h\x00\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),  # bare CR
        (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400),
        (b"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        (b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\n\r\n", 400),  # no Host
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n",
            400,
        ),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \xb2\r\n\r\n", 400),  # superscript 2
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1234567890123456789\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nExpect: magic\r\n\r\n", 417),
        (b"GET http://x[ HTTP/1.1\r\nHost: h\r\n\r\n", 400),  # urlsplit's ValueError
    ],
)
def test_malformed_or_risky_heads_get_a_precise_status(data: bytes, status: int) -> None:
    assert status_of(data) == status


def test_limits_on_head_size_and_field_count() -> None:
    fields = b"".join(b"X-%d: v\r\n" % i for i in range(101))
    assert status_of(b"GET / HTTP/1.1\r\nHost: h\r\n" + fields + b"\r\n") == 431
    assert status_of(b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"v" * 2000, max_size=1024) == 431
    big = b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"v" * 2000 + b"\r\n\r\n"
    assert status_of(big, max_size=1024) == 431


def test_connection_persistence_and_expect() -> None:
    close = parse(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n")
    assert close is not None and not close.keep_alive
    old = parse(b"GET / HTTP/1.0\r\n\r\n")
    assert old is not None and old.version == (1, 0) and not old.keep_alive
    expect = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"
    head = parse(expect)
    assert head is not None and head.expect_continue
    same = parse(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\n")
    assert same is not None and same.content_length == 3


def test_repeated_field_lines_parse_the_same_each_time_and_the_memo_stays_bounded() -> None:
    request = b"POST / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a:  2 \r\nContent-Length: 0\r\n\r\n"
    first, second = parse(request), parse(request)
    assert first is not None and second is not None
    fields = [("host", "h"), ("x-a", "1"), ("x-a", "2"), ("content-length", "0")]
    assert first.headers == second.headers == tuple(fields)
    assert first.index == second.index == {"host": "h", "x-a": "1, 2", "content-length": "0"}
    with pytest.raises(TypeError):  # shared between requests, so nobody can change them
        first.index["x-mine"] = "v"  # type: ignore[index]
    for i in range(3 * 1024):  # a client sending ever-new lines costs no memory
        head = parse(b"GET / HTTP/1.1\r\nHost: h\r\nX-Trace: %d\r\n\r\n" % i)
        assert head is not None and head.index["x-trace"] == str(i)
    assert len(_http11._FIELD_LINES) <= 1024
    long_value = "v" * 600  # long lines are parsed each time, never remembered
    head = parse(b"GET / HTTP/1.1\r\nHost: h\r\nX-Long: %b\r\n\r\n" % long_value.encode())
    assert head is not None and head.index["x-long"] == long_value
    assert f"X-Long: {long_value}" not in _http11._FIELD_LINES


def test_a_head_seen_before_parses_the_same_and_the_head_memo_stays_bounded() -> None:
    request = b"POST /mcp HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nContent-Length: 2\r\n\r\n"
    first = parse(request)
    assert first is not None
    # The same head is handed out again, so it cannot be changed: no request's changes can
    # reach the next one.
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.content_length = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        first.index["x-mine"] = "v"  # type: ignore[index]
    assert isinstance(first.headers, tuple)
    again = parse(request)
    assert again is first
    assert again.headers == (("host", "h"), ("accept", "*/*"), ("content-length", "2"))
    assert again.index == {"host": "h", "accept": "*/*", "content-length": "2"}
    assert (again.method, again.target, again.content_length) == ("POST", "/mcp", 2)
    # The field-count limit is the parser's own: a head remembered under a higher limit
    # is still refused by a parser with a lower one.
    assert status_of(request, max_count=2) == 431
    for i in range(3 * 256):  # ever-new heads cost no memory
        head = parse(b"GET /%d HTTP/1.1\r\nHost: h\r\n\r\n" % i)
        assert head is not None and head.target == f"/{i}"
    assert len(_http11._HEADS) <= 256
    long_head = b"GET / HTTP/1.1\r\nHost: h\r\nX-Long: " + b"v" * 1100
    assert parse(long_head + b"\r\n\r\n") is not None
    assert long_head not in _http11._HEADS  # heads over 1 KiB are parsed each time
    # A malformed head is refused every time, never remembered.
    assert status_of(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400
    assert status_of(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400


@given(
    st.sampled_from([100, 200, 201, 202, 204, 304, 400, 404, 500, 599]),
    st.sampled_from([None, "application/json", "text/plain; charset=utf-8"]),
    st.integers(min_value=0, max_value=10**9),
    st.booleans(),
    st.lists(
        st.sampled_from([("Mcp-Session-Id", "s-1"), ("Mcp-Session-Id", "s-2"), ("X-A", "b c")]),
        max_size=2,
    ),
)
def test_simple_response_heads_are_the_general_ones_byte_for_byte(
    status: int,
    content_type: str | None,
    length: int,
    close: bool,
    extra: list[tuple[str, str]],
) -> None:
    fields = [*extra, ("Content-Type", content_type)] if content_type else extra
    expected = response_head(status, fields, length=length, close=close)
    assert simple_response_head(status, content_type, length, close, tuple(extra)) == expected
    if not extra:
        assert simple_response_head(status, content_type, length, close) == expected


@given(
    st.sampled_from([200, 202, 204, 400, 404, 500]),
    st.sampled_from([None, "application/json"]),
    st.binary(max_size=64),
    st.booleans(),
    st.lists(st.sampled_from([("Mcp-Session-Id", "s-1"), ("X-A", "b c")]), max_size=2),
)
def test_a_simple_response_is_its_general_head_then_its_body(
    status: int,
    content_type: str | None,
    body: bytes,
    close: bool,
    extra: list[tuple[str, str]],
) -> None:
    fields = [*extra, ("Content-Type", content_type)] if content_type else extra
    expected = response_head(status, fields, length=len(body), close=close) + body
    assert simple_response(status, content_type, body, close, tuple(extra)) == expected
    if not extra:
        assert simple_response(status, content_type, body, close) == expected


def test_a_response_field_with_a_line_break_is_refused_every_time() -> None:
    for _ in range(2):  # never remembered as a valid head part
        with pytest.raises(ValueError):
            simple_response_head(200, "application/json", 1, False, (("X-Bad", "a\r\nb"),))


CHUNKED = (
    b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
)


@given(st.lists(st.integers(min_value=1, max_value=len(CHUNKED)), max_size=12))
def test_chunked_bodies_in_any_pieces(cuts: list[int]) -> None:
    parser = RequestParser(16 * 1024, 100)
    points = sorted(set(cuts))
    pieces = [CHUNKED[a:b] for a, b in zip([0, *points], [*points, len(CHUNKED)], strict=True)]
    head = None
    reader = None
    done = False
    for piece in pieces:
        parser.feed(piece)
        if head is None:
            head = parser.next_head()
            if head is None:
                continue
            reader = BodyReader(head, 1024)
        assert reader is not None
        done = reader.read(parser.buffer)
    assert head is not None and reader is not None and done
    assert bytes(reader.body) == b"hello world" and parser.buffer == bytearray()


def test_chunked_errors_and_body_limits() -> None:
    parser = RequestParser(16 * 1024, 100)
    parser.feed(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n")
    head = parser.next_head()
    assert head is not None
    with pytest.raises(ProtocolError) as info:
        BodyReader(head, 100).read(parser.buffer)
    assert info.value.status == 400
    parser = RequestParser(16 * 1024, 100)
    parser.feed(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    head = parser.next_head()
    assert head is not None
    with pytest.raises(ProtocolError):
        BodyReader(head, 100).read(parser.buffer)
    parser = RequestParser(16 * 1024, 100)
    parser.feed(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n")
    head = parser.next_head()
    assert head is not None
    with pytest.raises(ProtocolError) as info:
        BodyReader(head, 100).read(parser.buffer)
    assert info.value.status == 413
    head = parse(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n")
    assert head is not None
    with pytest.raises(ProtocolError) as info:
        BodyReader(head, 100)
    assert info.value.status == 413


def _client_reads(data: bytes, method: bytes = b"POST") -> list[object]:
    """What a strict HTTP/1.1 client (h11) makes of response bytes."""
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method=method, target="/", headers=[("Host", "h")]))
    client.send(h11.EndOfMessage())
    client.receive_data(data)
    events: list[object] = []
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA or isinstance(event, h11.EndOfMessage):
            events.append(event)
            return events
        events.append(event)


def test_response_heads_are_valid_http_for_a_strict_client() -> None:
    body = b'{"ok":true}'
    head = response_head(200, [("Content-Type", "application/json")], length=11, close=False)
    events = _client_reads(head + body)
    response = events[0]
    assert isinstance(response, h11.Response) and response.status_code == 200
    assert (b"content-length", b"11") in list(response.headers)
    assert isinstance(events[1], h11.Data) and events[1].data == body
    streamed = response_head(200, [("Content-Type", "text/event-stream")], length=None, close=True)
    events = _client_reads(streamed + chunk(b"data: 1\n\n") + chunk(b"") + end_chunks())
    assert (b"transfer-encoding", b"chunked") in list(events[0].headers)  # type: ignore[attr-defined]
    assert (b"connection", b"close") in list(events[0].headers)  # type: ignore[attr-defined]
    assert isinstance(events[1], h11.Data) and events[1].data == b"data: 1\n\n"
    assert isinstance(events[-1], h11.EndOfMessage)
    no_content = response_head(204, [], length=0, close=False)
    assert b"Content-Length" not in no_content
    assert isinstance(_client_reads(no_content)[-1], h11.EndOfMessage)
    with pytest.raises(ValueError):
        response_head(200, [("X-Bad", "a\r\nInjected: 1")], length=0, close=False)


VALID = (
    b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
)


def _mutations() -> st.SearchStrategy[bytes]:
    def mutate(data: bytes, at: int, insert: bytes, cut: int) -> bytes:
        at %= len(data)
        return data[:at] + insert + data[at + cut :]

    return st.builds(
        mutate,
        st.just(VALID),
        st.integers(min_value=0, max_value=len(VALID)),
        st.binary(max_size=6),
        st.integers(min_value=0, max_value=6),
    )


@given(st.one_of(st.binary(max_size=300), _mutations()))
def test_any_bytes_give_requests_or_a_protocol_error_nothing_else(data: bytes) -> None:
    parser = RequestParser(256, 10)
    parser.feed(data)
    try:
        for _ in range(4):
            head = parser.next_head()
            if head is None:
                break
            assert head.method and head.version in ((1, 0), (1, 1))
            reader = BodyReader(head, 64)
            if not reader.read(parser.buffer):
                break
    except ProtocolError as exc:
        assert 400 <= exc.status < 600 and exc.reason


def test_a_content_length_body_arriving_in_pieces_is_taken_whole_once_there() -> None:
    """Issue 22: the body waits in the parser's buffer until all of it is there, then is
    taken as one bytes object (no growing copy, no second copy at the end); bytes of a
    pipelined next request stay in the buffer."""
    parser = RequestParser(16 * 1024, 1 << 20)
    payload = bytes(range(256)) * 1024
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n" % len(payload))
    head = parser.next_head()
    assert head is not None
    reader = BodyReader(head, 1 << 20)
    for start in range(0, len(payload), 65536):
        assert not reader.done and not reader.read(parser.buffer)
        parser.feed(
            payload[start : start + 65536] + (b"GET" if start + 65536 >= len(payload) else b"")
        )
    assert reader.read(parser.buffer) and reader.done
    assert type(reader.body) is bytes and reader.body == payload
    assert parser.buffer == b"GET"
    assert reader.read(parser.buffer)  # done stays done, nothing more taken
    assert parser.buffer == b"GET"
