"""``ToolCall``: one ``tools/call``'s params, read once, as every layer that carries it sees it.

The params of a call (MCP server/tools, ``CallToolRequestParams``) are read in one typed pass,
the arguments included (a 1 MiB argument costs most of a request's decode, so it must not be
walked twice). Whoever reads them first keeps that reading with the request: the stream
reader of the core (a whole frame, before its envelope decode), the HTTP transport (for the
2026-07-28 era and header rules, which need ``_meta`` and the tool's name), or era selection;
the ``tools/call`` handler takes it back instead of reading the params again.

The type is declared here because this is the lowest layer that both of its carriers may
import: the core (``RequestContext.prepared``, ``Dispatcher.pre_read``, the reader, the
connection and the one-request path) and the transports (which never import the core, nor the
handlers that make it). The handlers implement it (one msgspec struct per tool, tagged by
its name), so the handler also finds the tool it was read for; the layers between see only
what is declared here. A reading belongs to the exact ``params`` it was read from (``raw``,
compared by identity): whoever replaces a request's params drops its reading.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import msgspec

__all__ = ["ONE_PASS_OVER", "ToolCall"]

#: ``tools/call`` params longer than this (bytes) are read in the tool's one typed pass by
#: whoever reads them first; shorter ones are left to the general reading (two passes whose
#: Python frames cost less than handing a reading over, while the copy and second pass they
#: add are small: the guard, benchmarks/guard.py, counts both on stdio_batch_item), except a
#: call over HTTP, whose ``_meta`` the transport's era rules need decoded anyway. One limit
#: for every reader, so that a call is read the same way whoever reads it first.
ONE_PASS_OVER: Final = 16 * 1024


class ToolCall(Protocol):
    """One ``tools/call``'s params read in one typed pass: what the layers that carry the
    reading (the core, the HTTP transport) and those that judge the request (era selection,
    the 2026-07-28 header rules) read of it. Read-only for all of them."""

    @property
    def raw(self) -> msgspec.Raw:
        """The params this is a reading of: the request's own ``params`` object, so that
        ``reading.raw is ctx.params`` tells whether the reading is still theirs."""
        ...

    @property
    def name(self) -> str:
        """The tool's name (``params.name``): what ``Mcp-Name`` must match and what the
        tool's ``Mcp-Param-*`` rules are looked up by."""
        ...

    @property
    def meta(self) -> dict[str, Any] | None:
        """``params._meta``, decoded (None when absent): era selection reads its protocol
        version and client capabilities (2026-07-28 basic/index), the handler its progress
        token."""
        ...

    @property
    def arguments(self) -> msgspec.Struct | msgspec.UnsetType:
        """The arguments, decoded by the tool's own struct (UNSET when the call sent none).
        Not what the client sent byte for byte: ``Mcp-Param-*`` headers are matched against
        the arguments as sent, so a tool with such rules is judged by the general reading."""
        ...
