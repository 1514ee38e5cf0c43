"""2026-07-28 Streamable HTTP request metadata: header/body validation and status codes.

basic/transports/streamable-http, "Request Metadata" and "Server Validation": the
``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-{Name}`` headers
must be present and match the body (after Base64-sentinel decoding), else 400 with
-32020 ``HeaderMismatch``. The status of every other error is ``runtime.protocol.http_status``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import operator
import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

from ...protocol import NAMED_METHODS, TOOLS_CALL, ToolCall
from ._exchange import HttpRequest

__all__ = [
    "ModernParams",
    "body_params",
    "check_headers",
    "decode_header_value",
    "modern_params",
]

# RFC 9110 field-value characters the spec allows unencoded: visible ASCII, space, tab.
_SAFE: Final = re.compile(r"[\x20-\x7e\t]*")
_SENTINEL: Final = re.compile(r"=\?base64\?([A-Za-z0-9+/=]*)\?=")
_MAX_SAFE_INT: Final = 2**53 - 1


@functools.lru_cache(maxsize=256)  # a client sends the same few names again and again
def decode_header_value(value: str) -> str | None:
    """The value a ``Mcp-Name`` / ``Mcp-Param-*`` header stands for, or None when invalid."""
    if not _SAFE.fullmatch(value):
        return None
    match = _SENTINEL.fullmatch(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _matches(header: str, value: Any) -> bool:
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int):
        try:
            return abs(value) <= _MAX_SAFE_INT and float(header) == value
        except ValueError:
            return False
    if isinstance(value, str):
        return header == value
    return False


class ModernParams(msgspec.Struct):
    """What the 2026-07-28 POST rules read from a request's ``params``: its ``_meta``, the
    fields mirrored into ``Mcp-Name``, and ``arguments`` (kept raw: decoded only for a tool
    that mirrors some into ``Mcp-Param-*`` headers)."""

    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")
    name: Any = None
    uri: Any = None
    task_id: Any = msgspec.field(default=None, name="taskId")
    arguments: msgspec.Raw | UnsetType = UNSET


class _Body(msgspec.Struct):
    params: ModernParams | None = None


_params_decoder: Final = msgspec.json.Decoder(ModernParams)
_body_decoder: Final = msgspec.json.Decoder(_Body)


def modern_params(raw: bytes | msgspec.Raw) -> ModernParams | None:
    """``params`` (its raw JSON) as :class:`ModernParams`; None when it is not an object
    with an object (or no) ``_meta``."""
    try:
        return _params_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def body_params(body: bytes) -> ModernParams | None:
    """The :class:`ModernParams` of a POST body known to be one JSON-RPC message whose
    ``params._meta`` is an object; None when a typed reading refuses what the untyped one
    took (a key given twice, once with a value of the wrong type)."""
    try:
        return _body_decoder.decode(body).params
    except (msgspec.DecodeError, RecursionError):
        return None


#: How ``ModernParams`` holds each body field that ``Mcp-Name`` mirrors (``NAMED_METHODS``).
_BODY_FIELD: Final = {
    "name": operator.attrgetter("name"),
    "uri": operator.attrgetter("uri"),
    "taskId": operator.attrgetter("task_id"),
}


def check_headers(
    request: HttpRequest,
    meta_version: str,
    method: str | None,
    params: ModernParams | ToolCall,
    header_rules: Mapping[str, Mapping[str, tuple[str, ...]]],
) -> str | None:
    """Why the headers do not match the body (for -32020), or None when they do.

    ``method`` is the request's method, None for a message that is not a request (whose
    header rules 2026-07-28 does not define beyond the protocol version). ``params`` is the
    general reading of its params, or a ``tools/call``'s typed reading when the tool has no
    ``Mcp-Param`` rules (``meta`` and ``name`` are all that is read of it then).
    ``header_rules``: each tool's ``Mcp-Param-*`` rules by name (``ServerPort.header_rules``)."""
    index = request.fields.get  # (one bound method for the handful of lookups below)
    version = index("mcp-protocol-version")
    if version is None:
        return "missing MCP-Protocol-Version header"
    if version != meta_version:
        return (
            f"MCP-Protocol-Version header value {version!r} does not match body value "
            f"{meta_version!r}"
        )
    if method is None:
        return None
    header = index("mcp-method")
    if header is None:
        return "missing Mcp-Method header"
    if header != method:
        return f"Mcp-Method header value {header!r} does not match body value {method!r}"
    field = NAMED_METHODS.get(method)
    if field is None:
        return None
    raw_name = index("mcp-name")
    if raw_name is None:
        return "missing Mcp-Name header"
    name = decode_header_value(raw_name)
    if name is None:
        return "Mcp-Name header value has invalid characters or encoding"
    expected = _BODY_FIELD[field](params)
    if name != expected:
        return f"Mcp-Name header value {name!r} does not match body value {expected!r}"
    if method != TOOLS_CALL:
        return None
    wanted = header_rules[name]
    if not wanted:
        return None
    # Matched against the arguments as sent: never a typed reading's (defaults filled in).
    assert isinstance(params, ModernParams)
    raw_arguments = params.arguments
    try:
        arguments = (
            msgspec.json.decode(raw_arguments) if isinstance(raw_arguments, msgspec.Raw) else None
        )
    except RecursionError:  # followed by the envelope's decoder, not here
        return "tools/call arguments nested too deeply"
    arguments = arguments if isinstance(arguments, dict) else {}
    for header_name, path in wanted.items():
        value: Any = arguments
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        raw = index(f"mcp-param-{header_name}")
        if value is None:
            continue  # "Parameter value is null / not in arguments": not expected
        if raw is None:
            return f"missing Mcp-Param-{header_name} header"
        decoded = decode_header_value(raw)
        if decoded is None:
            return f"Mcp-Param-{header_name} header value has invalid characters or encoding"
        if not _matches(decoded, value):
            return f"Mcp-Param-{header_name} header value {decoded!r} does not match the body"
    return None


def header_params(schema: Any) -> dict[str, tuple[str, ...]]:
    """``x-mcp-header`` annotations of a tool's ``inputSchema``: {header name (lower case):
    property path}, following only ``properties`` chains (2026-07-28 "Schema Extension")."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict):
            return
        for key, sub in props.items():
            if not isinstance(sub, dict):
                continue
            name = sub.get("x-mcp-header")
            if isinstance(name, str) and name:
                found[name.lower()] = (*path, key)
            walk(sub, (*path, key))

    walk(schema, ())
    return found
