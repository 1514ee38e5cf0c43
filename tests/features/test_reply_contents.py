"""reply_contents: a resources/read reply's contents are the same bytes on the wire as
to_contents gives (msgspec's base64 against the standard library's), and long values are
encoded in pieces with the event loop free between them."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from runtime.features import TextResourceContents, _contents, reply_contents, to_contents
from runtime.features._contents import BLOB_PIECE, ENCODE_PIECE, ONE_GO_BLOB
from runtime.protocol import Pieces, encode_result_pieces


def _wire(contents: list[Any]) -> bytes:
    """``contents`` as the reply's encode writes them (a long text's pieces spliced in)."""
    reply = encode_result_pieces(1, contents)
    return reply.join() if isinstance(reply, Pieces) else reply


@given(st.binary(max_size=300), st.sampled_from([None, "image/png"]))
def test_blob_bytes_on_the_wire_match_to_contents(data: bytes, mime: str | None) -> None:
    for value in (data, bytearray(data), memoryview(data)):
        got = trio.run(reply_contents, "bin://x", value, mime)
        assert _wire(got) == _wire(to_contents("bin://x", value, mime))


async def test_other_values_are_to_contents() -> None:
    got = await reply_contents("text://x", "hello", None)
    assert got == [TextResourceContents(uri="text://x", text="hello", mime_type="text/plain")]
    assert await reply_contents("j://x", {"a": 1}, None) == to_contents("j://x", {"a": 1}, None)


async def _in_pieces(value: str | bytes) -> tuple[list[Any], int]:
    """reply_contents(value), and how often another task ran meanwhile."""
    ran = 0

    async def other() -> None:
        nonlocal ran
        while True:
            ran += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        while ran == 0:  # the other task has started (the scheduler may run us first)
            await trio.lowlevel.checkpoint()
        before = ran
        got = await reply_contents("big://x", value, None)
        during = ran - before  # (read before the nursery's exit lets the other task run)
        nursery.cancel_scope.cancel()
    return got, during


async def test_long_text_is_encoded_in_pieces_with_the_same_bytes() -> None:
    # Escapes and multi-byte characters across the piece boundaries.
    value = 'ab"c\\\u00e9\n\x00\u2028' * (3 * ENCODE_PIECE // 9 + 5)
    got, ran = await _in_pieces(value)
    assert _wire(got) == _wire(to_contents("big://x", value, None))
    assert ran >= 3  # the loop ran other tasks between the pieces
    # Written piece by piece into one buffer, handed on as it is: never joined or copied.
    text = got[0].text
    assert isinstance(text, Pieces) and len(text.parts) == 1
    assert isinstance(text.parts[0], bytearray)


async def test_long_blob_is_encoded_in_pieces_with_the_same_bytes() -> None:
    value = bytes(range(256)) * (ONE_GO_BLOB // 256) + b"\x01\x02"  # not a multiple of 3
    got, ran = await _in_pieces(value)
    assert _wire(got) == _wire(to_contents("big://x", value, None))
    assert ran >= 3  # the loop ran other tasks between its 6 pieces (the last one 2 bytes)


def _steps(monkeypatch: pytest.MonkeyPatch, value: bytes) -> tuple[list[object], list[Any]]:
    """reply_contents(value) and, in order, the sizes of the pieces msgspec encoded as base64
    ahead of the reply and the checkpoints (``"checkpoint"``) between them."""
    log: list[object] = []
    encode_into, checkpoint = _contents._encode_into, trio.lowlevel.checkpoint

    def logged_encode_into(piece: Any, buffer: bytearray, offset: int) -> None:
        log.append(len(piece))
        encode_into(piece, buffer, offset)

    async def logged_checkpoint() -> None:
        log.append("checkpoint")
        await checkpoint()

    monkeypatch.setattr(_contents, "_encode_into", logged_encode_into)
    monkeypatch.setattr(trio.lowlevel, "checkpoint", logged_checkpoint)
    got = trio.run(reply_contents, "big://x", value, None)
    monkeypatch.undo()
    assert _wire(got) == _wire(to_contents("big://x", value, None))
    return log, got


def _blob(size: int) -> bytes:
    return (bytes(range(256)) * (size // 256 + 1))[:size]


def test_blob_over_one_go_is_whole_base64_quanta_with_a_checkpoint_after_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Observed, not timed: each step of the loop encodes at most BLOB_PIECE bytes, 1 MiB of
    # base64 (issue 22: no step over 20 ms), and the pieces land in one buffer.
    assert BLOB_PIECE % 3 == 0 and BLOB_PIECE // 3 * 4 == 1 << 20
    for size, pieces in (
        (ONE_GO_BLOB + 1, [BLOB_PIECE] * 5 + [ONE_GO_BLOB + 1 - 5 * BLOB_PIECE]),
        (3 * ONE_GO_BLOB, [BLOB_PIECE] * 16),  # (12 MiB: 16 whole pieces)
    ):
        log, got = _steps(monkeypatch, _blob(size))
        assert log == [x for n in pieces for x in (n, "checkpoint")]
        assert isinstance(got[0].blob, msgspec.Raw)


def test_blob_up_to_one_go_is_base64_in_the_reply_encode_in_a_step_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The 4 MiB benchmark blob: msgspec writes its base64 straight into the reply (one buffer
    # for both: a second one made RSS 3.6x the payload), after a checkpoint, so not in the
    # step that ran the resource function. A blob of a piece or less: no checkpoint at all.
    for size, log_want in ((ONE_GO_BLOB, ["checkpoint"]), (BLOB_PIECE + 1, ["checkpoint"])):
        value = _blob(size)
        log, got = _steps(monkeypatch, value)
        assert log == log_want
        assert got[0].blob is value
    value = _blob(BLOB_PIECE)
    log, got = _steps(monkeypatch, value)
    assert log == []
    assert got[0].blob is value


def test_long_blob_of_a_wide_memoryview_is_the_base64_of_its_bytes() -> None:
    value = memoryview(_blob(ONE_GO_BLOB + 8)).cast("I")
    got = trio.run(reply_contents, "big://x", value, None)
    assert _wire(got) == _wire(to_contents("big://x", value.cast("B"), None))
