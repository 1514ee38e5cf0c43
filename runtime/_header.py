"""``Header``: mirror a tool parameter into an HTTP request header (MCP 2026-07-28, SEP-2243).

A tool parameter annotated ``Annotated[str, Header("Region")]`` gets ``"x-mcp-header":
"Region"`` in its ``inputSchema``; a 2026-07-28 client then sends the argument's value also
as the ``Mcp-Param-Region`` HTTP header (plain, or ``=?base64?...?=`` when it is not plain
ASCII), so that gateways can route on it without reading the body. The Streamable HTTP
transport checks that the header is present and equals the body's value (else HTTP 400 with
-32020 HeaderMismatch).
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = ["Header"]

#: SEP-2243: the name is an HTTP field-name token (visible ASCII, no separators).
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def Header(name: str, *, description: str | None = None) -> msgspec.Meta:
    """The annotation that mirrors a parameter into ``Mcp-Param-{name}``.

    Raises ValueError at registration for a name that is not an HTTP token (the client
    would have to reject the tool: SEP-2243 "invalid x-mcp-header").
    """
    if not _TOKEN.fullmatch(name):
        raise ValueError(f"x-mcp-header name {name!r} is not an HTTP header token")
    return msgspec.Meta(description=description, extra_json_schema={"x-mcp-header": name})
