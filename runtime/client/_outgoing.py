"""What the client sends, encoded: sans-IO (no trio, no I/O), tested on the bytes it makes.

- :class:`Outgoing` is one encoded message and what a link needs to know about it (an HTTP
  link turns a request into a POST with headers derived from it).
- :class:`RequestBuilder` makes the client's requests and notifications in its era: a
  2026-07-28 request carries the revision, the client's capabilities and info in
  ``params._meta`` (basic/index, "Request Metadata"), a handshake-era one carries only what
  the caller gave; a request with a progress callback carries a progress token; a
  ``tools/call`` over 2026-07-28 mirrors the arguments its tool marks into ``Mcp-Param-*``
  headers (``ParamHeaders``). Envelopes are encoded by the protocol layer's encoders, as the
  server encodes its own.
- Which requests may go out again after a lost connection (:data:`REPEATABLE_METHODS`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from .. import __version__ as CLIENT_VERSION
from ..protocol import (
    CANCELLED,
    COMPLETION_COMPLETE,
    INITIALIZED,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROGRESS_TOKEN,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    NAMED_METHODS,
    PING,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    SERVER_DISCOVER,
    SUBSCRIPTIONS_LISTEN,
    TASKS_EXTENSION,
    TASKS_GET,
    TASKS_LIST,
    TASKS_RESULT,
    TOOLS_CALL,
    TOOLS_LIST,
    Implementation,
    RequestId,
    encode_notification,
    encode_request,
)
from ._param_headers import ParamHeaders

__all__ = [
    "CLIENT_VERSION",
    "MODERN_VERSION",
    "REPEATABLE_METHODS",
    "Outgoing",
    "RequestBuilder",
    "cancellation",
]

#: The stateless revision (2026-07-28) this client speaks: no handshake, per-request ``_meta``.
MODERN_VERSION: Final = MODERN_VERSIONS[0]

#: Requests a client may send again when it cannot know whether the first copy arrived:
#: they change nothing on the server (lists, reads, discovery, polling a task, a listen
#: stream, which the server re-acknowledges). ``tools/call`` is not among them: a tool may
#: have effects, and only the caller can say that repeating it is harmless.
REPEATABLE_METHODS: Final = frozenset(
    {
        SERVER_DISCOVER,
        PING,
        TOOLS_LIST,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        TASKS_GET,
        TASKS_LIST,
        TASKS_RESULT,
        SUBSCRIPTIONS_LISTEN,
    }
)


@dataclasses.dataclass(slots=True)
class Outgoing:
    """One message for the link, with what the HTTP link needs to know about it."""

    data: bytes
    method: str | None = None
    request_id: Any = None
    #: ``params.name`` / ``params.uri`` / ``params.taskId`` (``NAMED_METHODS``): the
    #: 2026-07-28 ``Mcp-Name`` header.
    name: str | None = None
    modern: bool = False
    repeatable: bool = False
    #: Request ids carried by a batch (``data`` is a JSON array).
    batch_ids: Sequence[Any] = ()
    #: A request (or batch of requests): the server owes an answer.
    expects_response: bool = False
    #: Extra HTTP headers for this message (2026-07-28 ``Mcp-Param-*``).
    headers: Sequence[tuple[str, str]] = ()
    #: The revision a modern message names in ``_meta`` (the HTTP link repeats it in the
    #: ``MCP-Protocol-Version`` header, which must agree).
    version: str = MODERN_VERSION


def cancellation(out: Outgoing, reason: str) -> Outgoing:
    """``notifications/cancelled`` for the request ``out`` (MCP basic/utilities/cancellation;
    over 2026-07-28 HTTP the link closes the request's response stream instead, which is
    how that revision cancels, so the message keeps the request's era)."""
    params = {"requestId": out.request_id, "reason": reason}
    return Outgoing(
        encode_notification(CANCELLED, params),
        CANCELLED,
        out.request_id,
        modern=out.modern,
        version=out.version,
    )


def progress_token(request_id: RequestId) -> str:
    """The progress token of request ``request_id`` (unique while its id is)."""
    return f"progress-{request_id}"


class RequestBuilder:
    """The client's requests and notifications, encoded for the era it speaks in.

    ``capabilities`` are those the application's handlers declare (``Answers``);
    ``tasks``: whether 2026-07-28 requests declare the tasks extension. ``log_level`` (set
    by ``Client.set_logging_level``) rides on every 2026-07-28 request; ``param_headers``
    learns from ``tools/list`` which arguments each tool mirrors into headers."""

    def __init__(
        self, client_info: Implementation, capabilities: dict[str, Any], *, tasks: bool
    ) -> None:
        self.client_info = client_info
        self.capabilities = capabilities
        self.tasks = tasks
        self.log_level: str | None = None
        self.param_headers = ParamHeaders()
        #: The stateless revision requests name: :data:`MODERN_VERSION` until a server
        #: refuses it and names another this client speaks (``Caller.raw`` retries then).
        self.version: str = MODERN_VERSION

    def modern_meta(self) -> dict[str, Any]:
        """The ``_meta`` members every 2026-07-28 request carries."""
        capabilities = dict(self.capabilities)
        if self.tasks:
            capabilities["extensions"] = {TASKS_EXTENSION: {}}
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: self.version,
            META_CLIENT_CAPABILITIES: capabilities,
            META_CLIENT_INFO: msgspec.to_builtins(self.client_info),
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    def request(
        self,
        request_id: RequestId,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        modern: bool,
        progress: bool = False,
        repeatable: bool | None = None,
    ) -> Outgoing:
        """Request ``method`` with ``params`` (a copy is sent; ``_meta`` the caller gave is
        kept, the era's members added). ``progress``: it carries a progress token
        (:func:`progress_token`). ``repeatable`` (default: :data:`REPEATABLE_METHODS`): it
        may be sent again after a lost connection."""
        body: dict[str, Any] = dict(params or {})
        if modern or progress:
            meta = dict(body.get("_meta") or {})
            if modern:
                meta.update(self.modern_meta())
            if progress:
                meta[META_PROGRESS_TOKEN] = progress_token(request_id)
            body["_meta"] = meta
        name_field = NAMED_METHODS.get(method)
        name = body.get(name_field) if name_field else None
        headers: list[tuple[str, str]] = []
        if modern and method == TOOLS_CALL and isinstance(name, str):
            headers = self.param_headers.mirror(name, body.get("arguments"))
        return Outgoing(
            encode_request(request_id, method, body if body or modern else None),
            method,
            request_id,
            name if isinstance(name, str) else None,
            modern,
            method in REPEATABLE_METHODS if repeatable is None else repeatable,
            expects_response=True,
            headers=headers,
            version=self.version,
        )

    def batch_item(
        self, request_id: RequestId, method: str, params: Mapping[str, Any] | None, *, modern: bool
    ) -> bytes:
        """One request of a JSON-RPC batch (no headers: a batch is one POST)."""
        body = dict(params or {})
        if modern:
            body["_meta"] = {**(body.get("_meta") or {}), **self.modern_meta()}
        return encode_request(request_id, method, body or None)

    def notification(
        self, method: str, params: Mapping[str, Any] | None, *, modern: bool
    ) -> Outgoing:
        return Outgoing(
            encode_notification(method, dict(params) if params is not None else None),
            method,
            modern=modern,
            version=self.version,
        )

    @staticmethod
    def initialized() -> Outgoing:
        """``notifications/initialized``, which ends the handshake (basic/lifecycle)."""
        return Outgoing(encode_notification(INITIALIZED))
