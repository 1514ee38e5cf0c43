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

from ..protocol import (
    ELICITATION_CREATE,
    PROMPTS_GET,
    RESOURCES_READ,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    TOOLS_CALL,
    invalid_params,
    missing_capability,
)

__all__ = [
    "INPUT_METHODS",
    "BecomeTask",
    "InputRequired",
    "InputRound",
    "check_response",
    "required_capability",
]

#: Requests that may answer with an InputRequiredResult (2026-07-28 mrtr, "Supported
#: Requests"); any other request asking for input is a server bug.
INPUT_METHODS: Final = frozenset({TOOLS_CALL, RESOURCES_READ, PROMPTS_GET})


class InputRequired(Exception):
    """Raised inside a modern-era handler to answer ``resultType: "input_required"``.

    ``requests`` maps keys to ``{"method": ..., "params": ...}`` request objects. Raise it
    yourself to ask for several inputs at once; ``Context.ask`` raises it for you.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(f"input required: {sorted(requests)}")
        self.requests = requests


class BecomeTask(Exception):
    """Raised by ``Context.become_task`` in a deferred-task tool: the request answers
    ``CreateTaskResult`` and the tool runs again as the task with ``responses`` (the answers
    its input rounds gathered so far)."""

    def __init__(self, responses: dict[str, Any]) -> None:
        super().__init__("become a task")
        self.responses = responses


class InputRound:
    """The answers a modern retry brought (sealed earlier ones plus ``inputResponses``).

    ``state`` is the handler's own data (``Context.request_state``), sealed into the next
    requestState. ``keys`` are the keys given to unkeyed asks so far, in call order (from
    the sealed state): a rerun handler's n-th ask gets the n-th again; a new ask gets a random
    one, so a client cannot answer a question before it is asked (and skip a round)."""

    __slots__ = ("calls", "keys", "responses", "state")

    def __init__(
        self,
        responses: dict[str, Any],
        state: dict[str, Any] | None = None,
        keys: list[str] | None = None,
    ) -> None:
        self.responses = responses
        #: The handler's own data, sealed into the next requestState (Context.request_state).
        self.state: dict[str, Any] = state if state is not None else {}
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
    if method == ELICITATION_CREATE:
        return ("elicitation", "url") if params.get("mode") == "url" else ("elicitation",)
    if method == SAMPLING_CREATE_MESSAGE:
        return ("sampling",)
    if method == ROOTS_LIST:
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
            raise missing_capability(
                f"The client did not declare the {'.'.join(path)} capability", required
            )
        node = node[part]


_ACTIONS: Final = frozenset({"accept", "decline", "cancel"})


def _response_problem(method: str, value: Any) -> str | None:
    """Why ``value`` is not a result of ``method`` (the client's answer), or None."""
    if not isinstance(value, dict):
        return f"expected the {method} result object, got {type(value).__name__}"
    if method == ELICITATION_CREATE:
        # ElicitResult: action, and for "accept" an object of field values.
        if value.get("action") not in _ACTIONS:
            return 'action must be "accept", "decline" or "cancel"'
        content = value.get("content")
        if content is not None and not isinstance(content, dict):
            return "content must be an object"
    elif method == SAMPLING_CREATE_MESSAGE:
        # CreateMessageResult: a message (role, content) from the client's model.
        if not isinstance(value.get("content"), dict | list) or "role" not in value:
            return "a CreateMessageResult needs role and content"
    elif method == ROOTS_LIST and not isinstance(value.get("roots"), list):
        return "a ListRootsResult needs a roots array"
    return None


def check_response(key: str, method: str, value: Any) -> Any:
    """``value``, the client's answer to the input request ``key`` (a ``method`` request),
    or -32602 when it is not a result of that method: an answer reaches the handler only
    in the shape it asked for (2026-07-28 basic/patterns/mrtr: input responses are
    client-supplied input; SEP-2322 "validate InputResponses")."""
    problem = _response_problem(method, value)
    if problem is not None:
        raise invalid_params(f"inputResponses[{key!r}]: {problem}", key=key[:100], method=method)
    return value
