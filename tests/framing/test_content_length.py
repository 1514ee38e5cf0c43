from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_HEADER_SIZE,
    ContentLengthFramer,
    FramingError,
)

from ._drive import Err, bytewise, chunkings, run


def frame(payload: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(payload) + payload


PAYLOADS = [b'{"a":1}', b'{"b":"\r\n\r\n"}', b"", b'{"c":"\xc3\xa9"}']
STREAM = b"".join(frame(p) for p in PAYLOADS)


def test_defaults() -> None:
    framer = ContentLengthFramer()
    assert framer.max_frame_size == DEFAULT_MAX_FRAME_SIZE
    assert framer.max_header_size == DEFAULT_MAX_HEADER_SIZE == 8 * 1024


def test_whole_input() -> None:
    framer = ContentLengthFramer()
    assert run(framer, [STREAM]) == PAYLOADS
    assert framer.finished


def test_byte_by_byte() -> None:
    framer = ContentLengthFramer()
    assert run(framer, bytewise(STREAM)) == PAYLOADS
    assert framer.finished


def test_trailing_partial_frame_waits_for_more() -> None:
    framer = ContentLengthFramer()
    framer.feed(frame(b"[1]") + b"Content-Length: 3\r\n\r\n[")
    assert framer.next_frame() == b"[1]"
    assert framer.next_frame() is None
    framer.feed(b"2")
    assert framer.next_frame() is None
    framer.feed(b"]Content-Le")
    assert framer.next_frame() == b"[2]"
    assert framer.next_frame() is None
    assert not framer.finished


def test_many_frames_in_one_feed() -> None:
    payloads = [b'{"id":%d}' % i for i in range(3000)]
    assert run(ContentLengthFramer(), [b"".join(frame(p) for p in payloads)]) == payloads


def test_liberal_headers() -> None:
    stream = (
        b"content-type: application/vscode-jsonrpc; charset=utf-8\n"
        b"CONTENT-LENGTH:5\n\n"
        b"hello"
        b"X-Other: a: b\r\n  Content-Length \t:  002 \r\nContent-Length: 2\r\n\n"
        b"hi"
    )
    assert run(ContentLengthFramer(), [stream]) == [b"hello", b"hi"]
    assert run(ContentLengthFramer(), bytewise(stream)) == [b"hello", b"hi"]


def test_length_counts_encoded_bytes() -> None:
    payload = '{"s":"héllo ✓"}'.encode()
    assert run(ContentLengthFramer(), [frame(payload)]) == [payload]


def test_zero_length_frame() -> None:
    assert run(ContentLengthFramer(), [b"Content-Length: 0\r\n\r\n" * 3]) == [b"", b"", b""]


FIRST = frame(b"{}")


@pytest.mark.parametrize(
    ("headers", "reason", "bad_line"),
    [
        (b"Content-Type: x\r\n\r\n", "missing Content-Length header", b"Content-Type: x\r\n\r\n"),
        (b"\r\n", "missing Content-Length header", b"\r\n"),
        (b"Content-Length: -5\r\n\r\n", "invalid Content-Length: '-5'", b"Content-Length: -5\r\n"),
        (b"Content-Length: +5\r\n\r\n", "invalid Content-Length: '+5'", b"Content-Length: +5\r\n"),
        (
            b"Content-Length: 5 5\r\n\r\n",
            "invalid Content-Length: '5 5'",
            b"Content-Length: 5 5\r\n",
        ),
        (b"Content-Length: 1_0\n\n", "invalid Content-Length: '1_0'", b"Content-Length: 1_0\n"),
        (b"Content-Length: 0x10\n\n", "invalid Content-Length: '0x10'", b"Content-Length: 0x10\n"),
        (b"Content-Length: abc\n\n", "invalid Content-Length: 'abc'", b"Content-Length: abc\n"),
        (b"Content-Length:\r\n\r\n", "invalid Content-Length: ''", b"Content-Length:\r\n"),
        (  # FULLWIDTH DIGIT FIVE: a digit to str.isdigit(), not an ASCII digit
            b"Content-Length: \xef\xbc\x95\r\n\r\n",
            "invalid Content-Length: '\\xef\\xbc\\x95'",
            b"Content-Length: \xef\xbc\x95\r\n",
        ),
        (
            b"Content-Length: " + b"9" * 30 + b"\r\n\r\n",
            "Content-Length out of range: '" + "9" * 30 + "'",
            b"Content-Length: " + b"9" * 30 + b"\r\n",
        ),
        (
            b"Content-Length: 5\r\ncontent-length: 6\r\n\r\n",
            "conflicting Content-Length headers: '5' and '6'",
            b"Content-Length: 5\r\ncontent-length: 6\r\n",
        ),
        (
            b"Content-Type: x\r\nContent-Length 5\r\n\r\n",
            "header line without a colon: 'Content-Length 5'",
            b"Content-Type: x\r\nContent-Length 5\r\n",
        ),
    ],
)
def test_fatal_header_errors(headers: bytes, reason: str, bad_line: bytes) -> None:
    stream = FIRST + headers + b"hello" + frame(b"[]")
    expected = [b"{}", Err(reason, True, len(FIRST), bad_line)]
    for chunks in ([stream], bytewise(stream)):
        framer = ContentLengthFramer()
        assert run(framer, chunks) == expected
        assert not framer.finished


def test_duplicate_equal_lengths_are_fine() -> None:
    stream = b"Content-Length: 2\r\nContent-Length: 02\r\n\r\n{}"
    assert run(ContentLengthFramer(), [stream]) == [b"{}"]


def test_fatal_error_is_sticky() -> None:
    framer = ContentLengthFramer()
    framer.feed(b"Content-Length: nope\r\n\r\n")
    with pytest.raises(FramingError) as info:
        framer.next_frame()
    error = info.value
    assert error.fatal
    assert str(error) == error.reason == "invalid Content-Length: 'nope'"
    framer.feed(frame(b"{}"))  # ignored: the stream cannot be resynchronised
    for _ in range(3):
        with pytest.raises(FramingError) as again:
            framer.next_frame()
        assert again.value is error
    framer.feed(b"")
    with pytest.raises(FramingError) as again:
        framer.next_frame()
    assert again.value is error
    assert not framer.finished


def test_header_block_cap_is_fatal() -> None:
    stream = FIRST + b"X-Pad: " + b"p" * 100 + b"\r\nContent-Length: 2\r\n\r\n{}"
    expected = [b"{}", Err("header block exceeds 64 bytes", True, len(FIRST), stream[23:87])]
    for chunks in ([stream], bytewise(stream)):
        assert run(ContentLengthFramer(max_header_size=64), chunks) == expected


def test_header_block_cap_detected_before_the_block_ends() -> None:
    framer = ContentLengthFramer(max_header_size=64)
    framer.feed(b"X-Pad: " + b"p" * 56)  # 63 bytes: one more could still be "\n"
    assert framer.next_frame() is None
    framer.feed(b"p")
    with pytest.raises(FramingError, match="header block exceeds 64 bytes") as info:
        framer.next_frame()
    assert info.value.fatal
    assert info.value.offset == 0


def test_header_block_of_exactly_the_cap() -> None:
    block = b"Content-Length: 2\r\nX-Pad: " + b"p" * 34 + b"\r\n\r\n"
    assert len(block) == 64
    assert run(ContentLengthFramer(max_header_size=64), bytewise(block + b"{}")) == [b"{}"]
    longer = block.replace(b"pp", b"ppp", 1)
    assert run(ContentLengthFramer(max_header_size=64), [longer + b"{}"]) == [
        Err("header block exceeds 64 bytes", True, 0, longer[:64])
    ]


def test_oversized_body_is_skipped_without_buffering() -> None:
    framer = ContentLengthFramer(max_frame_size=1024)
    framer.feed(frame(b"[0]") + b"Content-Length: 10000000\r\n\r\n" + b"x" * 100)
    assert framer.next_frame() == b"[0]"
    with pytest.raises(FramingError) as info:
        framer.next_frame()
    error = info.value
    assert not error.fatal
    assert error.offset == len(frame(b"[0]"))
    assert error.reason == "frame exceeds 1024 bytes (Content-Length: 10000000)"
    assert error.excerpt == b"Content-Length: 10000000\r\n\r\n"
    assert framer.next_frame() is None
    for _ in range(99):
        framer.feed(b"x" * 100_000)
        assert framer.next_frame() is None
        assert len(framer._buf) == 0
    framer.feed(b"x" * 99_900 + frame(b"[1]"))  # the last body byte, then the next frame
    assert framer.next_frame() == b"[1]"
    assert framer.next_frame() is None


def test_oversized_body_then_recovery_any_chunking() -> None:
    stream = frame(b"[0]") + frame(b"y" * 40) + frame(b"[1]")
    expected = [
        b"[0]",
        Err("frame exceeds 8 bytes (Content-Length: 40)", False, 24, b"Content-Length: 40\r\n\r\n"),
        b"[1]",
    ]
    for chunks in ([stream], bytewise(stream)):
        framer = ContentLengthFramer(max_frame_size=8)
        assert run(framer, chunks) == expected
        assert framer.finished


def test_eof_inside_headers() -> None:
    stream = FIRST + b"Content-Length: 5\r\n"
    reason = "EOF inside a frame (19 bytes of an unterminated header block)"
    expected = [b"{}", Err(reason, True, len(FIRST), b"Content-Length: 5\r\n")]
    for chunks in ([stream], bytewise(stream)):
        framer = ContentLengthFramer()
        assert run(framer, chunks) == expected
        assert not framer.finished


def test_eof_inside_body() -> None:
    stream = FIRST + b"Content-Length: 5\r\n\r\nabc"
    expected = [
        b"{}",
        Err("EOF inside a frame (body has 3 of 5 bytes)", True, len(FIRST), stream[len(FIRST) :]),
    ]
    for chunks in ([stream], bytewise(stream)):
        assert run(ContentLengthFramer(), chunks) == expected


def test_eof_inside_skipped_body() -> None:
    stream = b"Content-Length: 50\r\n\r\nabc"
    assert run(ContentLengthFramer(max_frame_size=8), [stream]) == [
        Err("frame exceeds 8 bytes (Content-Length: 50)", False, 0, b"Content-Length: 50\r\n\r\n"),
        Err(
            "EOF inside a frame (47 bytes of an oversized body missing)",
            True,
            0,
            b"Content-Length: 50\r\n\r\n",
        ),
    ]


def test_clean_eof() -> None:
    framer = ContentLengthFramer()
    assert run(framer, []) == []
    assert framer.finished
    framer = ContentLengthFramer()
    framer.feed(FIRST)
    framer.feed(b"")
    assert not framer.finished
    assert framer.next_frame() == b"{}"
    assert framer.next_frame() is None
    assert framer.finished


def test_feed_after_eof_raises() -> None:
    framer = ContentLengthFramer()
    framer.feed(b"")
    with pytest.raises(RuntimeError):
        framer.feed(FIRST)


def test_encode() -> None:
    framer = ContentLengthFramer()
    assert framer.encode(b'{"a":1}') == b'Content-Length: 7\r\n\r\n{"a":1}'
    assert framer.encode(b"") == b"Content-Length: 0\r\n\r\n"
    assert framer.encode("é".encode()) == b"Content-Length: 2\r\n\r\n\xc3\xa9"
    for payload in (b'{"a":1}', b"", "é".encode()):
        head, body, tail = framer.encode_parts(payload)
        assert body is payload
        assert head + body + tail == framer.encode(payload)
    parts = [b'{"a":', bytearray("é".encode()), b"}"]
    head, tail = framer.encode_around(parts)
    assert head + b"".join(parts) + tail == framer.encode(b"".join(parts))


# -- properties -----------------------------------------------------------------------------

_pieces = st.one_of(
    st.binary(max_size=20).map(frame),
    st.sampled_from(
        [
            b"Content-Type: t\r\n",
            b"content-length: 3\n",
            b"Content-Length: 30\r\n\r\n",
            b"\r\n",
            b"\n",
            b"Content-Length: -1\r\n",
            b"junk",
            b"x" * 25,
        ]
    ),
)
_streams = st.lists(_pieces, max_size=12).map(b"".join)


@given(
    stream=_streams,
    data=st.data(),
    max_frame_size=st.integers(0, 24),
    max_header_size=st.integers(2, 48),
)
def test_any_chunking_gives_the_same_outcomes(
    stream: bytes, data: st.DataObject, max_frame_size: int, max_header_size: int
) -> None:
    def make() -> ContentLengthFramer:
        return ContentLengthFramer(max_frame_size=max_frame_size, max_header_size=max_header_size)

    whole = run(make(), [stream])
    assert (
        run(make(), data.draw(chunkings(stream)), lazy=data.draw(st.lists(st.booleans()))) == whole
    )
    assert run(make(), bytewise(stream)) == whole


@given(payloads=st.lists(st.binary(max_size=100), max_size=20), data=st.data())
def test_encode_then_frame_round_trips(payloads: list[bytes], data: st.DataObject) -> None:
    framer = ContentLengthFramer()
    stream = b"".join(framer.encode(p) for p in payloads)
    assert (
        run(framer, data.draw(chunkings(stream)), lazy=data.draw(st.lists(st.booleans())))
        == payloads
    )
    assert framer.finished


@given(chunks=st.lists(st.binary(max_size=32), max_size=20), max_frame_size=st.integers(0, 64))
def test_arbitrary_bytes_give_frames_or_framing_errors(
    chunks: list[bytes], max_frame_size: int
) -> None:
    framer = ContentLengthFramer(max_frame_size=max_frame_size, max_header_size=32)
    out = run(framer, chunks)  # run() bounds every loop
    assert all(isinstance(item, bytes | Err) for item in out)
    assert all(len(item) <= max_frame_size for item in out if isinstance(item, bytes))
    assert framer.finished or (out and isinstance(out[-1], Err) and out[-1].fatal)


def test_buffered_tracks_partial_frames() -> None:
    framer = ContentLengthFramer(max_frame_size=4)
    assert framer.buffered == 0
    framer.feed(b"Content-Length: 2\r\n\r\n{")
    assert framer.next_frame() is None
    assert framer.buffered == 22
    framer.feed(b"}Content-Length: 9\r\n\r\nxx")
    assert framer.next_frame() == b"{}"
    assert framer.buffered == 23
    with pytest.raises(FramingError):
        framer.next_frame()
    assert framer.next_frame() is None
    assert framer.buffered == 23  # still inside the oversized frame being skipped
    framer.feed(b"x" * 7)
    assert framer.next_frame() is None
    assert framer.buffered == 0


def test_several_feeds_between_drains() -> None:
    framer = ContentLengthFramer(max_frame_size=4)
    framer.feed(b"Content-Length: 6\r\n\r\n")
    with pytest.raises(FramingError, match="frame exceeds 4 bytes"):
        framer.next_frame()
    framer.feed(b"abc")  # part of the body being skipped ...
    framer.feed(b"def" + frame(b"[1]")[:5])  # ... its end, then the next frame, in pieces
    framer.feed(frame(b"[1]")[5:])
    assert framer.next_frame() == b"[1]"
    assert framer.next_frame() is None
