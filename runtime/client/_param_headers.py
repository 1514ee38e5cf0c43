"""``Mcp-Param-{Name}`` headers (2026-07-28 basic/transports/streamable-http "Schema
Extension"): a tool's input schema may mark arguments with ``x-mcp-header``; a modern HTTP
client mirrors each such argument of a call into a header, so that gateways can route on it
without reading the body, and the server checks that the two agree (-32020 HeaderMismatch
when they do not).

The client learns the marks from ``tools/list`` (or, after a first -32020, by listing the
tools and trying once more: ``Client.call_tool``). A tool whose marks break the rules of
"Schema Extension" (empty, not an RFC 9110 token, the same name twice in any case, on a
parameter that is not a string, integer or boolean, or anywhere but a chain of
``properties``) is left out of the listing, with a warning naming the tool and the rule:
the spec's MUST for clients ("Rejection means the client MUST exclude the invalid tool from
the result of ``tools/list``"), so that one malformed definition does not cost the others.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ..framing import loggable
from ..protocol import Tool
from ._errors import ClientError

__all__ = [
    "SAFE_INTEGER",
    "InvalidHeaderMark",
    "ParamHeaders",
    "encode_header_value",
    "header_params",
]

log = logging.getLogger("mcp_runtime.client")

#: The annotation (2026-07-28 server/tools, "x-mcp-header").
_MARK: Final = "x-mcp-header"
#: RFC 9110 section 5.1 field names: ``1*tchar``, which leaves out spaces, colons, control
#: characters and anything outside ASCII.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: The types a marked parameter may have ("MUST only be applied to parameters with
#: primitive types (integer, string, boolean). Parameters with type number are not
#: permitted").
_PRIMITIVE: Final = frozenset({"string", "integer", "boolean"})
#: Keywords whose values are data, not schemas: a ``default`` that happens to hold an
#: ``x-mcp-header`` key is not an annotation.
_DATA_KEYWORDS: Final = frozenset({"const", "default", "enum", "examples"})
#: The largest integer a marked argument may hold: "Integer values MUST be within the safe
#: range for JavaScript (-2**53+1 to 2**53-1)", where a server or gateway reading the header
#: as a double still compares it exactly.
SAFE_INTEGER: Final = 2**53 - 1

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

    Learned from each 2026-07-28 ``tools/list`` the client reads (``learn``), replaced
    tool by tool, so a tool whose schema lost its marks stops mirroring; kept for the
    client's life, one entry per tool the server listed with marks, and one in ``rejected``
    per tool whose marks broke a rule (until a later listing names it with valid ones). The
    ``RequestBuilder`` asks it for the headers of each 2026-07-28 ``tools/call``
    (``mirror``); a tool it does not know sends none, and the server's -32020 then makes
    the client list the tools and try once more.
    """

    def __init__(self) -> None:
        #: {tool: {header name: property path}}
        self._by_tool: dict[str, dict[str, tuple[str, ...]]] = {}
        #: {tool: why its marks were rejected}, as the last listing that named it said.
        self.rejected: dict[str, str] = {}

    def knows(self, tool: str) -> bool:
        """Whether ``tool`` mirrors any argument (as far as the last listing said)."""
        return tool in self._by_tool

    def learn(self, tools: Sequence[Tool]) -> list[Tool]:
        """Take in a listing; return the tools it keeps (those with valid marks, in order).
        A rejected tool is forgotten here and logged with the rule it breaks."""
        kept: list[Tool] = []
        for tool in tools:
            try:
                marked = header_params(tool.input_schema)
            except InvalidHeaderMark as exc:
                self._by_tool.pop(tool.name, None)
                self.rejected[tool.name] = str(exc)
                log.warning("left out tool %s: %s", loggable(tool.name), loggable(str(exc)))
                continue
            self.rejected.pop(tool.name, None)
            if marked:
                self._by_tool[tool.name] = marked
            else:
                self._by_tool.pop(tool.name, None)
            kept.append(tool)
        return kept

    def mirror(self, tool: str, arguments: Any) -> list[tuple[str, str]]:
        """The headers for a call of ``tool``: each marked argument the call gives, rendered
        as the server compares it (booleans ``true``/``false``, numbers as JSON, strings
        encoded as header values; objects and arrays are not mirrored). An integer outside
        :data:`SAFE_INTEGER` is :class:`ClientError`, before anything is sent."""
        found: list[tuple[str, str]] = []
        for header, path in self._by_tool.get(tool, {}).items():
            value: Any = arguments
            for step in path:
                value = value.get(step) if isinstance(value, dict) else None
            if value is None:
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, int) and not -SAFE_INTEGER <= value <= SAFE_INTEGER:
                raise ClientError(
                    f"{tool}: argument {'.'.join(path)!r} (Mcp-Param-{header}) is an integer "
                    f"outside +-(2**53 - 1), which a header may not carry (2026-07-28 "
                    f'streamable-http, "Schema Extension")'
                )
            elif isinstance(value, (int, float)):
                text = msgspec.json.encode(value).decode()
            elif isinstance(value, str):
                text = encode_header_value(value)
            else:
                continue
            found.append((f"Mcp-Param-{header}", text))
        return found


