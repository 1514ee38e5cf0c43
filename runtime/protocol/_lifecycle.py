"""The MCP lifecycle of one connection or session, as a plain state machine (no I/O).

Every rule about *when* a message may be served lives here, in one table, so that the
stream reader, HTTP sessions and the WebSocket transport apply the same rules:

=============  ==============================================================================
state          meaning
=============  ==============================================================================
NEW            nothing negotiated yet. Modern (2026-07-28) requests are served in any state:
               they carry their own revision and need no session (basic/versioning).
INITIALIZING   ``initialize`` was answered with a revision; ``notifications/initialized`` has
               not arrived. 2025-11-25 basic/lifecycle: the client "SHOULD NOT send requests
               other than pings" before it; we serve them anyway, as the SDKs do (a server
               MUST NOT be stricter than the ecosystem's clients in practice; doubt noted).
OPERATING      the handshake is complete.
=============  ==============================================================================

Rules applied per request (``admit``):

- Before ``initialize`` a handshake-era client sends nothing but pings (2025-11-25
  basic/lifecycle): any other known request is refused with -32600 and the connection lives
  on, as the official SDK refuses it (``before_initialize``, applied by the dispatcher once it
  knows the request is not a modern one).
- ``initialize`` MUST NOT be part of a JSON-RPC batch (2025-03-26 basic/lifecycle) and is
  answered once per session: a second one is -32600.
- Methods of one era are unknown in the other (-32601, decided by the dispatcher with
  ``HANDSHAKE_ONLY`` / ``MODERN_ONLY``, since the era is known only after ``_meta`` is read).
- ``initialize`` MUST NOT be cancelled by the client (basic/utilities/cancellation):
  ``may_cancel`` says no for it.
- Batches: every revision over streams; over HTTP only at ``BATCH_REVISION`` (``batches``).

Like h11's state machine, this object only answers and records; the caller acts.
"""

from __future__ import annotations

from typing import Final

from ._errors import INVALID_REQUEST, JSONRPCError, invalid_request
from ._methods import INITIALIZE, PING
from ._versions import BATCH_REVISION, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION

__all__ = ["INITIALIZING", "NEW", "OPERATING", "Lifecycle", "batch_refusal"]

#: Handshake-era requests served before ``initialize``.
BEFORE_INITIALIZE: Final = frozenset({INITIALIZE, PING})

NEW: Final = "new"
INITIALIZING: Final = "initializing"
OPERATING: Final = "operating"


class Lifecycle:
    """The handshake state of one connection (stdio, TCP, WebSocket) or HTTP session."""

    __slots__ = ("state", "version")

    def __init__(self) -> None:
        self.state: str = NEW
        #: The negotiated handshake-era revision (None until ``initialize`` succeeded).
        self.version: str | None = None

    def __repr__(self) -> str:
        return f"<Lifecycle {self.state} version={self.version}>"

    # -- events -----------------------------------------------------------------------------

    def admit(self, method: str, *, in_batch: bool) -> JSONRPCError | None:
        """The refusal for a request that must not start in this state, or None."""
        if method == INITIALIZE and in_batch:
            return invalid_request("initialize must not be part of a JSON-RPC batch")
        return None

    def before_initialize(self, method: str) -> JSONRPCError | None:
        """The refusal of a handshake-era request that needs the session ``initialize``
        opens, while there is none yet; None when it may be served."""
        if self.version is None and method not in BEFORE_INITIALIZE:
            return invalid_request(
                f"{method} before initialize (send initialize first, or the 2026-07-28 "
                "per-request _meta)"
            )
        return None

    def initialize(self, requested: str) -> str:
        """``initialize`` asked for revision ``requested``: negotiate, record, return it.

        Raises -32600 when this session already negotiated one."""
        if self.version is not None:
            raise JSONRPCError(INVALID_REQUEST, "Session is already initialized")
        self.version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
        self.state = INITIALIZING
        return self.version

    def initialized(self) -> None:
        """``notifications/initialized`` arrived (ignored before ``initialize``)."""
        if self.state == INITIALIZING:
            self.state = OPERATING

    # -- questions --------------------------------------------------------------------------

    @staticmethod
    def may_cancel(method: str) -> bool:
        """Whether ``notifications/cancelled`` may cancel a request for ``method``."""
        return method != INITIALIZE

    def batches(self, *, http: bool) -> str | None:
        """Why a batch is refused in this state (None: allowed)."""
        return batch_refusal(self.version, http=http)


def batch_refusal(version: str | None, *, http: bool) -> str | None:
    """Why a JSON-RPC batch is refused at revision ``version`` (None: allowed): streams take
    batches in every revision, HTTP only at ``BATCH_REVISION`` (2025-03-26 added them,
    2025-06-18 removed them: "Remove support for JSON-RPC batching", its changelog)."""
    if not http or version == BATCH_REVISION:
        return None
    return (
        f"Invalid Request: JSON-RPC batches are not allowed in protocol revision "
        f"{version} (only {BATCH_REVISION})"
    )
