"""What an observer learns of a message answered before any middleware ran.

Some answers are given before a request reaches the dispatcher's chain: a frame that is
not JSON-RPC (-32700/-32600), the in-flight cap (-32010), a duplicate id or a request before
``initialize`` (-32600), a batch the revision forbids, an unsupported protocol version
(-32022), and on HTTP the transport's own refusals (shutting down 503, missing session 400,
unknown session 404, too many sessions 503, the 2026-07-28 header rules 400, ...).

The core and the transports describe each one as a :class:`Refusal` and hand it to the
dispatcher's ``on_refusal`` observer when one is installed (``runtime.middleware``: a
``Middleware.on_refusal`` hook); with none installed they build nothing.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Refusal"]


class Refusal(msgspec.Struct, frozen=True):
    """One refused message. ``code`` is the JSON-RPC error code of the answer (None for an
    HTTP refusal without a JSON-RPC body, or a refusal that gets no answer: a notification);
    ``status`` the HTTP status (None off HTTP); ``method`` and ``request_id`` as far as the
    message was read before it was refused; ``close_code`` the WebSocket close code when the
    refusal closed the socket (RFC 6455 section 7.4.1: 1003, 1008, 1009, 1002, 1007);
    ``peer`` the remote address (``host:port``) when the transport knows it.

    A frozen msgspec Struct (msgspec builds it in C) rather than a frozen dataclass, whose
    generated methods would be compiled at every start-up, observer or not
    (benchmarks/README.md, "Start-up").
    """

    code: int | None
    message: str
    transport: str
    connection_id: str
    method: str | None = None
    request_id: Any = None
    status: int | None = None
    principal: Any = None
    close_code: int | None = None
    peer: str | None = None
