"""``DecodedFrame``: a frame its transport has decoded and judged already.

A connection's reader decodes the frames it receives (``decode_frame``) and judges them
(``classify``, ``batch_shape_error``, ``decode_item`` per batch item). A transport that had to
read a message itself before handing it on (an HTTP POST to a handshake-era session: its era,
its ids and its batch shape decide how the POST is answered) hands the reader what it read
instead of the bytes, so that every message is decoded once and every rule judged once.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Raw

from ._errors import JSONRPCError
from ._jsonrpc import Envelope
from ._tool_call import ToolCall

__all__ = ["DecodedFrame"]


class DecodedFrame:
    """One frame as its transport read it: exactly one of

    - ``message`` an envelope, classified as ``kind`` (``Kind``), with ``call`` the reading
      of its params when it is a ``tools/call`` read in its tool's typed pass (for
      ``ctx.prepared``);
    - ``message`` a batch: with ``read``, its well-formed items, judged (shape, each item,
      ids; ``split_batch``), ``read`` giving every item's envelope and reading by index,
      the items refused being the transport's to answer; without, the batch as decoded,
      for the reader to judge as any batch it reads;
    - ``error``: valid JSON that is not an acceptable message, for the reader to answer as
      it answers such a frame it decoded itself.

    ``body`` is the frame's bytes, for the log lines that quote an excerpt of a bad one. The
    envelopes' ``Raw`` members are views of it: it must outlive them (an HTTP body does:
    ``_server`` never reads the next body over bytes still referenced).
    """

    __slots__ = ("body", "call", "error", "kind", "message", "read")

    def __init__(
        self,
        body: bytes | memoryview,
        message: Envelope | list[Raw] | None = None,
        kind: int | None = None,
        call: ToolCall | None = None,
        read: Mapping[int, tuple[Envelope, ToolCall | None]] | None = None,
        error: JSONRPCError | None = None,
    ) -> None:
        self.body = body
        self.message = message
        self.kind = kind
        self.call = call
        self.read = read
        self.error = error

    def __repr__(self) -> str:
        shape = "batch" if isinstance(self.message, list) else f"kind={self.kind}"
        return f"<DecodedFrame {shape} bytes={len(self.body)}>"
