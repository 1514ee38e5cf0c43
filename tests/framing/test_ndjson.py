from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.framing import DEFAULT_MAX_FRAME_SIZE, FramingError, NdjsonFramer

from ._drive import Err, bytewise, chunkings, run

STREAM = b'{"a":1}\n{"b":2}\r\n{"c":[3]}\n'
FRAMES = [b'{"a":1}', b'{"b":2}', b'{"c":[3]}']


def test_defaults() -> None:
    assert NdjsonFramer().max_frame_size == DEFAULT_MAX_FRAME_SIZE == 4 * 1024 * 1024
    with pytest.raises(ValueError):
        NdjsonFramer(max_frame_size=0)


def test_whole_input() -> None:
    framer = NdjsonFramer()
    assert run(framer, [STREAM]) == FRAMES
    assert framer.finished


def test_byte_by_byte() -> None:
    framer = NdjsonFramer()
    assert run(framer, bytewise(STREAM)) == FRAMES
    assert framer.finished


def test_many_frames_in_one_feed() -> None:
    frames = [b'{"id":%d}' % i for i in range(5000)]
    framer = NdjsonFramer()
    framer.feed(b"\n".join(frames) + b"\n")
    assert [framer.next_frame() for _ in frames] == frames
    assert framer.next_frame() is None
    assert not framer.finished


def test_trailing_partial_frame_waits_for_more() -> None:
    framer = NdjsonFramer()
    framer.feed(b'{"a":1}\n{"b"')
    assert framer.next_frame() == b'{"a":1}'
    assert framer.next_frame() is None
    assert framer.next_frame() is None
    framer.feed(b":2}")
    assert framer.next_frame() is None
    framer.feed(b"\n{")
    assert framer.next_frame() == b'{"b":2}'
    assert framer.next_frame() is None
    assert not framer.finished


def test_one_trailing_cr_stripped() -> None:
    assert run(NdjsonFramer(), [b"{}\r\r\n[]\r\n"]) == [b"{}\r", b"[]"]


def test_blank_lines_are_not_frames() -> None:
    stream = b"\n \n\t\r\n\r\n   \t \n{}\n\n"
    assert run(NdjsonFramer(), [stream]) == [b"{}"]
    assert run(NdjsonFramer(), bytewise(stream)) == [b"{}"]


def test_other_control_bytes_are_kept() -> None:
    # Only JSON whitespace makes a blank line; anything else goes to the JSON decoder, which
    # can say precisely what is wrong with it.
    assert run(NdjsonFramer(), [b"\x0b\n \x00 \n"]) == [b"\x0b", b" \x00 "]


def test_frame_of_exactly_max_size() -> None:
    framer = NdjsonFramer(max_frame_size=8)
    assert run(framer, [b"x" * 8 + b"\r\n" + b"y" * 8 + b"\n"]) == [b"x" * 8, b"y" * 8]


def test_too_long_line_is_skipped_and_stream_recovers() -> None:
    stream = b'{"a":1}\n' + b"x" * 300 + b'\n{"b":2}\n'
    error = Err("frame exceeds 8 bytes", False, 8, b"x" * 8)
    for chunks in ([stream], bytewise(stream)):
        framer = NdjsonFramer(max_frame_size=8)
        assert run(framer, chunks) == [b'{"a":1}', error, b'{"b":2}']
        assert framer.finished


def test_too_long_excerpt_is_capped_at_200_bytes() -> None:
    framer = NdjsonFramer(max_frame_size=1000)
    framer.feed(b"z" * 5000)
    with pytest.raises(FramingError) as info:
        framer.next_frame()
    assert info.value.excerpt == b"z" * 200
    assert info.value.offset == 0


def test_too_long_detected_before_the_newline() -> None:
    framer = NdjsonFramer(max_frame_size=8)
    framer.feed(b"{}\n" + b"x" * 8)
    assert framer.next_frame() == b"{}"
    assert framer.next_frame() is None
    framer.feed(b"\r")  # 9 bytes ending in CR: a following LF would make it exactly 8
    assert framer.next_frame() is None
    framer.feed(b"\r")  # 10 bytes: too long, whatever comes next
    with pytest.raises(FramingError) as info:
        framer.next_frame()
    error = info.value
    assert (error.fatal, error.offset, error.excerpt) == (False, 3, b"x" * 8)
    assert "frame exceeds 8 bytes" in str(error)
    # Raised once; the rest of the line is discarded as it arrives, never buffered.
    for _ in range(100):
        framer.feed(b"y" * 10_000)
        assert framer.next_frame() is None
    assert len(framer._buf) == 0
    framer.feed(b"yyy\n[1]\n")
    assert framer.next_frame() == b"[1]"
    assert framer.next_frame() is None


