from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FramingError,
    SSEDecoder,
    SSEEvent,
    encode_sse_comment,
    encode_sse_event,
)

from ._drive import Err, Outcome, bytewise, chunkings, run


def decode(stream: bytes, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> list[Outcome]:
    """Decode whole and byte by byte; both must agree."""
    whole = run(SSEDecoder(max_frame_size=max_frame_size), [stream])
    assert run(SSEDecoder(max_frame_size=max_frame_size), bytewise(stream)) == whole
    return whole


def msg(data: str, id: str = "", event: str = "message", retry: int | None = None) -> SSEEvent:
    return SSEEvent(event=event, data=data, id=id, retry=retry)


# -- WHATWG HTML, "Server-sent events", the examples of "Interpreting an event stream" -------


def test_spec_example_stock_ticker() -> None:
    assert decode(b"data: YHOO\ndata: +2\ndata: 10\n\n") == [msg("YHOO\n+2\n10")]


def test_spec_example_ids_and_comment() -> None:
    stream = (
        b": test stream\n\n"
        b"data: first event\nid: 1\n\n"
        b"data:second event\nid\n\n"
        b"data:  third event\n\n"
    )
    assert decode(stream) == [msg("first event", "1"), msg("second event"), msg(" third event")]


def test_spec_example_empty_data() -> None:
    # A "data" line with no colon appends "" + LF; the trailing LF is removed at dispatch, so the
    # first block is an event with empty data and the second one has data "\n". The last block
    # is cut off by EOF and is never dispatched.
    assert decode(b"data\n\ndata\ndata\n\ndata:") == [msg(""), msg("\n")]


def test_spec_example_space_after_colon() -> None:
    assert decode(b"data:test\n\ndata: test\n\n") == [msg("test"), msg("test")]


def test_spec_example_event_types() -> None:
    stream = b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\ndata: 113411\n\n"
    assert decode(stream) == [
        msg("73857293", event="add"),
        msg("2153", event="remove"),
        msg("113411"),  # the event type is reset after each dispatch
    ]


# -- line endings, BOM ----------------------------------------------------------------------


def test_cr_lf_and_crlf_mixed() -> None:
    stream = b"data: a\r\ndata: b\rdata: c\n\rdata: d\r\n\r\n"
    assert decode(stream) == [msg("a\nb\nc"), msg("d")]


def test_cr_at_a_chunk_boundary() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\r")
    assert decoder.next_event() is None
    decoder.feed(b"\n")  # the LF belongs to the CR before it: not a blank line
    assert decoder.next_event() is None
    decoder.feed(b"data: b\r")
    assert decoder.next_event() is None
    decoder.feed(b"\r")  # CR CR: a blank line, dispatched without waiting for more bytes
    assert decoder.next_event() == msg("a\nb")
    decoder.feed(b"\ndata: c\r\n\r")
    assert decoder.next_event() == msg("c")
    decoder.feed(b"\n\n")  # LF after the CR, then a real blank line: nothing to dispatch
    assert decoder.next_event() is None


def test_bom_is_stripped_once() -> None:
    bom = b"\xef\xbb\xbf"
    assert decode(bom + b"data: x\n\n") == [msg("x")]
    # A second BOM is part of the field name "\ufeffdata", an unknown field.
    assert decode(bom + bom + b"data: x\n\ndata: y\n\n") == [msg("y")]
    assert decode(b"data: x\n\n" + bom + b"data: y\n\n") == [msg("x")]


def test_bom_split_across_chunks() -> None:
    decoder = SSEDecoder()
    for piece in (b"\xef", b"\xbb", b"\xbfda", b"ta: x\n\n"):
        decoder.feed(piece)
        event = decoder.next_event()
    assert event == msg("x")


def test_partial_bom_then_eof() -> None:
    assert decode(b"\xef\xbb") == []


# -- fields ---------------------------------------------------------------------------------


def test_id_persists_and_nul_ids_are_ignored() -> None:
    stream = (
        b"id: 7\ndata: a\n\n"
        b"data: b\n\n"
        b"id: 8\0\ndata: c\n\n"  # an id containing NUL is ignored
        b"id: 9\n\n"  # no data: nothing dispatched, but the id is set
        b"data: d\n\n"
        b"id:\ndata: e\n\n"  # an empty id resets it
    )
    assert decode(stream) == [msg("a", "7"), msg("b", "7"), msg("c", "7"), msg("d", "9"), msg("e")]
    decoder = SSEDecoder(last_event_id="41")
    assert run(decoder, [b"data: x\n\nid: 42\n\n"]) == [msg("x", "41")]
    assert decoder.last_event_id == "42"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"1000", 1000),
        (b"0", 0),
        (b"007", 7),
        (b"", None),
        (b"-1", None),
        (b"+5", None),
        (b"10a", None),
        (b"1.5", None),
        (b" 5", None),  # only one space is stripped after the colon
        ("١٢".encode(), None),  # digits, but not ASCII digits
        (b"9" * 40, None),
    ],
)
def test_retry_parsing(value: bytes, expected: int | None) -> None:
    decoder = SSEDecoder()
    out = run(decoder, [b"retry: " + value + b"\ndata: x\n\ndata: y\n\n"])
    assert out == [msg("x", retry=expected), msg("y")]
    assert decoder.retry == expected


