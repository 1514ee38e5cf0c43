"""The core's view of one incoming request, handed to every handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import trio
from msgspec import Raw

from ..protocol import ModernRequest, RequestId, ToolCall
from ._session import Session

__all__ = ["Peer", "RequestContext"]


class Peer(Protocol):
    """The other end of a connection, as handlers may use it."""

    @property
    def connection_id(self) -> str: ...

    async def notify(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> None:
        """Queue a notification to the client (waits only while the write queue is full).
        ``related`` is the id of the request it was sent from, if any."""

    def start_soon(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        """Run ``fn()`` for the rest of the connection, beside its requests (not counted as
        one; cancelled when the connection ends)."""

    def at_close(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` (synchronous) once the connection has ended; at once if it has.
        RuntimeError where nothing outlives the request (like ``start_soon``)."""

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float = 60.0,
        related: RequestId | None = None,
    ) -> Any:
        """Send a server-to-client request and wait for its result.

        Raises JSONRPCError when the client answers with an error, or -32001 on timeout.
        """


class RequestContext:
    """One request or notification. ``params`` stays raw until a handler decodes it."""

    __slots__ = (
        "_make_session",
        "cancel_scope",
        "client_capabilities",
        "cut_short",
        "id",
        "in_batch",
        "meta",
        "method",
        "modern",
        "no_reply",
        "params",
        "peer",
        "prepared",
        "protocol_version",
        "session",
        "takes_pieces",
    )

    def __init__(
        self,
        method: str,
        request_id: RequestId | None,
        params: Raw | None,
        session: Session | Callable[[], Session],
        peer: Peer,
        *,
        in_batch: bool = False,
        modern: ModernRequest | None = None,
        prepared: ToolCall | None = None,
        takes_pieces: bool = False,
    ) -> None:
        """``modern``: the request's era as the transport already read it from its
        ``params._meta`` (``select_era``), set here at once rather than overwritten after
        (a modern HTTP POST builds one context per request). With it, ``session`` may be
        what makes the session, on first use of :attr:`session`."""
        self.method = method
        #: None for a notification.
        self.id = request_id
        self.params = params
        self.peer = peer
        self.in_batch = in_batch
        if modern is None:
            # (Always a Session here: only a modern request's may be made on first use; no
            # isinstance check on every handshake-era request.)
            handshake: Session = session  # type: ignore[assignment]
            self.session = handshake
            #: Set by era selection: True when the request carries modern (2026-07-28)
            #: ``_meta``.
            self.modern = False
            #: The protocol version this request is served at (modern: from its ``_meta``;
            #: handshake era: the session's negotiated version).
            self.protocol_version: str | None = handshake.protocol_version
            #: The request's decoded ``params._meta`` when era selection decoded it, else None.
            self.meta: dict[str, Any] | None = None
            #: Capabilities the client declared (per request in the modern era).
            self.client_capabilities: dict[str, Any] = handshake.client_capabilities
        else:
            if isinstance(session, Session):
                self.session = session
            else:
                self._make_session = session  # (``session`` left unset: ``__getattr__``)
            self.modern = True
            self.protocol_version = modern.version
            self.meta = modern.meta
            self.client_capabilities = modern.capabilities
        #: The reading of a ``tools/call``'s ``params`` made before the handler ran (by the
        #: stream reader, the HTTP transport or era selection), for the handler to take
        #: instead of reading them again (one pass over a 1 MiB argument); None when nothing
        #: read them. Whoever replaces ``params`` sets it to None (the middleware chain
        #: does); a reading also names the params it belongs to (``ToolCall.raw``).
        self.prepared = prepared
        #: The request's own cancel scope (None for notifications, and for a request that
        #: finished in its first step).
        self.cancel_scope: trio.CancelScope | None = None
        #: Set when the request must get no reply: the client cancelled it, or its
        #: connection is ending (MCP basic/utilities/cancellation).
        self.no_reply = False
        #: Set when the end of its connection (after the shutdown grace) cut it short: it is
        #: answered -32000 "Server is shutting down" instead of its result.
        self.cut_short = False
        #: Set by a caller that writes a reply given as ``runtime.protocol.Pieces`` as it is
        #: (a vector): the dispatcher then does not join the pieces of a result that holds
        #: them (a 16 MiB text is then copied once, by its encode).
        self.takes_pieces = takes_pieces

    if not TYPE_CHECKING:  # (mypy keeps checking every other attribute name)

        def __getattr__(self, name: str) -> Any:
            # Reached only for a slot never set: the ``session`` of a modern (2026-07-28)
            # request served alone (``dispatch_single``, one per HTTP POST), made when a
            # handler first asks; most never do. A lazy attribute here rather than a
            # property: a property costs every handshake-era request a call per use, this
            # costs them nothing (benchmarks/README.md, "A stateless request's session").
            if name == "session":
                session = self.session = self._make_session()
                return session
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<RequestContext {self.method} id={self.id!r}>"
