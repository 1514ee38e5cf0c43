"""A small, bounded HTTP/1.1 client for talking to the upstream OpenID provider.

Discovery (GET), the token request (POST, form-encoded) and the provider's JWKS: each bounded
in time (``timeout``, connect to last byte) and size (``max_bytes``), redirects not followed,
``https`` required except for loopback hosts (local development and the tests' provider). TLS
is ``trio.SSLStream`` with the system's default trust store. A failure is ``UpstreamError``,
whose message names the URL and the reason, never a credential.
"""

from __future__ import annotations

import ipaddress
import re
import ssl
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

import msgspec
import trio

__all__ = ["UpstreamError", "check_upstream_url", "fetch_json"]

_CONTENT_LENGTH: Final = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n", re.IGNORECASE)


class UpstreamError(Exception):
    """The upstream provider could not be reached, was too slow, or answered nonsense."""


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_upstream_url(url: str, what: str) -> None:
    """Raise ValueError unless ``url`` is https (or http on a loopback host)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or "#" in url:
        raise ValueError(f"{what} must be an absolute https URL without fragment, not {url!r}")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ValueError(f"{what} must use https (http only for loopback hosts): {url!r}")


async def fetch_json(
    url: str,
    *,
    form: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float,
    max_bytes: int,
) -> tuple[int, Any]:
    """GET ``url`` (or POST ``form`` to it) and return (status, decoded JSON body).

    Raises UpstreamError for a connection failure, a timeout, an oversized or malformed
    response, or a body that is not JSON. Cancellation propagates.
    """
    try:
        check_upstream_url(url, "the upstream URL")
    except ValueError as exc:
        raise UpstreamError(str(exc)) from None
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [
        f"{'POST' if form is not None else 'GET'} {target} HTTP/1.1",
        f"Host: {host if ':' not in host else f'[{host}]'}:{port}",
        "User-Agent: mcp-runtime",
        "Connection: close",
    ]
    given = dict(headers or {})
    given.setdefault("Accept", "application/json")
    lines += [f"{name}: {value}" for name, value in given.items()]
    body = b""
    if form is not None:
        body = urlencode(form).encode("ascii")
        lines += ["Content-Type: application/x-www-form-urlencoded", f"Content-Length: {len(body)}"]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    try:
        with trio.fail_after(timeout):
            raw = await _exchange(host, port, parts.scheme == "https", request, max_bytes, url)
    except trio.TooSlowError:
        raise UpstreamError(f"{url}: no answer within {timeout:g} s") from None
    except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
        raise UpstreamError(f"{url}: {type(exc).__name__}") from None
    status, payload = _parse(raw, url)
    try:
        return status, msgspec.json.decode(payload)
    except msgspec.DecodeError:
        raise UpstreamError(f"{url}: HTTP {status}, the body is not JSON") from None


async def _exchange(
    host: str, port: int, tls: bool, request: bytes, max_bytes: int, url: str
) -> bytes:
    stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
    if tls:
        stream = trio.SSLStream(stream, ssl.create_default_context(), server_hostname=host)
    async with stream:
        await stream.send_all(request)
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
            if len(data) > max_bytes:
                raise UpstreamError(f"{url}: response larger than {max_bytes} bytes")
            if _complete(data):
                break
    return data


def _complete(data: bytes) -> bool:
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    match = _CONTENT_LENGTH.search(data, 0, end + 2)
    return match is not None and len(data) - end - 4 >= int(match.group(1))


def _parse(raw: bytes, url: str) -> tuple[int, bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if not sep or len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
        raise UpstreamError(f"{url}: not an HTTP/1.1 response")
    try:
        status = int(status_line[1])
    except ValueError:
        raise UpstreamError(f"{url}: bad HTTP status line") from None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            fields[name.strip().lower()] = value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        return status, _dechunk(body, url)
    if "content-length" in fields:
        try:
            length = int(fields["content-length"])
        except ValueError:
            raise UpstreamError(f"{url}: bad Content-Length") from None
        if len(body) < length:
            raise UpstreamError(f"{url}: the body ended early")
        return status, body[:length]
    return status, body


def _dechunk(data: bytes, url: str) -> bytes:
    out: list[bytes] = []
    position = 0
    while True:
        end = data.find(b"\r\n", position)
        if end < 0:
            raise UpstreamError(f"{url}: truncated chunked body")
        try:
            size = int(data[position:end].split(b";", 1)[0], 16)
        except ValueError:
            raise UpstreamError(f"{url}: bad chunk size") from None
        if size == 0:
            return b"".join(out)
        start = end + 2
        if len(data) < start + size:
            raise UpstreamError(f"{url}: truncated chunked body")
        out.append(data[start : start + size])
        position = start + size + 2