def test_retry_without_data_still_takes_effect() -> None:
    decoder = SSEDecoder()
    assert run(decoder, [b"retry: 3000\n\n"]) == []
    assert decoder.retry == 3000


def test_unknown_fields_comments_and_colonless_lines() -> None:
    stream = b": comment\nfoo: bar\ndata\nDATA: no\nevent\nid\nretry\n:data: no\ndata:x\n\n"
    assert decode(stream) == [msg("\nx")]


def test_only_the_first_colon_splits() -> None:
    assert decode(b"data: a: b\nevent:t:u\n\n") == [msg("a: b", event="t:u")]


def test_invalid_utf8_is_replaced() -> None:
    assert decode(b"data: \xff\xe2\x82\n\n") == [msg("\ufffd\ufffd")]
    assert decode("data: é ✓\n\n".encode()) == [msg("é ✓")]


def test_incomplete_event_at_eof_is_discarded() -> None:
    decoder = SSEDecoder()
    assert run(decoder, [b"data: a\n\ndata: b\n"]) == [msg("a")]
    assert decoder.finished
    assert decoder.next_event() is None


def test_finished_and_feed_after_eof() -> None:
    decoder = SSEDecoder()
    assert decoder.max_frame_size == DEFAULT_MAX_FRAME_SIZE
    decoder.feed(b"data: a\n\n")
    decoder.feed(b"")
    assert not decoder.finished
    assert decoder.next_frame() == msg("a")
    assert decoder.next_frame() is None
    assert decoder.finished
    with pytest.raises(RuntimeError):
        decoder.feed(b"data: b\n\n")


# -- size cap -------------------------------------------------------------------------------


def test_oversized_event_is_skipped() -> None:
    big = b"id: 5\ndata: " + b"x" * 100 + b"\ndata: more\nid: 6\n\n"
    stream = b"data: a\n\n" + big + b"data: b\n\n"
    assert decode(stream, max_frame_size=32) == [
        msg("a"),
        Err("event exceeds 32 bytes", False, 9, big[:32]),
        msg("b", "5"),  # lines before the overflow took effect, lines after it did not
    ]


def test_oversized_event_detected_before_its_line_ends() -> None:
    decoder = SSEDecoder(max_frame_size=32)
    decoder.feed(b"data: " + b"x" * 25)  # 31 bytes: with its line ending, exactly 32
    assert decoder.next_event() is None
    decoder.feed(b"x")
    with pytest.raises(FramingError) as info:
        decoder.next_event()
    error = info.value
    assert (error.reason, error.fatal, error.offset) == ("event exceeds 32 bytes", False, 0)
    for _ in range(100):
        decoder.feed(b"y" * 10_000)
        assert decoder.next_event() is None
    assert len(decoder._buf) == 0
    decoder.feed(b"\ndata: dropped\r\n\r\ndata: kept\n\n")
    assert decoder.next_event() == msg("kept")


def test_event_of_exactly_the_cap() -> None:
    assert decode(b"data: " + b"x" * 25 + b"\r\n\r\n", max_frame_size=32) == [msg("x" * 25)]


