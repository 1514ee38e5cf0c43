"""Protocol state shared by the requests of one connection (stdio, TCP) or HTTP session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol import OPERATING, Lifecycle

__all__ = ["Session"]


class Session:
    """What the handshake negotiated, plus room for handler state.

    Handshake-era (2024-11-05..2025-11-25) state is filled in by ``initialize``; a modern
    (2026-07-28) request carries its own version and capabilities and leaves this untouched.
    """

    __slots__ = (
        "client_capabilities",
        "client_info",
        "close_stream",
        "first_request_id",
        "lifecycle",
        "log_level",
        "principal",
        "shared_id",
        "state",
        "transport",
    )

    def __init__(self, transport: str = "stream", principal: Any = None) -> None:
        #: The transport kind: "stdio", "tcp", "unix", "memory", "http", "ws", ...
        self.transport = transport
        #: The handshake state machine (``runtime.protocol.Lifecycle``).
        self.lifecycle = Lifecycle()
        self.client_info: dict[str, Any] | None = None
        self.client_capabilities: dict[str, Any] = {}
        #: Minimum level set by ``logging/setLevel`` (None: the client asked for nothing).
        self.log_level: str | None = None
        #: Who is calling, as the transport's authentication established it (for HTTP with
        #: ``auth=``: a ``runtime.auth.AccessToken``); None when unauthenticated.
        self.principal = principal
        #: Free-form per-session state for handlers and user code.
        self.state: dict[str, Any] = {}
        #: Set by a transport whose responses are resumable streams (Streamable HTTP
        #: sessions): ends the response stream of the request with this id early; the
        #: client resumes it with Last-Event-ID. Returns False when there is none.
        self.close_stream: Callable[[Any], bool] | None = None
        #: The id of the first request this side sends the client (then counting up). A
        #: session served by several replicas gives each copy a random start, so that a
        #: client's response, routed to every copy, answers only the one that asked.
        self.first_request_id = 1
        #: The id under which replicas share this session (an HTTP ``Mcp-Session-Id`` over
        #: a shared store, ``runtime.stores``), else None: what the session's tasks belong
        #: to, so that any replica finds them (2025-11-25 tasks are session-scoped).
        self.shared_id: str | None = None

    @property
    def protocol_version(self) -> str | None:
        """The revision ``initialize`` negotiated (None before it, and for modern requests)."""
        return self.lifecycle.version

    @property
    def initialized(self) -> bool:
        """True once ``notifications/initialized`` completed the handshake."""
        return self.lifecycle.state == OPERATING

    def __repr__(self) -> str:
        return f"<Session {self.transport} version={self.protocol_version}>"
