"""Bearer-token authentication for the HTTP and WebSocket transports (``runtime.auth``).

MCP 2025-11-25 / 2026-07-28 basic/authorization: the server is an OAuth 2.1 resource
server. Every HTTP request is authenticated ("authorization MUST be included in every HTTP
request from client to server, even if they are part of the same logical session"), a
``tools/call`` is checked against that tool's scopes once the body has named it, and the
RFC 9728 metadata document is served, without authentication, at every well-known path.
Refusals are ``runtime.auth.AuthError`` responses sent exactly as built there (401/403/400
with their ``WWW-Authenticate`` challenge). The token never reaches a log line: only the
principal (subject, client id, scopes) is kept.

The older generic hook, ``authenticate(headers) -> principal | refusal``, still works; a
server takes one or the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec
from msgspec import Raw

from ...auth import (
    AccessToken,
    AuthConfig,
    AuthError,
    Route,
    RouteRequest,
    authenticate,
    authorize,
)
from ...protocol import TOOLS_CALL, Envelope, JSONRPCError, decode_item
from ._exchange import Exchange, HttpError, HttpRequest, as_refusal, principal_key

__all__ = ["Authenticate", "Gate", "calls_in"]


class _Named(msgspec.Struct):
    name: Any = None


_named: Final = msgspec.json.Decoder(_Named)


def calls_in(message: Envelope | list[Raw]) -> list[Envelope]:
    """The envelopes of a decoded body (``runtime.protocol.decode_frame``): itself, or each
    batch item that decodes (the others are answered as errors elsewhere)."""
    if not isinstance(message, list):
        return [message]
    found = []
    for item in message:
        try:
            found.append(decode_item(item))
        except JSONRPCError:
            continue
    return found


def _tool_name(env: Envelope) -> str | None:
    if env.method != TOOLS_CALL or not isinstance(env.params, Raw):
        return None
    try:
        name = _named.decode(env.params).name
    except (msgspec.DecodeError, RecursionError):  # (nested deeper than msgspec follows)
        return None
    return name if isinstance(name, str) else None


#: ``authenticate(headers) -> principal``; raise (or return) an HttpError / AuthError to
#: refuse (e.g. 401 with ``WWW-Authenticate``). Headers are lower-cased names.
Authenticate = Callable[[dict[str, str]], Awaitable[Any]]


def _refusal(error: AuthError) -> HttpError:
    refusal = as_refusal(error)
    assert refusal is not None
    return refusal


class Gate:
    """Who may use the server: ``auth`` (``runtime.auth.AuthConfig``), the generic
    ``authenticate`` hook, or nobody checks (both None)."""

    def __init__(self, auth: AuthConfig | None = None, hook: Authenticate | None = None):
        if auth is not None and hook is not None:
            raise ValueError("pass either auth=AuthConfig(...) or authenticate=..., not both")
        self.auth = auth
        self.hook = hook
        #: Whether anyone checks (a plain attribute: read on every request).
        self.enabled = auth is not None or hook is not None
        #: Request path -> RFC 9728 document (root and path-inserted forms).
        self.metadata: dict[str, bytes] = {}
        #: Request path -> an endpoint of an authorization server served beside MCP's
        #: (``AuthConfig.routes``), answered by ``serve_route`` without a token.
        self.routes: dict[str, Route] = {}
        if auth is not None:
            document = auth.resource_metadata.document_json()
            self.metadata = dict.fromkeys(auth.resource_metadata.well_known_paths(), document)
            self.routes = dict(auth.routes)

    async def serve_route(self, route: Route, request: HttpRequest, exchange: Exchange) -> None:
        """Answer ``request`` with ``route`` (plain request and response, no transport type
        crosses; see ``runtime.auth.RouteRequest``)."""
        plain = RouteRequest(request.method, request.target, request.fields, bytes(request.body))
        response = await route(plain)
        await exchange.respond(
            response.status,
            response.body,
            content_type=response.content_type,
            headers=list(response.headers),
        )

    async def check(
        self, authorization: str | None, target: str, headers: Iterable[tuple[str, str]]
    ) -> tuple[Any, Any]:
        """(session key, principal) of a request, or raise the HttpError refusing it.

        ``authorization``: every ``Authorization`` field joined with ", " (several are
        then refused as malformed); ``target`` is passed so that a token in the query is
        refused. Awaits the verifier once; cancellation propagates.
        """
        if self.auth is not None:
            query = urlsplit(target).query
            result = await authenticate(self.auth, authorization, query=query or None)
            if isinstance(result, AuthError):
                raise _refusal(result)
            return principal_key(result), result
        if self.hook is not None:
            result = await self.hook(dict(headers))
            refusal = as_refusal(result)
            if refusal is not None:
                raise refusal
            return principal_key(result), result
        return None, None

    async def check_request(self, request: HttpRequest) -> tuple[Any, Any]:
        return await self.check(request.header("authorization"), request.target, request.headers)

    def authorization_error(self, principal: Any, messages: Iterable[Envelope]) -> AuthError | None:
        """The 403 for the first ``tools/call`` in ``messages`` whose tool needs scopes the
        principal lacks, else None."""
        if self.auth is None or not isinstance(principal, AccessToken):
            return None
        for message in messages:
            name = _tool_name(message)
            if name is not None:
                refusal = authorize(self.auth, principal, tool=name)
                if refusal is not None:
                    return refusal
        return None

    def check_tools(self, principal: Any, messages: Iterable[Envelope]) -> None:
        """Raise the 403 ``insufficient_scope`` refusal for a ``tools/call`` the principal
        may not make (each item of a batch is checked)."""
        refusal = self.authorization_error(principal, messages)
        if refusal is not None:
            raise _refusal(refusal)
