"""reply_contents: the resources/read reply's contents are the same bytes on the wire as
to_contents gives, bytes included (msgspec's base64 against the standard library's)."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from runtime.features import TextResourceContents, reply_contents, to_contents


@given(st.binary(max_size=300), st.sampled_from([None, "image/png"]))
def test_blob_bytes_on_the_wire_match_to_contents(data: bytes, mime: str | None) -> None:
    for value in (data, bytearray(data), memoryview(data)):
        assert msgspec.json.encode(reply_contents("bin://x", value, mime)) == msgspec.json.encode(
            to_contents("bin://x", value, mime)
        )


def test_other_values_are_to_contents() -> None:
    got = reply_contents("text://x", "hello", None)
    assert got == [TextResourceContents(uri="text://x", text="hello", mime_type="text/plain")]
    assert reply_contents("j://x", {"a": 1}, None) == to_contents("j://x", {"a": 1}, None)
