"""JSON-RPC 2.0 envelopes on msgspec: decode once, keep ``params`` raw, encode without dicts.

The envelope is decoded a single time per frame into :class:`Envelope`; ``params`` stays a
``msgspec.Raw`` slice of the frame until the handler's own precompiled decoder takes it.
Responses are assembled from pre-encoded pieces (id bytes + result bytes), so the hot path
builds no intermediate dicts. Everything here is synchronous and does no I/O.

This is the one validator of incoming messages: the stream reader, the HTTP endpoints and the
WebSocket transport all decode with :func:`decode_frame` / :func:`decode_item` and judge with
:func:`classify`, so a message gets the same answer on every transport.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ._errors import (
    PARSE_ERROR,
    JSONRPCError,
    duplicate_request,
    invalid_params,
    invalid_request,
    parse_error,
)
from ._tool_call import ToolCall

__all__ = [
    "REQUEST_ID_TYPES",
    "TOO_DEEP",
    "BatchItems",
    "Envelope",
    "ErrorReply",
    "Kind",
    "RequestId",
    "batch_shape_error",
    "cancelled_id",
    "classify",
    "decode_frame",
    "decode_item",
    "decode_messages",
    "encode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "error_reply",
    "id_key",
    "params_error",
    "prepare_error",
    "probe",
    "split_batch",
]

# MCP: "Requests MUST include a string or integer ID" (basic/index, 2025-11-25); JSON-RPC 2.0
# also allows other numbers, which we accept and echo unchanged.
RequestId = int | str | float
#: The same as a tuple: ``isinstance`` with a tuple is several times faster than with a
#: union, which matters on the per-request path.
REQUEST_ID_TYPES: Final = (int, str, float)


class Envelope(msgspec.Struct, forbid_unknown_fields=False):
    """Any one JSON-RPC 2.0 message. Which fields are set decides the kind (see classify)."""

    jsonrpc: str
    method: str | UnsetType = UNSET
    id: int | str | float | UnsetType | None = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


class _IdProbe(msgspec.Struct):
    id: int | str | float | None = None


class Kind:
    """The kinds of JSON-RPC 2.0 message that :func:`classify` tells apart: plain int
    constants, not an Enum, since they are read on every message and an Enum member costs
    several times an attribute to look up."""

    REQUEST: Final = 1
    NOTIFICATION: Final = 2
    RESPONSE: Final = 3


_frame_decoder: Final = msgspec.json.Decoder(Envelope | list[Raw])
_item_decoder: Final = msgspec.json.Decoder(Envelope)
_probe_decoder: Final = msgspec.json.Decoder(_IdProbe)
_encoder: Final = msgspec.json.Encoder()
encode: Final = _encoder.encode


def _recover_id(frame: bytes | memoryview | Raw) -> RequestId | None:
    """Best-effort id of an invalid request, so its error can still be correlated."""
    try:
        return _probe_decoder.decode(frame).id
    except (msgspec.DecodeError, RecursionError):
        return None


#: What a value nested deeper than the decoder can follow is answered with. msgspec follows
#: nesting on the C stack and raises RecursionError past the interpreter's recursion limit
#: (about 1,000 levels less the caller's depth): the JSON is well-formed but cannot be
#: parsed here, so -32700 with id null (an id inside it cannot be read either).
TOO_DEEP: Final = "Parse error: JSON nested too deeply"


def too_deep() -> JSONRPCError:
    return JSONRPCError(PARSE_ERROR, TOO_DEEP)


def decode_frame(frame: bytes | memoryview) -> Envelope | list[Raw]:
    """Decode one frame into an envelope or a batch (a list of raw items).

    Raises JSONRPCError: -32700 for bytes that are not JSON; -32600 for JSON that is not an
    object or array, or an object that is not a JSON-RPC 2.0 message (``.request_id`` is the
    id to answer with, when it could be recovered).
    """
    try:
        return _frame_decoder.decode(frame)
    except msgspec.ValidationError as exc:
        raise invalid_request(str(exc), _recover_id(frame)) from None
    except msgspec.DecodeError as exc:
        raise parse_error(exc) from None
    except RecursionError:
        raise too_deep() from None


def decode_item(item: Raw) -> Envelope:
    """Decode one batch item; a nested array or a scalar is an invalid request (-32600)."""
    try:
        return _item_decoder.decode(item)
    except msgspec.ValidationError as exc:
        raise invalid_request(str(exc), _recover_id(item)) from None
    except msgspec.DecodeError as exc:  # pragma: no cover - the batch already parsed as JSON
        raise parse_error(exc) from None
    except RecursionError:  # the item is decoded deeper in the stack than its batch was
        raise too_deep() from None


_STRUCTURED: Final = (ord("{"), ord("["))


def classify(env: Envelope) -> int:
    """Check an envelope against JSON-RPC 2.0 section 4 and return its kind.

    Raises JSONRPCError(-32600) naming what is wrong; ``.request_id`` carries the id to
    answer with (null when there is none usable).
    """
    # Identity checks against the UNSET singleton: this runs once per message (hot path).
    request_id = None if env.id is UNSET else env.id
    if env.jsonrpc != "2.0":
        raise invalid_request('"jsonrpc" must be exactly "2.0"', request_id)
    if env.method is not UNSET:
        if env.result is not UNSET or env.error is not UNSET:
            raise invalid_request("a request cannot carry result or error", request_id)
        # JSON-RPC 2.0 section 4.2: params, when present, MUST be a structured value.
        # msgspec.Raw is the exact value slice, so its first byte tells the JSON type (read
        # through a memoryview: no copy of a large params object).
        params = env.params
        if params is not UNSET and memoryview(params)[0] not in _STRUCTURED:
            raise invalid_request('"params" must be an object or an array', request_id)
        if request_id is None:
            if env.id is UNSET:
                return Kind.NOTIFICATION
            # MCP basic/index: "the ID MUST NOT be null".
            raise invalid_request('"id" must be a string or a number, not null', None)
        return Kind.REQUEST
    if env.id is UNSET:
        raise invalid_request('missing "method"', None)
    if (env.result is UNSET) == (env.error is UNSET):
        raise invalid_request('a response carries exactly one of "result" and "error"', request_id)
    return Kind.RESPONSE


def decode_messages(frame: bytes | memoryview) -> list[Envelope | JSONRPCError]:
    """Every message of a frame from a peer, each judged on its own: an :class:`Envelope`
    that :func:`classify` accepts (``params``, ``result`` and ``error`` still raw), or the
    :class:`JSONRPCError` this validator gives it (one for the whole frame when it is not
    JSON, or a batch that is empty). Never raises.

    For a reader that answers no refusal (a client reading its server, which must not reply
    to a response or a notification): the same rules as :func:`decode_frame`,
    :func:`decode_item` and :func:`classify` give a server, the bound on nesting included."""
    try:
        decoded = decode_frame(frame)
    except JSONRPCError as exc:
        return [exc]
    if isinstance(decoded, Envelope):
        return [_judged(decoded)]
    if not decoded:
        return [invalid_request("empty batch")]
    items: list[Envelope | JSONRPCError] = []
    for raw in decoded:
        try:
            items.append(_judged(decode_item(raw)))
        except JSONRPCError as exc:
            items.append(exc)
    return items


def _judged(envelope: Envelope) -> Envelope | JSONRPCError:
    try:
        classify(envelope)
    except JSONRPCError as exc:
        return exc
    return envelope


def id_key(request_id: RequestId) -> tuple[type, RequestId]:
    """A dict key that keeps 1 and "1" apart (they are different JSON-RPC ids)."""
    return (type(request_id), request_id)


class _Result(msgspec.Struct):
    jsonrpc: str
    id: Any
    result: Any


def encode_result(request_id: RequestId, result: Any) -> bytes:
    """A whole response; ``result`` may be a msgspec.Raw that is already encoded.

    One encode of the whole response: splicing a separately encoded result into the envelope
    would copy it once more (benchmarks/README.md, "One encode per response").
    """
    return encode(_Result("2.0", request_id, result))


def _error_object(code: int, message: str, data: Any) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return err


class ErrorReply(bytes):
    """A whole JSON-RPC error response as this runtime encodes it (:func:`encode_error`,
    :func:`error_reply`): its type says it is an error, so a transport that must tell a
    result from an error (a 2026-07-28 HTTP status, ``status_of``) need not read a reply it
    was handed as it left the dispatcher (our own replies are never parsed again). Only
    errors pay for it: one copy of a small body."""

    __slots__ = ()


def encode_error(
    request_id: RequestId | None, code: int, message: str, data: Any = None
) -> ErrorReply:
    return ErrorReply(
        b'{"jsonrpc":"2.0","id":%b,"error":%b}'
        % (encode(request_id), encode(_error_object(code, message, data)))
    )


def prepare_error(exc: JSONRPCError) -> JSONRPCError:
    """``exc`` with its error object encoded once (``exc.encoded``), for an error answered
    many times: :func:`error_reply` then only encodes the id (the in-flight cap's -32010,
    which under overload is most of what a connection answers). ``exc`` must not
    change afterwards."""
    exc.encoded = encode(_error_object(exc.code, exc.message, exc.data))
    return exc


def encode_notification(method: str, params: Any = None) -> bytes:
    if params is None:
        return b'{"jsonrpc":"2.0","method":%b}' % encode(method)
    return b'{"jsonrpc":"2.0","method":%b,"params":%b}' % (encode(method), encode(params))


def encode_request(request_id: RequestId, method: str, params: Any = None) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%b,"method":%b' % (encode(request_id), encode(method))
    if params is None:
        return head + b"}"
    return head + b',"params":%b}' % encode(params)


def error_reply(exc: JSONRPCError, request_id: RequestId | UnsetType | None = None) -> ErrorReply:
    """The whole reply carrying ``exc``, answering ``request_id`` (default: the id the error
    recovered, ``exc.request_id``, for errors found before any handler ran)."""
    answering = exc.request_id if request_id is None or request_id is UNSET else request_id
    if exc.encoded is not None:
        return ErrorReply(
            b'{"jsonrpc":"2.0","id":%b,"error":%b}' % (encode(answering), exc.encoded)
        )
    return encode_error(answering, exc.code, exc.message, exc.data)


class _Probe(msgspec.Struct):
    id: int | str | float | None = None
    method: str | None = None


_outgoing_probe: Final = msgspec.json.Decoder(_Probe | list[_Probe])
_NOTIFICATION_HEAD: Final = b'{"jsonrpc":"2.0","method":"notifications/'


def probe(data: bytes) -> tuple[bool, RequestId | None]:
    """``(is_response, id)`` of a message this side encoded. A batch reply gives its first
    usable id (its items answer requests that arrived together, so any of them names where
    the batch came from). Something that is not JSON-RPC gives ``(False, None)``."""
    if data.startswith(_NOTIFICATION_HEAD):
        # A notification (MCP: every ``notifications/`` method is one; JSON-RPC 2.0 section
        # 4.1: no id), as ``encode_notification`` writes it: no decode, which one change to
        # 1,000 subscribers would otherwise pay per subscriber.
        return False, None
    try:
        message = _outgoing_probe.decode(data)
    except msgspec.DecodeError:
        return False, None
    if isinstance(message, list):
        return True, next((item.id for item in message if item.id is not None), None)
    return message.method is None, message.id


class BatchItems:
    """A batch split item by item (JSON-RPC 2.0 section 6: each item is judged alone)."""

    __slots__ = ("calls", "envelopes", "errors", "raws", "request_ids")

    def __init__(self) -> None:
        #: The well-formed items: their raw bytes (views of the batch), envelopes and, for a
        #: request read whole before (``split_batch``'s ``read``), that reading; in order.
        self.raws: list[Raw] = []
        self.envelopes: list[Envelope] = []
        self.calls: list[ToolCall | None] = []
        #: Ids of the well-formed requests among them.
        self.request_ids: list[RequestId] = []
        #: The error replies for the malformed items.
        self.errors: list[bytes] = []


def batch_shape_error(count: int, max_batch_size: int) -> JSONRPCError | None:
    """Why a batch of ``count`` items is refused whole (None: it is not): empty (JSON-RPC 2.0
    section 6, "an Array with at least one value") or over ``max_batch_size``
    (``Limits.max_batch_size``). The one judge of a batch's shape, whoever reads the batch:
    a stream's reader, or an HTTP session's POST (whose reader then takes it as judged)."""
    if not count:
        return invalid_request("empty batch")
    if count > max_batch_size:
        return invalid_request(
            f"batch of {count} items exceeds the limit of {max_batch_size}",
            data={"maxBatchSize": max_batch_size},
        )
    return None


def split_batch(
    items: list[Raw],
    max_batch_size: int,
    read: Mapping[int, tuple[Envelope, ToolCall]] | None = None,
) -> BatchItems:
    """Judge every item of a batch: its shape (:func:`batch_shape_error`, raised: the batch is
    refused whole), then each item alone. ``read``: items read already, by index (a big
    ``tools/call`` read whole with its batch), taken as they are. A request whose id an
    earlier request of the batch has is refused (:func:`duplicate_request`): the replies
    of both could not be told apart."""
    refused = batch_shape_error(len(items), max_batch_size)
    if refused is not None:
        raise refused
    split = BatchItems()
    seen: set[tuple[type, RequestId]] = set()
    for index, item in enumerate(items):
        call: ToolCall | None = None
        try:
            if read is not None and index in read:
                env, call = read[index]
            else:
                env = decode_item(item)
            kind = classify(env)
        except JSONRPCError as exc:
            split.errors.append(error_reply(exc))
            continue
        if kind == Kind.REQUEST:
            request_id = env.id
            assert isinstance(request_id, REQUEST_ID_TYPES)
            key = id_key(request_id)
            if key in seen:
                split.errors.append(error_reply(duplicate_request(request_id), request_id))
                continue
            seen.add(key)
            split.request_ids.append(request_id)
        split.raws.append(item)
        split.envelopes.append(env)
        split.calls.append(call)
    return split


class _CancelledParams(msgspec.Struct):
    # MCP basic/utilities/cancellation: requestId is required in 2025-11-25 (optional
    # later, for task cancellation, which goes elsewhere).
    requestId: int | str | float | None = None
    reason: str | None = None


_cancelled_decoder: Final = msgspec.json.Decoder(_CancelledParams)


def cancelled_id(params: Raw | None) -> RequestId | None:
    """The id a ``notifications/cancelled`` names (None: none given). Raises -32600 for
    params that are not a cancellation (notifications get no answer: callers log it)."""
    if params is None:
        return None
    try:
        return _cancelled_decoder.decode(params).requestId
    except (msgspec.DecodeError, RecursionError):  # (too deeply nested is malformed too)
        raise invalid_request("malformed notifications/cancelled params") from None


_AT_PATH: Final = re.compile(r" - at `\$(?P<path>[^`]*)`$")


def params_error(exc: msgspec.ValidationError, root: str = "params") -> JSONRPCError:
    """-32602 naming the offending field path, e.g. ``params.arguments.count``."""
    text = str(exc)
    match = _AT_PATH.search(text)
    path = root + (match.group("path") if match else "")
    reason = text[: match.start()] if match else text
    return invalid_params(f"{reason} at `{path}`", path, reason=reason)
