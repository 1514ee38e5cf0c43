"""``RemoteJWKS``: the authorization server's signing keys, fetched from its ``jwks_uri``.

RFC 8414 section 2 publishes an authorization server's keys at ``jwks_uri`` (RFC 7517 JWK
Set). Keys rotate: a new ``kid`` appears before tokens use it, an old one disappears after. So
the resource server keeps a copy, refetches it when the copy is older than the response's
``Cache-Control: max-age`` (clamped to ``[min_max_age, max_max_age]``), and refetches early
when a token names a ``kid`` it does not hold (``JWTVerifier`` rate-limits that by its
``jwks_refresh_interval``, so forged ``kid`` values cannot make us hammer the server).

The fetch is a trio-native HTTP/1.1 GET (TLS through ``trio.SSLStream`` with the system's
default trust store), bounded in time (``timeout``) and size (``max_bytes``); redirects are
not followed (RFC 8414 ``jwks_uri`` is the document's address). ``https`` is required, except
for loopback hosts, where ``http`` is accepted for local development and tests.
"""

from __future__ import annotations

import ipaddress
import re
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec
import trio

__all__ = ["JWKSFetchError", "RemoteJWKS"]

_MAX_AGE: Final = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)\"?\s*(?:,|$)", re.IGNORECASE)
_NO_CACHE: Final = re.compile(r"(?:^|,)\s*(no-store|no-cache)\s*(?:,|$)", re.IGNORECASE)
_LOOPBACK_NAMES: Final = frozenset({"localhost"})


class JWKSFetchError(Exception):
    """The JWKS could not be fetched or was not a JWK Set (the message names the URI and
    the reason, never a key)."""


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RemoteJWKS:
    """A ``JWKSFetcher`` for ``JWTVerifier(jwks_uri=...)`` (or ``jwks_fetcher=RemoteJWKS(...)``).

    Calling it fetches the document now and records how long it stays fresh; ``expired``
    tells the verifier when its copy is past that (then it refetches before verifying).
    """

    def __init__(
        self,
        uri: str,
        *,
        timeout: float = 10.0,
        max_bytes: int = 256 * 1024,
        default_max_age: float = 300.0,
        min_max_age: float = 30.0,
        max_max_age: float = 86400.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError(f"jwks_uri must be an absolute https URL, not {uri!r}")
        if parts.scheme == "http" and not _is_loopback(parts.hostname):
            raise ValueError(f"jwks_uri must use https (http only for loopback hosts): {uri!r}")
        if timeout <= 0 or max_bytes <= 0:
            raise ValueError("timeout and max_bytes must be positive")
        if not 0 < min_max_age <= default_max_age <= max_max_age:
            raise ValueError("need 0 < min_max_age <= default_max_age <= max_max_age")
        self.uri = uri
        #: Seconds one fetch may take, connect to last byte.
        self.timeout = timeout
        #: Largest response (head and body) accepted; a JWK Set is a few KiB.
        self.max_bytes = max_bytes
        #: Freshness when the response has no ``Cache-Control: max-age``.
        self.default_max_age = default_max_age
        #: Floor on freshness (also for ``no-cache``/``no-store``): at most one fetch per
        #: this many seconds from expiry alone.
        self.min_max_age = min_max_age
        #: Ceiling on freshness: a revoked key is dropped within a day whatever the server says.
        self.max_max_age = max_max_age
        self._clock = clock
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._tls = parts.scheme == "https"
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._expires: float | None = None
        #: How many fetches were made (for logs and tests).
        self.fetches = 0

    def __repr__(self) -> str:
        return f"RemoteJWKS({self.uri!r})"

    @property
    def expired(self) -> bool:
        """True before the first fetch and once the last copy is past its max-age."""
        return self._expires is None or self._clock() >= self._expires

    async def __call__(self) -> Mapping[str, Any]:
        """Fetch the JWK Set; raises JWKSFetchError (or trio.TooSlowError past ``timeout``)."""
        self.fetches += 1
        with trio.fail_after(self.timeout):
            raw = await self._get()
        status, headers, body = _parse_response(raw, self.uri)
        if status != 200:
            raise JWKSFetchError(f"{self.uri}: HTTP {status} (redirects are not followed)")
        try:
            document = msgspec.json.decode(body)
        except msgspec.DecodeError:
            raise JWKSFetchError(f"{self.uri}: the body is not JSON") from None
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise JWKSFetchError(f'{self.uri}: not a JWK Set (no "keys" list)')
        self._expires = self._clock() + self._freshness(headers.get("cache-control", ""))
        return document

    def _freshness(self, cache_control: str) -> float:
        # RFC 9111 section 5.2.2: max-age gives freshness; no-cache/no-store would mean "fetch
        # every time", which the floor turns into "at most every min_max_age seconds".
        if _NO_CACHE.search(cache_control):
            return self.min_max_age
        match = _MAX_AGE.search(cache_control)
        age = float(match.group(1)) if match else self.default_max_age
        return min(max(age, self.min_max_age), self.max_max_age)

    async def _get(self) -> bytes:
        stream: trio.abc.Stream = await trio.open_tcp_stream(self._host, self._port)
        if self._tls:
            stream = trio.SSLStream(
                stream, ssl.create_default_context(), server_hostname=self._host
            )
        async with stream:
            host = self._host if ":" not in self._host else f"[{self._host}]"
            request = (
                f"GET {self._target} HTTP/1.1\r\nHost: {host}:{self._port}\r\n"
                "Accept: application/jwk-set+json, application/json\r\n"
                "User-Agent: mcp-runtime\r\nConnection: close\r\n\r\n"
            )
            await stream.send_all(request.encode("ascii"))
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk
                if len(data) > self.max_bytes:
                    raise JWKSFetchError(f"{self.uri}: response larger than {self.max_bytes} bytes")
                if _complete(data):
                    break  # a server that keeps the connection open despite "close"
        return data


_CONTENT_LENGTH: Final = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n", re.IGNORECASE)


def _complete(data: bytes) -> bool:
    """True once a response with a Content-Length has all of its body."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    match = _CONTENT_LENGTH.search(data, 0, end + 2)
    return match is not None and len(data) - end - 4 >= int(match.group(1))


def _parse_response(raw: bytes, uri: str) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if not sep or len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
        raise JWKSFetchError(f"{uri}: not an HTTP/1.1 response")
    try:
        status = int(status_line[1])
    except ValueError:
        raise JWKSFetchError(f"{uri}: bad HTTP status line") from None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _dechunk(body, uri)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise JWKSFetchError(f"{uri}: bad Content-Length") from None
        if len(body) < length:
            raise JWKSFetchError(f"{uri}: the body ended early")
        body = body[:length]
    return status, headers, body


def _dechunk(data: bytes, uri: str) -> bytes:
    out: list[bytes] = []
    position = 0
    while True:
        end = data.find(b"\r\n", position)
        if end < 0:
            raise JWKSFetchError(f"{uri}: truncated chunked body")
        try:
            size = int(data[position:end].split(b";", 1)[0], 16)
        except ValueError:
            raise JWKSFetchError(f"{uri}: bad chunk size") from None
        if size == 0:
            return b"".join(out)
        start = end + 2
        if len(data) < start + size:
            raise JWKSFetchError(f"{uri}: truncated chunked body")
        out.append(data[start : start + size])
        position = start + size + 2
