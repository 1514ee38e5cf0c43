"""JSON-RPC checks done at the HTTP layer, before a POST body reaches a session.

Why here and not only in the core: a session serves many POSTs over ONE connection, and
its output is routed back to the POST that carried the request by the request's id. An
error the core can only answer with ``id: null`` (an empty or oversized batch, an item with
no usable id) could not be routed to its POST: it would wait forever, or get 202 while the
error went to the GET stream. So every such error is produced here, for the POST that
caused it, and the core only ever sees well-formed messages with ids it can route.

The rules mirror ``runtime.core``'s ``classify`` (JSON-RPC 2.0 section 4 plus MCP's "the
ID MUST NOT be null"); MCP 2025-03-26 basic/transports: "If the server cannot accept the
input, it MUST return an HTTP error status code (e.g., 400 Bad Request). The HTTP response
body MAY comprise a JSON-RPC error response that has no id."
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import msgspec

__all__ = ["Checked", "Kind", "check_batch", "check_message", "rpc_error"]

INVALID_REQUEST = -32600


class Kind(Enum):
    REQUEST = 1
    NOTIFICATION = 2
    RESPONSE = 3


def rpc_error(
    request_id: Any, message: str, code: int = INVALID_REQUEST, data: Any = None
) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "error": error})


class Invalid(Exception):
    """A message the core would refuse: ``reply`` is its JSON-RPC error (id when usable)."""

    def __init__(self, request_id: Any, reason: str, data: Any = None) -> None:
        super().__init__(reason)
        self.request_id = request_id
        self.reply = rpc_error(request_id, f"Invalid Request: {reason}", data=data)


def _usable_id(value: Any) -> bool:
    return isinstance(value, (int, str, float)) and not isinstance(value, bool)


def check_message(message: Any) -> Kind:
    """The kind of one decoded JSON-RPC message; raises :class:`Invalid` otherwise."""
    if not isinstance(message, dict):
        raise Invalid(None, "a JSON-RPC message must be an object")
    request_id = message.get("id")
    recovered = request_id if _usable_id(request_id) else None
    if "id" in message and request_id is not None and recovered is None:
        raise Invalid(None, '"id" must be a string or a number')
    if message.get("jsonrpc") != "2.0":
        raise Invalid(recovered, '"jsonrpc" must be exactly "2.0"')
    if "method" in message:
        if not isinstance(message["method"], str):
            raise Invalid(recovered, '"method" must be a string')
        if "result" in message or "error" in message:
            raise Invalid(recovered, "a request cannot carry result or error")
        if "params" in message and not isinstance(message["params"], (dict, list)):
            raise Invalid(recovered, '"params" must be an object or an array')
        if "id" not in message:
            return Kind.NOTIFICATION
        if request_id is None:
            raise Invalid(None, '"id" must be a string or a number, not null')
        return Kind.REQUEST
    if "id" not in message:
        raise Invalid(None, 'missing "method"')
    if ("result" in message) == ("error" in message):
        raise Invalid(recovered, 'a response carries exactly one of "result" and "error"')
    return Kind.RESPONSE


@dataclass(slots=True)
class Checked:
    """A batch split into what the core may see and what is answered here."""

    #: Raw items of the well-formed messages, in order (fed to the session as a batch).
    valid: list[bytes] = field(default_factory=list)
    #: Ids of the well-formed requests (the POST waits for their answers).
    request_ids: list[Any] = field(default_factory=list)
    #: The decoded well-formed items (for checks such as per-tool scopes).
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: JSON-RPC error replies for the malformed items (each item isolated, JSON-RPC 2.0 s6).
    errors: list[bytes] = field(default_factory=list)


_raw_batch = msgspec.json.Decoder(list[msgspec.Raw])


def check_batch(body: bytes, items: list[Any], max_batch_size: int) -> Checked:
    """Check a batch body (``items`` is its decoded form). Raises :class:`Invalid` for a
    batch that cannot be accepted as a whole: empty, or over ``max_batch_size``."""
    if not items:
        raise Invalid(None, "empty batch")
    if len(items) > max_batch_size:
        raise Invalid(
            None,
            f"batch of {len(items)} items exceeds the limit of {max_batch_size}",
            {"maxBatchSize": max_batch_size},
        )
    raws = _raw_batch.decode(body)
    checked = Checked()
    for raw, item in zip(raws, items, strict=True):
        try:
            kind = check_message(item)
        except Invalid as exc:
            checked.errors.append(exc.reply)
            continue
        checked.valid.append(bytes(raw))
        checked.messages.append(item)
        if kind is Kind.REQUEST:
            checked.request_ids.append(item["id"])
    return checked