def test_max_plus_one_bytes_without_cr_is_too_long() -> None:
    framer = NdjsonFramer(max_frame_size=4)
    framer.feed(b"abcde")
    with pytest.raises(FramingError, match="frame exceeds 4 bytes"):
        framer.next_frame()


def test_too_long_line_at_eof() -> None:
    framer = NdjsonFramer(max_frame_size=4)
    assert run(framer, [b"[]\nabcdefgh"]) == [
        b"[]",
        Err("frame exceeds 4 bytes", False, 3, b"abcd"),
    ]
    assert framer.finished
    assert framer.next_frame() is None


def test_eof_inside_a_frame() -> None:
    stream = b'{"a":1}\n{"b"'
    expected = [
        b'{"a":1}',
        Err("EOF inside a frame (4 bytes without a terminating newline)", False, 8, b'{"b"'),
    ]
    for chunks in ([stream], bytewise(stream)):
        framer = NdjsonFramer()
        assert run(framer, chunks) == expected
        assert framer.finished
        assert framer.next_frame() is None


def test_eof_after_blank_tail_is_clean() -> None:
    framer = NdjsonFramer()
    assert run(framer, [b"{}\n \r"]) == [b"{}"]
    assert framer.finished


def test_finished_only_after_eof_and_every_frame() -> None:
    framer = NdjsonFramer()
    assert not framer.finished
    framer.feed(b"{}\n[]\n")
    framer.feed(b"")
    assert not framer.finished
    assert framer.next_frame() == b"{}"
    assert not framer.finished
    assert framer.next_frame() == b"[]"
    assert framer.next_frame() is None
    assert framer.finished
    assert framer.next_frame() is None


def test_empty_stream() -> None:
    framer = NdjsonFramer()
    assert run(framer, []) == []
    assert framer.finished


def test_feed_after_eof_raises() -> None:
    framer = NdjsonFramer()
    framer.feed(b"")
    with pytest.raises(RuntimeError):
        framer.feed(b"{}\n")
    with pytest.raises(RuntimeError):
        framer.feed(b"")


def test_offsets_count_every_byte_ever_fed() -> None:
    framer = NdjsonFramer(max_frame_size=4)
    prefix = b"[1]\n" * 1000 + b"\n  \n"
    out = run(framer, [prefix[:1234], prefix[1234:], b"toolong\n", b"[]"])
    assert out[-2:] == [
        Err("frame exceeds 4 bytes", False, len(prefix), b"tool"),
        Err(
            "EOF inside a frame (2 bytes without a terminating newline)",
            False,
            len(prefix) + 8,
            b"[]",
        ),
    ]


def test_buffered_tracks_partial_frames() -> None:
    framer = NdjsonFramer(max_frame_size=4)
    assert framer.buffered == 0
    framer.feed(b"[]\n[1")
    assert framer.buffered == 5
    assert framer.next_frame() == b"[]"
    assert framer.buffered == 2  # the partial frame: the driver's read timeout applies
    assert framer.next_frame() is None
    framer.feed(b"]\n \n")
    assert framer.next_frame() == b"[1]"
    assert framer.next_frame() is None
    assert framer.buffered == 0  # blank lines are not pending frames
    framer.feed(b"toolong")
    with pytest.raises(FramingError):
        framer.next_frame()
    assert framer.buffered == 7  # the over-long line is still being discarded
    framer.feed(b"!")
    assert framer.buffered == 8
    framer.feed(b"\n")
    assert framer.next_frame() is None
    assert framer.buffered == 0


def test_encode() -> None:
    framer = NdjsonFramer()
    assert framer.encode(b'{"jsonrpc":"2.0"}') == b'{"jsonrpc":"2.0"}\n'
    for bad in (b'{"a":\n1}', b"{}\n", b"{}\r", b"", b"  ", b"\t\r"):
        with pytest.raises(ValueError):
            framer.encode(bad)
        with pytest.raises(ValueError):
            framer.encode_parts(bad)


def test_encode_parts_frame_the_payload_uncopied() -> None:
    framer = NdjsonFramer()
    payload = b'{"text":"' + b"x" * (1 << 20) + b'"}'
    head, body, tail = framer.encode_parts(payload)
    assert body is payload  # written as it is: no copy of a big reply
    assert head + body + tail == framer.encode(payload)


