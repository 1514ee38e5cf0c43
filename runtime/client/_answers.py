"""What the client answers when the server asks: the application's handlers for
server-to-client requests (sampling, elicitation in form and URL modes, roots), the
capabilities they declare, and the 2026-07-28 input rounds they answer.

Handshake era (2025-11-25 client/sampling, client/elicitation, client/roots): the server
sends a JSON-RPC request and the handler's return value is the result. 2026-07-28: the
server never sends requests; a result with ``resultType: "input_required"`` lists
``inputRequests`` (each a method and params) that the same handlers answer, and the client
re-sends the request with ``inputResponses`` (``Caller.call``; a task's go through
``tasks/update``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..protocol import ELICITATION_CREATE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE, method_not_found
from ._errors import ClientError, PeerError

__all__ = ["Answers", "RequestHandler"]

#: A handler for one kind of server-to-client request: gets ``params``, returns the result.
RequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]


class Answers:
    """The handlers the application gave (each optional; giving one declares it).

    One table for both eras, so a handler written once answers a handshake-era request
    (``server_request``, called by the conversation's ``ServerRequests``, which turns what
    it raises into the JSON-RPC error answered) and a 2026-07-28 input request
    (``input_requests``, called by the ``Caller``, where what a handler raises ends the
    user's request). The capabilities are fixed when the client is made: they declare
    exactly the handlers given, no more.
    """

    def __init__(
        self,
        *,
        sampling: RequestHandler | None = None,
        elicitation: RequestHandler | None = None,
        roots: RequestHandler | None = None,
    ) -> None:
        self._handlers: dict[str, RequestHandler] = {}
        #: The client capabilities these handlers declare (``initialize`` /
        #: ``_meta[".../clientCapabilities"]``).
        self.capabilities: dict[str, Any] = {}
        if sampling is not None:
            self._handlers[SAMPLING_CREATE_MESSAGE] = sampling
            self.capabilities["sampling"] = {}
        if elicitation is not None:
            self._handlers[ELICITATION_CREATE] = elicitation
            self.capabilities["elicitation"] = {"form": {}, "url": {}}
        if roots is not None:
            self._handlers[ROOTS_LIST] = roots
            self.capabilities["roots"] = {"listChanged": False}

    async def server_request(self, method: str, params: dict[str, Any]) -> Any:
        """Answer a server-to-client request; -32601 for one no handler takes (as the
        server answers an unknown method: ``runtime.protocol.method_not_found``)."""
        handler = self._handlers.get(method)
        if handler is None:
            refused = method_not_found(method)
            raise PeerError(refused.code, refused.message, refused.data)
        return await handler(params)

    async def input_requests(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """The ``inputResponses`` for a 2026-07-28 ``inputRequests`` map (same keys)."""
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            handler = self._handlers.get(str(method))
            if handler is None:
                raise ClientError(
                    f"the server asked for {method!r} input and no handler is registered for it"
                )
            answers[key] = await handler(request.get("params") or {})
        return answers