class InvalidHeaderMark(ValueError):
    """A tool's ``x-mcp-header`` marks break a rule of 2026-07-28 "Schema Extension"."""


def header_params(schema: Any) -> dict[str, tuple[str, ...]]:
    """{header name: property path} for the ``x-mcp-header`` marks of an input schema.

    A mark counts where a chain of ``properties`` keys from the root reaches it ("statically
    reachable"); one anywhere else (under ``items``, ``anyOf``, ``$defs``, ``$ref``d
    definitions, ...) makes the whole definition invalid. Raises :class:`InvalidHeaderMark`
    naming the first rule broken."""
    found: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}  # casefolded name -> name

    def mark(node: dict[str, Any], path: tuple[str, ...]) -> None:
        name = node[_MARK]
        where = _shown(".".join(path))
        if not isinstance(name, str) or not name:
            raise InvalidHeaderMark(f"{_MARK} of {where} is empty or not a string")
        if not _TOKEN.fullmatch(name):
            raise InvalidHeaderMark(
                f"{_MARK} {_shown(name)} of {where} is not an HTTP field-name token "
                f"(RFC 9110 section 5.1)"
            )
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if not kinds or not all(isinstance(k, str) and k in _PRIMITIVE for k in kinds):
            raise InvalidHeaderMark(
                f"{_MARK} {_shown(name)} is on {where} of type {_shown(kind)}: only string, "
                f"integer or boolean parameters may be mirrored"
            )
        folded = name.lower()
        if folded in seen:
            raise InvalidHeaderMark(
                f"{_MARK} {_shown(name)} repeats {_shown(seen[folded])} (names are "
                f"compared in any case)"
            )
        seen[folded] = name
        found[name] = path

    def walk(node: Any, path: tuple[str, ...] | None) -> None:
        """``path``: the chain of ``properties`` keys that reached ``node``; None once the
        walk has left such a chain (a mark there is not statically reachable)."""
        if isinstance(node, list):
            for item in node:
                walk(item, None)
            return
        if not isinstance(node, dict):
            return
        if _MARK in node:
            if not path:  # the root itself, or off the chain
                raise InvalidHeaderMark(
                    f"{_MARK} {_shown(node[_MARK])} is not reachable through a chain of "
                    f"properties from the schema's root"
                )
            mark(node, path)
        for keyword, value in node.items():
            if keyword in _DATA_KEYWORDS:
                continue
            if keyword == "properties" and isinstance(value, dict) and path is not None:
                for key, sub in value.items():
                    walk(sub, (*path, key))
            elif keyword == "properties" and isinstance(value, dict):
                for sub in value.values():
                    walk(sub, None)
            else:
                walk(value, None)

    walk(schema, ())
    return found


def _shown(value: Any) -> str:
    """A peer-chosen value for an error message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
