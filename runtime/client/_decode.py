"""Values the server sent, decoded without trusting them.

The envelope of each message was judged already (``runtime.protocol.decode_messages``); what
it holds raw (a result, an error object, params) is decoded here, when someone takes it.
Everything the server may get wrong ends in :class:`BadMessage` naming what was being read,
never in a msgspec or recursion error out of the client: JSON that does not match the
expected type, and nesting deeper than the decoder follows (the value is decoded deeper in
the stack than its envelope was, so its depth is checked again: the server's own rule,
``TOO_DEEP``).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ..protocol import INTERNAL_ERROR, TOO_DEEP
from ._errors import BadMessage, PeerError

__all__ = ["convert_as", "decode_as", "decode_value", "params_of", "peer_error"]

T = TypeVar("T")


def decode_value(data: msgspec.Raw | bytes, what: str, type: Any = Any) -> Any:
    """A value the server sent (a result, an error object, params) decoded as ``type``.
    :class:`BadMessage` naming ``what`` when it cannot be."""
    try:
        return msgspec.json.decode(data, type=type)
    except RecursionError:
        raise BadMessage(f"{what}: {TOO_DEEP}") from None
    except msgspec.ValidationError as exc:
        raise BadMessage(f"{what}: the result does not match the schema: {exc}") from None
    except msgspec.DecodeError as exc:
        raise BadMessage(f"{what}: {exc}") from None


def decode_as(raw: msgspec.Raw, result_type: type[T], method: str) -> T:
    """The result ``raw`` of ``method`` as ``result_type`` (:func:`decode_value`)."""
    decoded: T = decode_value(raw, method, result_type)
    return decoded


def convert_as(data: Any, result_type: type[T], method: str) -> T:
    """A value already decoded (a task inside a result) as ``result_type``."""
    try:
        return msgspec.convert(data, result_type)
    except msgspec.ValidationError as exc:
        raise BadMessage(f"{method}: the result does not match the schema: {exc}") from None


def peer_error(error: Any) -> PeerError:
    """A JSON-RPC error object as :class:`PeerError` (a malformed one as -32603)."""
    if not isinstance(error, dict):
        return PeerError(INTERNAL_ERROR, f"malformed error object {error!r:.100}")
    code = error.get("code")
    return PeerError(
        code if isinstance(code, int) else INTERNAL_ERROR,
        str(error.get("message", "")),
        error.get("data"),
    )


def params_of(params: msgspec.Raw | msgspec.UnsetType) -> dict[str, Any] | None:
    """A server message's params as a dict ({} for none, or for an array); None when they
    are nested deeper than the decoder follows."""
    if not isinstance(params, msgspec.Raw):
        return {}
    try:
        decoded = decode_value(params, "params")
    except BadMessage:
        return None
    return decoded if isinstance(decoded, dict) else {}
