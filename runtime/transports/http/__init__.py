"""HTTP transports: Streamable HTTP (both MCP eras) and legacy HTTP+SSE on the runtime's own
strict HTTP/1.1 layer.

Layers inside this package, from the bytes up:

- ``_http11``: the sans-IO HTTP/1.1 request parser and response heads.
- ``_socket``, ``_server``: one driver task per connection, deadlines, the listener.
- ``_exchange``: one request/response pair as the MCP endpoints see it.
- ``_edge``, ``_auth``, ``_slots``: Host/Origin policy, limits, authentication, connection
  slots (in all and per client address).
- ``_streams``, ``_session``: SSE response streams, event replay, handshake-era sessions.
- ``_modern``, ``_handshake``, ``_streamable``, ``_legacy``: the MCP endpoints.
- ``_serve``: ``serve_http``, which composes them.

What they need of the server is ``runtime.transports.ServerPort`` (one typed port, shared
with the WebSocket transport).

Other packages import only the names re-exported here.
"""

from __future__ import annotations

from ...stores import EventStore, MemoryEventStore
from ._auth import Authenticate, Gate, calls_in
from ._edge import EdgePolicy, HttpLimits
from ._exchange import HttpError
from ._modern import header_params
from ._serve import serve_http
from ._slots import ConnectionSlots, address_key

__all__ = [
    "Authenticate",
    "ConnectionSlots",
    "EdgePolicy",
    "EventStore",
    "Gate",
    "HttpError",
    "HttpLimits",
    "MemoryEventStore",
    "address_key",
    "calls_in",
    "header_params",
    "serve_http",
]
