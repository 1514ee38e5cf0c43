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

__all__ = ["BadMessage", "ClientError", "PeerError", "RequestTimeout", "TransportLost"]


class ClientError(Exception):
    """Base class of every error ``runtime.client`` raises."""


class TransportLost(ClientError):
    """The transport failed. ``attempts`` counts the connection attempts the backoff policy
    made before giving up (0 when it did not try to reconnect). A stdio server that ended
    leaves its ``exit_status`` and its last ``stderr`` lines (None and () otherwise): a
    server that could not start says why there (``mcp-runtime serve`` in one line)."""

    def __init__(
        self,
        message: str,
        *,
        attempts: int = 0,
        exit_status: int | None = None,
        stderr: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.exit_status = exit_status
        self.stderr = stderr

    def restated(self, message: str) -> TransportLost:
        """The same loss in other words (the caller's context added), its details kept."""
        return TransportLost(
            message, attempts=self.attempts, exit_status=self.exit_status, stderr=self.stderr
        )


class RequestTimeout(ClientError):
    """No answer within the request's timeout; ``method`` and ``timeout`` say which."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"{method}: no answer within {timeout:g} s")
        self.method = method
        self.timeout = timeout


class PeerError(ClientError):
    """A JSON-RPC error response from the server."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class BadMessage(ClientError):
    """The server sent something that is not a valid MCP message."""
