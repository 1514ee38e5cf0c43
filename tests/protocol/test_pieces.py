"""Pieces and encode_result_pieces: a result holding already-encoded values in several
buffers encodes to the same bytes as the joined whole would, as a vector around them (the
values' buffers themselves, not copies) or as one bytes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime.protocol import Pieces, encode_result, encode_result_pieces


def _json(value: str) -> bytes:
    return msgspec.json.encode(value)


def _text(value: str, cut: int) -> Pieces:
    """``value`` as a JSON string in two buffers, cut at byte ``cut`` of its encoding."""
    whole = _json(value)
    return Pieces([whole[:cut], bytearray(whole[cut:])])


def _joined(result: Any) -> Any:
    """``result`` with each Pieces value replaced by the msgspec.Raw of its bytes."""
    if isinstance(result, Pieces):
        return msgspec.Raw(result.join())
    if isinstance(result, dict):
        return {key: _joined(value) for key, value in result.items()}
    if isinstance(result, list):
        return [_joined(value) for value in result]
    return result


@pytest.mark.parametrize("request_id", [1, 'a\u00e9"b', 2**40])
def test_a_result_holding_pieces_is_the_same_bytes_as_vector_and_as_bytes(
    request_id: Any,
) -> None:
    text = _text('x"\n\u2028\u00e9' * 50, 7)
    result = {"contents": [{"uri": "t://x", "text": text, "mimeType": "text/plain"}], "n": 1}
    want = encode_result(request_id, _joined(result))
    vector = encode_result_pieces(request_id, result)
    assert isinstance(vector, Pieces)
    assert vector.join() == want and vector.nbytes == len(vector) == len(want)
    # The value's own buffers, in order, between the envelope's bytes (no copy of them).
    inner = [i for i, part in enumerate(vector.parts) if any(part is p for p in text.parts)]
    assert [vector.parts[i] for i in inner] == list(text.parts)
    assert inner == [1, 2] and all(vector.parts[i] is text.parts[i - 1] for i in inner)
    joined = encode_result_pieces(request_id, result, vector=False)
    assert joined == want and type(joined) is bytes


def test_several_values_and_one_at_the_very_end() -> None:
    first, second = _text("one" * 9, 3), Pieces([bytearray(_json("two"))])
    result = [first, {"k": second}, second]
    want = encode_result(5, _joined(result))
    vector = encode_result_pieces(5, result)
    assert isinstance(vector, Pieces) and vector.join() == want
    assert encode_result_pieces(5, result, vector=False) == want


def test_a_result_without_pieces_is_plain_bytes() -> None:
    result = {"a": [1, "b", None], "raw": msgspec.Raw(b'{"x":1}')}
    assert encode_result_pieces(3, result) == encode_result(3, result)
    assert type(encode_result_pieces(3, result)) is bytes


def test_other_unknown_types_still_fail_as_msgspec_says() -> None:
    with pytest.raises(TypeError, match="Encoding objects of type object is unsupported"):
        encode_result_pieces(1, {"x": object(), "t": Pieces([b'"a"'])})


def test_a_raw_holding_a_nul_byte_is_refused_not_spliced_wrongly() -> None:
    with pytest.raises(ValueError, match="NUL"):
        encode_result_pieces(1, {"bad": msgspec.Raw(b'"\x00"'), "t": Pieces([b'"a"'])})