def test_encode_around_frames_parts_as_encode_frames_their_join() -> None:
    framer = NdjsonFramer()
    parts = [b'{"text":"', bytearray(b"x" * 1000), b'"}']
    head, tail = framer.encode_around(parts)
    assert head + b"".join(parts) + tail == framer.encode(b"".join(parts))
    # The same refusals as encode, for the payload the parts make, whichever part holds it.
    for bad in (
        [b'{"a":', bytearray(b"\n1}")],
        [b"{}", b"\r"],
        [b"{}\r", b""],
        [b"", b""],
        [],
        [b"  ", bytearray(b"\t")],
    ):
        with pytest.raises(ValueError):
            framer.encode_around(bad)
    # A blank part beside a filled one is no blank payload.
    assert framer.encode_around([b" ", b"{}"]) == (b"", b"\n")


# -- properties -----------------------------------------------------------------------------

# Streams built from pieces that exercise every branch: frames, blank lines, CR, long lines.
_pieces = st.sampled_from(
    [b"\n", b"\r", b"\r\n", b" ", b"\t", b"{}", b'{"k":"v"}', b"x" * 7, b"y" * 13, b"\x00"]
)
_streams = st.lists(_pieces, max_size=40).map(b"".join)


@given(stream=_streams, data=st.data(), max_frame_size=st.integers(1, 16))
def test_any_chunking_gives_the_same_outcomes(
    stream: bytes, data: st.DataObject, max_frame_size: int
) -> None:
    whole = run(NdjsonFramer(max_frame_size=max_frame_size), [stream])
    chunks = data.draw(chunkings(stream))
    lazy = data.draw(st.lists(st.booleans()))
    assert run(NdjsonFramer(max_frame_size=max_frame_size), chunks, lazy=lazy) == whole
    assert run(NdjsonFramer(max_frame_size=max_frame_size), bytewise(stream)) == whole


_payloads = st.binary(max_size=64).filter(
    lambda p: b"\n" not in p and not p.endswith(b"\r") and p.strip(b" \t\r") != b""
)


@given(payloads=st.lists(_payloads, max_size=20), data=st.data())
def test_encode_then_frame_round_trips(payloads: list[bytes], data: st.DataObject) -> None:
    framer = NdjsonFramer()
    stream = b"".join(framer.encode(p) for p in payloads)
    chunks = data.draw(chunkings(stream))
    assert run(framer, chunks, lazy=data.draw(st.lists(st.booleans()))) == payloads
    assert framer.finished


@given(chunks=st.lists(st.binary(max_size=32), max_size=20), max_frame_size=st.integers(1, 64))
def test_arbitrary_bytes_give_frames_or_framing_errors(
    chunks: list[bytes], max_frame_size: int
) -> None:
    framer = NdjsonFramer(max_frame_size=max_frame_size)
    out = run(framer, [c for c in chunks if c])  # run() bounds every loop
    assert all(isinstance(item, bytes | Err) for item in out)
    assert all(len(item) <= max_frame_size for item in out if isinstance(item, bytes))
    assert framer.finished


@given(
    stream=_streams,
    data=st.data(),
    max_frame_size=st.integers(1, 16),
    hold_over=st.integers(1, 12),
)
def test_lines_held_as_chunks_give_the_same_outcomes(
    stream: bytes, data: st.DataObject, max_frame_size: int, hold_over: int
) -> None:
    # A long line's later chunks are held as they came and joined once (issue 22): with the
    # threshold lowered, every branch of that path meets short lines, CR, blanks, limits, EOF.
    whole = run(NdjsonFramer(max_frame_size=max_frame_size), [stream])
    for chunks in (data.draw(chunkings(stream)), bytewise(stream)):
        framer = NdjsonFramer(max_frame_size=max_frame_size)
        framer._hold_over = hold_over
        assert run(framer, chunks, lazy=data.draw(st.lists(st.booleans()))) == whole


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r", b""])
def test_a_long_line_in_pipe_reads_is_held_then_joined_once(ending: bytes) -> None:
    line = bytes(range(33, 127)) * 12_000  # 1.1 MB
    stream = line + ending + b'{"next":1}\n'
    framer = NdjsonFramer()
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    if ending == b"\r":  # the CR ends one read, its LF opens the next
        chunks = [*(line[i : i + 65536] for i in range(0, len(line), 65536)), b"\r"]
        chunks += [b'\n{"next":1}\n']
    for chunk in chunks[:-1]:
        framer.feed(chunk)
        assert framer.next_frame() is None
    assert len(framer._held) == len(chunks) - 2  # all but the first read, held as read
    assert framer.buffered == sum(map(len, chunks[:-1]))
    framer.feed(chunks[-1])
    if ending == b"":
        assert framer.next_frame() == line + b'{"next":1}'
    else:
        assert framer.next_frame() == line
        assert framer.next_frame() == b'{"next":1}'
    assert framer.next_frame() is None and framer.buffered == 0 and not framer._held
