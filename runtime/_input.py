"""Asking the client for input from inside a handler, in both eras.

Handshake era: a server-to-client request (``elicitation/create``, ``sampling/
createMessage``, ``roots/list``) on the connection, correlated by id, with a timeout.
Modern era (2026-07-28 basic/patterns/mrtr): the handler stops with :class:`InputRequired`;
the client answers in a retry carrying ``inputResponses`` and the sealed ``requestState``,
and the handler runs again from the top, getting each earlier answer back from the same
``ask`` call (answers are keyed by the order of the calls, or by an explicit ``key``).
"""

from __future__ import annotations

import secrets
from typing import Any, Final

from .core import MISSING_CLIENT_CAPABILITY, JSONRPCError

__all__ = ["INPUT_METHODS", "InputRequired", "InputRound", "required_capability"]

#: Requests that may answer with an InputRequiredResult (2026-07-28 mrtr, "Supported
#: Requests"); any other request asking for input is a server bug.
INPUT_METHODS: Final = frozenset({"tools/call", "resources/read", "prompts/get"})


class InputRequired(Exception):
    """Raised inside a modern-era handler to answer ``resultType: "input_required"``.

    ``requests`` maps keys to ``{"method": ..., "params": ...}`` request objects. Raise it
    yourself to ask for several inputs at once; ``Context.ask`` raises it for you.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(f"input required: {sorted(requests)}")
        self.requests = requests


class InputRound:
    """The answers a modern retry brought (sealed earlier ones plus ``inputResponses``).

    ``keys`` are the keys given to unkeyed asks so far, in call order (from the sealed
    state): a rerun handler's n-th ask gets the n-th again; a new ask gets a random one, so
    a client cannot answer a question before it is asked (issue 16 item 5)."""

    __slots__ = ("calls", "keys", "responses")

    def __init__(self, responses: dict[str, Any], keys: list[str] | None = None) -> None:
        self.responses = responses
        self.keys = keys if keys is not None else []
        self.calls = 0

    def next_key(self, method: str) -> str:
        self.calls += 1
        if self.calls <= len(self.keys):
            return self.keys[self.calls - 1]
        key = f"{method.split('/', 1)[0]}-{secrets.token_hex(8)}"
        self.keys.append(key)
        return key


def required_capability(method: str, params: dict[str, Any]) -> tuple[str, ...]:
    """The client capability path a server-to-client request needs."""
    if method == "elicitation/create":
        return ("elicitation", "url") if params.get("mode") == "url" else ("elicitation",)
    if method == "sampling/createMessage":
        return ("sampling",)
    if method == "roots/list":
        return ("roots",)
    raise ValueError(f"{method!r} is not a request a server may send to a client")


def check_capability(capabilities: dict[str, Any], path: tuple[str, ...]) -> None:
    """Raise -32021 naming the capability when the client did not declare it."""
    node: Any = capabilities
    for part in path:
        if not isinstance(node, dict) or part not in node:
            required: dict[str, Any] = {}
            cursor = required
            for name in path[:-1]:
                cursor = cursor.setdefault(name, {})
            cursor[path[-1]] = {}
            raise JSONRPCError(
                MISSING_CLIENT_CAPABILITY,
                f"The client did not declare the {'.'.join(path)} capability",
                {"requiredCapabilities": required},
            )
        node = node[part]
