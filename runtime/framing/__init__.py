"""Sans-IO framing: bytes in, frames out. No trio, no msgspec, no I/O.

NDJSON (MCP stdio), Content-Length (LSP base protocol) and server-sent events (WHATWG HTML).
Every framer has a size cap and reports bad input as :class:`FramingError` with a byte offset
and an excerpt for logs; :func:`loggable` renders any text a peer chose for a one-line log.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import FramingError, escape_excerpt
from ._logsafe import REDACTED, escape_json_text, loggable, redact_url
from ._ndjson import NdjsonFramer
from ._protocol import DEFAULT_MAX_FRAME_SIZE, Framer

if TYPE_CHECKING:
    from ._content_length import DEFAULT_MAX_HEADER_SIZE, ContentLengthFramer
    from ._sse import SSEDecoder, SSEEvent, encode_sse_comment, encode_sse_event

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_HEADER_SIZE",
    "REDACTED",
    "ContentLengthFramer",
    "Framer",
    "FramingError",
    "NdjsonFramer",
    "SSEDecoder",
    "SSEEvent",
    "encode_sse_comment",
    "encode_sse_event",
    "escape_excerpt",
    "escape_json_text",
    "loggable",
    "redact_url",
]

#: Loaded on first use (PEP 562): an NDJSON server (stdio's default) never needs the
#: Content-Length framer or the SSE codec, and importing them would cost every
#: ``mcp-runtime serve`` start-up time (benchmarks/README.md, "Start-up";
#: tests/test_startup.py keeps them lazy).
_LAZY = {
    **dict.fromkeys(("DEFAULT_MAX_HEADER_SIZE", "ContentLengthFramer"), "._content_length"),
    **dict.fromkeys(("SSEDecoder", "SSEEvent", "encode_sse_comment", "encode_sse_event"), "._sse"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
