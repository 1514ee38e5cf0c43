"""The wire rules of MCP over JSON-RPC 2.0, sans-IO: no trio, no sockets (msgspec allowed).

One home for what every transport and handler must agree on:

- ``_jsonrpc``: the envelope, decoded once; the one classifier and ``Kind``; ``id_key``;
  encoders of whole messages from pre-encoded pieces.
- ``_errors``: every error code as a named constant, one builder per error.
- ``_versions``: the protocol revisions of both eras and the ``_meta`` keys.
- ``_methods``: method names and the per-era method sets.
- ``_era``: ``select_era``, which tells the era of a request from its ``_meta``.
- ``_lifecycle``: the handshake-era lifecycle state machine.
- ``_status``: the JSON-RPC error code -> HTTP status table of 2026-07-28.
- ``_refusal``: ``Refusal``, what an observer learns of a message refused before dispatch.
- ``_pieces``: ``Pieces``, encoded bytes kept as several buffers (a long text in a reply, and
  the reply around it), and ``encode_result_pieces``, which encodes a result holding them.
- ``_tool_call``: ``ToolCall``, a ``tools/call``'s params read once (arguments included)
  as the core and the transports carry it to the handler, and ``ONE_PASS_OVER``.
- ``_decoded``: ``DecodedFrame``, a frame its transport decoded and judged already, which a
  connection's reader takes as it is (read once, judged once).
- ``_split_params``: ``split_params``, a request's envelope read from the members around
  its ``params``, not from them (a big ``tools/call`` read in one pass), and
  ``split_batch_params``, the same for such a request inside a batch.

``tests/test_layers.py`` keeps this package free of every other import of ours.
"""

from ._decoded import DecodedFrame
from ._era import (
    MODERN_MARKER,
    ModernRequest,
    missing_capabilities,
    modern_request,
    select_era,
)
from ._errors import (
    CONNECTION_CLOSED,
    FORBIDDEN,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    RESOURCE_NOT_FOUND,
    SERVER_OVERLOADED,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONRPCError,
    ResourceNotFoundError,
    ToolError,
    connection_closed,
    duplicate_request_id,
    forbidden,
    framing_error,
    header_mismatch,
    internal_error,
    invalid_params,
    invalid_request,
    method_not_found,
    missing_capability,
    overloaded,
    parse_error,
    peer_timeout,
    rate_limited,
    replica_gone,
    request_timeout,
    shutting_down,
    store_unavailable,
    unsupported_version,
)
from ._jsonrpc import (
    REQUEST_ID_TYPES,
    TOO_DEEP,
    BatchItems,
    Envelope,
    ErrorReply,
    Kind,
    RequestId,
    batch_shape_error,
    cancelled_id,
    classify,
    decode_frame,
    decode_item,
    encode,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    error_reply,
    id_key,
    params_error,
    prepare_error,
    probe,
    split_batch,
)
from ._lifecycle import INITIALIZING, NEW, OPERATING, Lifecycle, batch_refusal
from ._methods import (
    CACHEABLE_METHODS,
    CANCELLED,
    CLIENT_METHODS,
    HANDSHAKE_ONLY,
    INITIALIZE,
    INITIALIZED,
    MODERN_ONLY,
    NAMED_METHODS,
    SUBSCRIPTIONS_LISTEN,
)
from ._pieces import Pieces, encode_result_pieces
from ._refusal import Refusal
from ._split_params import split_batch_params, split_params
from ._status import ERROR_STATUS, http_status, retry_after, status_of
from ._tool_call import ONE_PASS_OVER, ToolCall
from ._versions import (
    BATCH_REVISION,
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
)

__all__ = [
    "BATCH_REVISION",
    "CACHEABLE_METHODS",
    "CANCELLED",
    "CLIENT_METHODS",
    "CONNECTION_CLOSED",
    "ERROR_STATUS",
    "FORBIDDEN",
    "HANDSHAKE_ONLY",
    "HANDSHAKE_VERSIONS",
    "HEADER_MISMATCH",
    "INITIALIZE",
    "INITIALIZED",
    "INITIALIZING",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_HANDSHAKE_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "METHOD_NOT_FOUND",
    "MISSING_CLIENT_CAPABILITY",
    "MODERN_MARKER",
    "MODERN_ONLY",
    "MODERN_VERSIONS",
    "NAMED_METHODS",
    "NEW",
    "ONE_PASS_OVER",
    "OPERATING",
    "PARSE_ERROR",
    "REQUEST_ID_TYPES",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "SERVER_OVERLOADED",
    "SUBSCRIPTIONS_LISTEN",
    "SUPPORTED_VERSIONS",
    "TOO_DEEP",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "BatchItems",
    "DecodedFrame",
    "Envelope",
    "ErrorReply",
    "JSONRPCError",
    "Kind",
    "Lifecycle",
    "ModernRequest",
    "Pieces",
    "Refusal",
    "RequestId",
    "ResourceNotFoundError",
    "ToolCall",
    "ToolError",
    "batch_refusal",
    "batch_shape_error",
    "cancelled_id",
    "classify",
    "connection_closed",
    "decode_frame",
    "decode_item",
    "duplicate_request_id",
    "encode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "encode_result_pieces",
    "error_reply",
    "forbidden",
    "framing_error",
    "header_mismatch",
    "http_status",
    "id_key",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "method_not_found",
    "missing_capabilities",
    "missing_capability",
    "modern_request",
    "overloaded",
    "params_error",
    "parse_error",
    "peer_timeout",
    "prepare_error",
    "probe",
    "rate_limited",
    "replica_gone",
    "request_timeout",
    "retry_after",
    "select_era",
    "shutting_down",
    "split_batch",
    "split_batch_params",
    "split_params",
    "status_of",
    "store_unavailable",
    "unsupported_version",
]