def test_buffered_tracks_open_events() -> None:
    decoder = SSEDecoder(max_frame_size=16)
    decoder.feed(b": keep-alive\n\ndata: a\n")
    assert decoder.next_event() is None
    assert decoder.buffered == 8  # an open block: the driver's read timeout applies
    decoder.feed(b"\n")
    assert decoder.next_event() == msg("a")
    assert decoder.buffered == 0
    decoder.feed(b"data: " + b"x" * 20)
    with pytest.raises(FramingError):
        decoder.next_event()
    assert decoder.buffered == 26  # the oversized block is still being discarded
    decoder.feed(b"\n\n")
    assert decoder.next_event() is None
    assert decoder.buffered == 0


# -- encoder --------------------------------------------------------------------------------


def test_encode_event() -> None:
    assert encode_sse_event('{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_sse_event("a\r\nb\rc\nd", event="msg", id="e-1", retry=500) == (
        b"event: msg\nid: e-1\nretry: 500\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    )
    assert encode_sse_event("") == b"data: \n\n"
    assert encode_sse_event("é") == "data: é\n\n".encode()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"event": "a\nb"},
        {"event": "a\rb"},
        {"id": "a\nb"},
        {"id": "a\r"},
        {"id": "a\0b"},
        {"retry": -1},
    ],
)
def test_encode_event_rejects(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        encode_sse_event("x", **kwargs)  # type: ignore[arg-type]


def test_encode_comment() -> None:
    assert encode_sse_comment() == b":\n\n"
    assert encode_sse_comment("ping") == b": ping\n\n"
    assert encode_sse_comment("a\r\nb") == b": a\n: b\n\n"
    assert decode(encode_sse_comment("x\ny") + encode_sse_event("z")) == [msg("z")]


# -- properties -----------------------------------------------------------------------------

_no_break = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=10
)
_events = st.tuples(
    st.text(max_size=40),
    st.none() | _no_break,
    st.none() | _no_break.filter(lambda s: "\0" not in s),
    st.none() | st.integers(0, 10**12),
)


@given(events=st.lists(_events, max_size=10), data=st.data())
def test_encode_then_decode_round_trips(
    events: list[tuple[str, str | None, str | None, int | None]], data: st.DataObject
) -> None:
    stream = b"".join(
        encode_sse_event(d, event=e, id=i, retry=r) for d, e, i, r in events
    ) + encode_sse_comment("bye")
    expected = []
    last_id = ""
    for d, e, i, r in events:
        last_id = last_id if i is None else i
        expected.append(SSEEvent(e or "message", re.sub(r"\r\n|\r", "\n", d), last_id, r))
    decoder = SSEDecoder()
    chunks = data.draw(chunkings(stream))
    assert run(decoder, chunks, lazy=data.draw(st.lists(st.booleans()))) == expected
    assert decoder.finished


_pieces = st.sampled_from(
    [b"\n", b"\r", b"\r\n", b"data", b": x", b":", b"id: 1", b"event", b"retry: 9", b"\0",
     b"\xef\xbb\xbf", b"x" * 11]
)  # fmt: skip
_streams = st.lists(_pieces, max_size=40).map(b"".join)


@given(stream=_streams, data=st.data(), max_frame_size=st.integers(1, 24))
def test_any_chunking_gives_the_same_outcomes(
    stream: bytes, data: st.DataObject, max_frame_size: int
) -> None:
    whole = run(SSEDecoder(max_frame_size=max_frame_size), [stream])
    chunks = data.draw(chunkings(stream))
    lazy = data.draw(st.lists(st.booleans()))
    assert run(SSEDecoder(max_frame_size=max_frame_size), chunks, lazy=lazy) == whole
    assert run(SSEDecoder(max_frame_size=max_frame_size), bytewise(stream)) == whole


@given(chunks=st.lists(st.binary(max_size=32), max_size=20), max_frame_size=st.integers(1, 64))
def test_arbitrary_bytes_give_events_or_framing_errors(
    chunks: list[bytes], max_frame_size: int
) -> None:
    decoder = SSEDecoder(max_frame_size=max_frame_size)
    out = run(decoder, chunks)  # run() bounds every loop
    assert all(
        isinstance(item, SSEEvent) or (isinstance(item, Err) and not item.fatal) for item in out
    )
    assert decoder.finished
