"""The OAuth flow's own HTTP requests, bounded: metadata, registration, tokens.

Every URL here was handed to us by a server (a ``WWW-Authenticate`` header, a metadata
document), so each request is bounded as a request to an untrusted place would be (SSRF):

- scheme: ``https``, or ``http`` to a loopback host only (OAuth 2.1 1.5 requires TLS for
  every endpoint; RFC 8252 8.3 makes the loopback exception for native apps);
- size: a URL of at most :data:`MAX_URL` characters, and an answer of at most
  ``max_bytes`` (:data:`DEFAULT_MAX_METADATA_BYTES`), refused past it before it is read;
- time: each request, connection included, within ``timeout`` seconds
  (:data:`DEFAULT_FETCH_TIMEOUT`);
- no redirects followed: a 3xx is an answer like any other (a metadata URL that moves the
  client elsewhere is how an attacker would pick the place).

The requests go over an :class:`HttpPool` of their own, opened for one flow and closed after
it, never the link's: the MCP server's connections carry nothing but MCP.
"""

from __future__ import annotations

import ipaddress
import ssl
import urllib.parse
from collections.abc import Sequence
from types import TracebackType
from typing import Final

import trio

from ._auth import AuthorizationFailed
from ._errors import ClientError
from ._http import HttpPool, Url

__all__ = [
    "DEFAULT_FETCH_TIMEOUT",
    "DEFAULT_MAX_METADATA_BYTES",
    "MAX_URL",
    "Answer",
    "OAuthHttp",
    "check_url",
    "is_loopback",
]

#: Seconds one OAuth request may take, connecting included (``OAuth(fetch_timeout=)``): the
#: same bound the resource server puts on its JWKS fetch (runtime.auth, 10 s).
DEFAULT_FETCH_TIMEOUT: Final = 10.0
#: Bytes one answer may have (``OAuth(max_metadata_bytes=)``): metadata, a registration or
#: a token answer is a few KiB; 256 KiB is the resource server's JWKS bound too.
DEFAULT_MAX_METADATA_BYTES: Final = 256 * 1024
#: Longest URL the flow follows: RFC 9110 4.1 recommends senders and recipients support
#: 8000 octets; metadata URLs are short, and a huge one is a sign of abuse.
MAX_URL: Final = 8000


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, what: str) -> Url:
    """``url`` parsed, or :class:`AuthorizationFailed` naming ``what`` it was for."""
    if len(url) > MAX_URL:
        raise AuthorizationFailed(f"the {what} URL is longer than {MAX_URL} characters")
    try:
        parsed = Url.parse(url)
        fragment = urllib.parse.urlsplit(url).fragment
    except ValueError:
        raise AuthorizationFailed(f"the {what} URL {url[:200]!r} is not an http(s) URL") from None
    if fragment:
        raise AuthorizationFailed(f"the {what} URL {url[:200]!r} has a fragment")
    if parsed.scheme != "https" and not is_loopback(parsed.host):
        raise AuthorizationFailed(
            f"the {what} URL {url[:200]!r} is not https (only a loopback host may use http)"
        )
    return parsed


class Answer:
    """A whole answer: ``status``, ``headers`` (lower-case names), ``body``."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class OAuthHttp:
    """``async with OAuthHttp(...) as http``: bounded requests over a pool of their own."""

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_FETCH_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_METADATA_BYTES,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._pool = HttpPool(
            connect_timeout=timeout, read_timeout=timeout, ssl_context=ssl_context
        )
        #: Every URL requested, in order (diagnostics and the tests: what discovery tried).
        self.requested: list[tuple[str, str]] = []

    async def __aenter__(self) -> OAuthHttp:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._pool.aclose()

    async def request(
        self,
        method: str,
        url: str,
        what: str,
        *,
        body: bytes = b"",
        headers: Sequence[tuple[str, str]] = (),
        content_type: str | None = None,
    ) -> Answer:
        """One exchange, bounded (module docstring). A transport failure or a timeout is
        :class:`AuthorizationFailed` naming ``what`` was asked and where (never the body)."""
        parsed = check_url(url, what)
        self.requested.append((method, url))
        sent = [("Accept", "application/json"), *headers]
        if content_type is not None:
            sent.append(("Content-Type", content_type))
        try:
            with trio.fail_after(self.timeout):
                response = await self._pool.exchange(parsed, method, sent, body, reserved=True)
                try:
                    data = await response.read_all(self.max_bytes)
                finally:
                    await response.aclose()
        except trio.TooSlowError:
            raise AuthorizationFailed(
                f"the {what} at {_where(url)} did not answer within {self.timeout:g} s"
            ) from None
        except ClientError as exc:
            raise AuthorizationFailed(f"the {what} at {_where(url)}: {exc}") from None
        return Answer(response.status, dict(response.headers), data)


def _where(url: str) -> str:
    """A URL as errors name it: origin and path, never its query (it may hold a code)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"[:200]
