"""The client's sans-IO HTTP/1.1 response parser: whole, byte by byte, any chunking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.client._http import ProtocolViolation, ResponseParser

CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n"
)
LENGTH = b"HTTP/1.1 202 Accepted\r\nContent-Length: 4\r\nX-A: 1\r\nx-a: 2\r\n\r\nbodyEXTRA"
CLOSE = b"HTTP/1.1 404 Not Found\r\n\r\nuntil the end"


def parse(pieces: list[bytes], *, eof: bool = True) -> tuple[ResponseParser, bytes, bool]:
    parser = ResponseParser()
    body = b""
    done = False
    head = False
    for piece in [*pieces, b""] if eof else pieces:
        parser.feed(piece)
        head = head or parser.head()
        while head and not done:
            data = parser.body()
            if data is None:
                break
            if data == b"":
                done = True
            body += data
    return parser, body, done


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    return [piece for piece in pieces if piece]  # b"" is EOF to the parser


@pytest.mark.parametrize("bytewise", [False, True])
def test_chunked_body(bytewise: bool) -> None:
    pieces = [bytes([b]) for b in CHUNKED] if bytewise else [CHUNKED]
    parser, body, done = parse(pieces, eof=False)
    assert parser.status == 200 and parser.headers["content-type"] == "text/event-stream"
    assert body == b"hello, world" and done


def test_content_length_stops_at_the_length_and_joins_repeated_headers() -> None:
    parser, body, done = parse([LENGTH], eof=False)
    assert parser.status == 202 and body == b"body" and done
    assert parser.headers["x-a"] == "1, 2"


def test_close_delimited_body_ends_at_eof() -> None:
    parser, body, done = parse([CLOSE])
    assert parser.status == 404 and body == b"until the end" and done


def test_interim_responses_are_skipped() -> None:
    parser, body, done = parse([b"HTTP/1.1 100 Continue\r\n\r\n" + LENGTH], eof=False)
    assert parser.status == 202 and body == b"body" and done


@given(st.sampled_from([CHUNKED, LENGTH, CLOSE]), st.lists(st.integers(0, 400), max_size=12))
def test_any_chunking_gives_the_same_answer(data: bytes, cuts: list[int]) -> None:
    expected = parse([data])
    got = parse(split(data, cuts))
    assert (got[0].status, got[0].headers, got[1], got[2]) == (
        expected[0].status,
        expected[0].headers,
        expected[1],
        expected[2],
    )


@pytest.mark.parametrize(
    "data",
    [
        b"SPDY/3 200 OK\r\n\r\n",
        b"HTTP/1.1 2xx OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\n",
        # Each raised ValueError from int() before (found by the http_response fuzz target):
        "HTTP/1.1 2\u00b20 OK\r\n\r\n".encode("latin-1"),  # a superscript two
        "HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\n\r\n".encode("latin-1"),
        b"HTTP/1.1 2000 OK\r\n\r\n",
        # int() refuses over 4,300 digits with ValueError; no body is that long anyway:
        b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1" + b"0" * 19 + b"\r\n\r\n",
        # int(..., 16) took these as sizes (-5 framed the body wrong, never complete):
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello world\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1_0\r\n",
    ],
)
def test_malformed_responses_are_refused(data: bytes) -> None:
    with pytest.raises(ProtocolViolation):
        parse([data])


def test_any_number_of_interim_responses_is_read_past() -> None:
    """A server may send many 1xx heads before the real one: read in a loop (a recursion
    per head ended in RecursionError at about a thousand of them)."""
    data = (
        b"HTTP/1.1 100 Continue\r\n\r\n" * 5000 + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    )
    parser, body, done = parse([data])
    assert parser.status == 200 and body == b"ok" and done


@given(st.binary(max_size=300))
def test_any_bytes_give_a_response_or_a_violation(data: bytes) -> None:
    try:
        parser, _body, done = parse(
            [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + data]
        )
    except ProtocolViolation:
        return
    assert done and parser.status == 200
