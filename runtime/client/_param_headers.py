"""``Mcp-Param-{Name}`` headers (2026-07-28 basic/transports/streamable-http "Schema
Extension"): a tool's input schema may mark arguments with ``x-mcp-header``; a modern HTTP
client mirrors each such argument of a call into a header, so that gateways can route on it
without reading the body, and the server checks that the two agree (-32020 HeaderMismatch
when they do not).

The client learns the marks from ``tools/list`` (or, after a first -32020, by listing the
tools and trying once more: ``Client.call_tool``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ..protocol import Tool

__all__ = ["ParamHeaders", "encode_header_value", "header_params"]

# RFC 9110 field values the 2026-07-28 spec lets through unencoded: visible ASCII, space, tab
# (and no leading/trailing whitespace, which HTTP would strip).
_PLAIN_HEADER: Final = re.compile(r"[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?")


def encode_header_value(value: str) -> str:
    """A value for ``Mcp-Name`` / ``Mcp-Param-*``: as is when it is plain visible ASCII,
    else the spec's Base64 sentinel ``=?base64?...?=`` (2026-07-28 streamable-http,
    "Encoding Header Values")."""
    if _PLAIN_HEADER.fullmatch(value) and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


class ParamHeaders:
    """Per tool, the arguments its input schema marks with ``x-mcp-header``.

    Learned from each ``tools/list`` the client reads (``learn``), replaced tool by tool,
    so a tool whose schema lost its marks stops mirroring; kept for the client's life,
    one entry per tool the server listed with marks. The ``RequestBuilder`` asks it for the
    headers of each 2026-07-28 ``tools/call`` (``mirror``); a tool it does not know sends
    none, and the server's -32020 then makes the client list the tools and try once more.
    """

    def __init__(self) -> None:
        #: {tool: {header name: property path}}
        self._by_tool: dict[str, dict[str, tuple[str, ...]]] = {}

    def knows(self, tool: str) -> bool:
        """Whether ``tool`` mirrors any argument (as far as the last listing said)."""
        return tool in self._by_tool

    def learn(self, tools: Sequence[Tool]) -> None:
        for tool in tools:
            marked = header_params(tool.input_schema)
            if marked:
                self._by_tool[tool.name] = marked
            else:
                self._by_tool.pop(tool.name, None)

    def mirror(self, tool: str, arguments: Any) -> list[tuple[str, str]]:
        """The headers for a call of ``tool``: each marked argument the call gives, rendered
        as the server compares it (booleans ``true``/``false``, numbers as JSON, strings
        encoded as header values; objects and arrays are not mirrored)."""
        found: list[tuple[str, str]] = []
        for header, path in self._by_tool.get(tool, {}).items():
            value: Any = arguments
            for step in path:
                value = value.get(step) if isinstance(value, dict) else None
            if value is None:
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (int, float)):
                text = msgspec.json.encode(value).decode()
            elif isinstance(value, str):
                text = encode_header_value(value)
            else:
                continue
            found.append((f"Mcp-Param-{header}", text))
        return found


def header_params(schema: Any) -> dict[str, tuple[str, ...]]:
    """{header name: property path} for the ``x-mcp-header`` annotations of an input schema,
    following ``properties`` chains only."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        properties = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(properties, dict):
            return
        for key, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            header = sub.get("x-mcp-header")
            if isinstance(header, str) and header:
                found[header] = (*path, key)
            walk(sub, (*path, key))

    walk(schema, ())
    return found
