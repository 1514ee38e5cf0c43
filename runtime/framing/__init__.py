"""Sans-IO framing: bytes in, frames out. No trio, no msgspec, no I/O.

NDJSON (MCP stdio), Content-Length (LSP base protocol) and server-sent events (WHATWG HTML).
Every framer has a size cap and reports bad input as :class:`FramingError` with a byte offset
and an excerpt for logs.
"""

from ._content_length import DEFAULT_MAX_HEADER_SIZE, ContentLengthFramer
from ._errors import FramingError, escape_excerpt
from ._ndjson import NdjsonFramer
from ._protocol import DEFAULT_MAX_FRAME_SIZE, Framer
from ._sse import SSEDecoder, SSEEvent, encode_sse_comment, encode_sse_event

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_HEADER_SIZE",
    "ContentLengthFramer",
    "Framer",
    "FramingError",
    "NdjsonFramer",
    "SSEDecoder",
    "SSEEvent",
    "encode_sse_comment",
    "encode_sse_event",
    "escape_excerpt",
]
