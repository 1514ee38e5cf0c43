"""The client's exceptions, split by who is at fault.

- :class:`TransportLost`: the connection to the server broke (or never came up) and the
  reconnection policy gave up, or the request could not safely be sent again.
- :class:`RequestTimeout`: the server did not answer within the request's timeout (the
  request was cancelled on the server with ``notifications/cancelled``).
- :class:`PeerError`: the server answered with a JSON-RPC error (``code``, ``message``,
  ``data`` as sent).
- :class:`BadMessage`: the server sent bytes that are not MCP (bad framing, not JSON-RPC, a
  result of the wrong shape).

All of them are :class:`ClientError`. Cancellation (trio's ``Cancelled``) is never turned
into one of these.
"""

from __future__ import annotations

from typing import Any

from ..protocol import JSONRPCError

__all__ = ["BadMessage", "ClientError", "PeerError", "RequestTimeout", "TransportLost"]


class ClientError(Exception):
    """Base class of every error ``runtime.client`` raises."""


class TransportLost(ClientError):
    """The transport failed. ``attempts`` counts the connection attempts the backoff policy
    made before giving up (0 when it did not try to reconnect). A stdio server that ended
    leaves its ``exit_status`` and its last ``stderr`` lines (None and () otherwise): a
    server that could not start says why there (``mcp-runtime serve`` in one line).

    ``refused``: the server was reached and said no, or nothing is there to say anything
    (a port nothing listens on, a host name that does not resolve, HTTP 404 at the
    endpoint, a refused WebSocket handshake). Trying again in a moment cannot help a client
    that never got through, so its first connection fails at once; once connected, the same
    failure is an outage (a server restarting) and the reconnection policy applies."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int = 0,
        refused: bool = False,
        exit_status: int | None = None,
        stderr: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.refused = refused
        self.exit_status = exit_status
        self.stderr = stderr

    def restated(self, message: str) -> TransportLost:
        """The same loss in other words (the caller's context added), its details kept."""
        return TransportLost(
            message,
            attempts=self.attempts,
            refused=self.refused,
            exit_status=self.exit_status,
            stderr=self.stderr,
        )


class RequestTimeout(ClientError):
    """No answer within the request's timeout; ``method`` and ``timeout`` say which.
    ``dropped``: why a message the server sent meanwhile was dropped unread (too big, nested
    too deep) when the link could not tell which request it answered: the likely answer."""

    def __init__(self, method: str, timeout: float, *, dropped: str | None = None) -> None:
        message = f"{method}: no answer within {timeout:g} s"
        if dropped is not None:
            message += f" (meanwhile the server sent a message the client dropped: {dropped})"
        super().__init__(message)
        self.method = method
        self.timeout = timeout
        self.dropped = dropped


class PeerError(ClientError):
    """A JSON-RPC error response from the server."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def of(cls, error: JSONRPCError) -> PeerError:
        """The error a protocol builder made (``runtime.protocol``), as the client raises it:
        for a failure the client reports in the server's words (an HTTP status without a
        JSON-RPC body, say), spelled where every error is."""
        return cls(error.code, error.message, error.data)


class BadMessage(ClientError):
    """The server sent something that is not a valid MCP message."""
