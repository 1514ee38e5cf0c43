"""reply_contents: a resources/read reply's contents are the same bytes on the wire as
to_contents gives (msgspec's base64 against the standard library's), and long values are
encoded in pieces with the event loop free between them."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
from hypothesis import given
from hypothesis import strategies as st

from runtime.features import TextResourceContents, reply_contents, to_contents
from runtime.features._contents import ENCODE_PIECE


def _wire(contents: list[Any]) -> bytes:
    return msgspec.json.encode(contents)


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


async def test_long_blob_is_encoded_in_pieces_with_the_same_bytes() -> None:
    value = bytes(range(256)) * (3 * ENCODE_PIECE // 256) + b"\x01\x02"  # not a multiple of 3
    got, ran = await _in_pieces(value)
    assert _wire(got) == _wire(to_contents("big://x", value, None))
    assert ran >= 3


async def test_blob_up_to_a_piece_goes_into_the_reply_as_bytes_in_one_step() -> None:
    # The 4 MiB benchmark blob: no base64 str, no pieces, no join before the reply's encode
    # (msgspec writes the base64 straight into the reply); the loop is not yielded to.
    value = bytes(range(256)) * (ENCODE_PIECE // 256)
    got, ran = await _in_pieces(value)
    assert ran == 0
    assert got[0].blob is value
    assert _wire(got) == _wire(to_contents("big://x", value, None))
