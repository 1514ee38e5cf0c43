"""The seam between the HTTP links and an authorization scheme (OAuth 2.1: :class:`OAuth`).

MCP basic/authorization (2025-06-18 onward), "Access Token Usage": the client sends its token
in the ``Authorization`` header of *every* HTTP request, and a server that refuses one answers
401 (no token, or an invalid or expired one) or 403 (``insufficient_scope``) with an RFC 6750
``WWW-Authenticate`` challenge. The link knows nothing of tokens: before each exchange it asks
the scheme for its headers, and it tells the scheme about a 401/403 and sends the request
again with fresh headers, at most :data:`MAX_AUTH_RETRIES` times. A refused request was not
processed (RFC 6750 3.1), so sending it again is safe for any method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Protocol

from ._errors import ClientError
from ._http import HttpPool, HttpResponse, Url

__all__ = ["MAX_AUTH_RETRIES", "Auth", "AuthorizationFailed", "authorized_exchange"]

#: Times one request is sent again after a 401/403 that the scheme answered (a new token, a
#: refreshed one, a step-up). The specification's step-up flow asks for "no more than a few"
#: retries and then a permanent failure (2025-11-25 basic/authorization "Step-Up
#: Authorization Flow"); a server that refuses every token must not loop the client.
MAX_AUTH_RETRIES: Final = 3
#: Bytes read of a refused response's body before its connection is reused or closed.
_REFUSAL_BODY: Final = 16 * 1024


class AuthorizationFailed(ClientError):
    """The client could not get (or keep) the authorization the server asks for: discovery
    failed, the authorization server refused, the user did not log in in time, or the server
    still refuses the token after :data:`MAX_AUTH_RETRIES` new ones. The message says which;
    it never holds a token, a code or a secret. ``status``: the HTTP status of the refusal
    that started it (401 or 403), 0 when none did."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Auth(Protocol):
    """What an HTTP link needs of an authorization scheme.

    Both methods may wait (a refresh, a login in the browser); the link's request timeout
    bounds them. Cancelled, they leave the scheme as it was (a refresh cut short is tried
    again by the next request). Many requests may call them at once: the scheme runs one
    refresh or login at a time and lets the others wait for its outcome."""

    async def headers(self, method: str, url: str) -> Sequence[tuple[str, str]]:
        """The headers that authorize one request (``Authorization``; none before the
        first login). A token about to expire is refreshed first."""
        ...

    async def challenged(
        self,
        status: int,
        response_headers: Mapping[str, str],
        sent: Sequence[tuple[str, str]],
    ) -> None:
        """The server refused a request that carried ``sent`` with ``status`` (401 or 403)
        and these headers (``www-authenticate``, lower-case keys). Returns once fresh
        headers are ready (the link then sends the request again); raises
        :class:`AuthorizationFailed` when no new authorization can help."""
        ...


async def authorized_exchange(
    pool: HttpPool,
    auth: Auth | None,
    url: Url,
    method: str,
    headers: Sequence[tuple[str, str]],
    body: bytes = b"",
    *,
    reserved: bool = False,
) -> HttpResponse:
    """``pool.exchange`` with ``auth``'s headers, answering 401/403 through ``auth`` and
    sending the request again (see the module docstring). Without ``auth`` it is the plain
    exchange. Raises :class:`AuthorizationFailed` when the scheme gives up or the server
    still refuses after :data:`MAX_AUTH_RETRIES` new authorizations."""
    if auth is None:
        return await pool.exchange(url, method, headers, body, reserved=reserved)
    target = f"{url.scheme}://{url.authority}{url.target}"
    retries = 0
    while True:
        sent = list(await auth.headers(method, target))
        response = await pool.exchange(url, method, [*headers, *sent], body, reserved=reserved)
        if response.status not in (401, 403):
            return response
        status, response_headers = response.status, dict(response.headers)
        try:  # read to its end, so that the connection can carry the retry
            await response.read_all(_REFUSAL_BODY)
        except ClientError:
            pass
        finally:
            await response.aclose()
        if retries == MAX_AUTH_RETRIES:
            raise AuthorizationFailed(
                f"the server still refuses the request after {MAX_AUTH_RETRIES} new "
                f"authorizations (HTTP {status})",
                status=status,
            )
        retries += 1
        await auth.challenged(status, response_headers, sent)
