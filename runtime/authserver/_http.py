"""HTTP details shared by the endpoints: strict parameter parsing, OAuth error bodies,
redirects, client authentication headers, cookies. Sans-IO (plain values in and out)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import msgspec

from ..auth import RouteRequest, RouteResponse

__all__ = [
    "BadRequest",
    "basic_credentials",
    "cookie",
    "html",
    "json_response",
    "oauth_error",
    "parameters",
    "redirect",
]

#: Token, revocation and consent forms are a few hundred bytes; 64 KiB is far above any of
#: them yet keeps a hostile body from costing more than a page of memory per request.
MAX_FORM_BYTES: Final = 64 * 1024
_NO_STORE: Final = (("Cache-Control", "no-store"), ("Pragma", "no-cache"))
#: The pages: no script runs (none is sent), nothing frames them (clickjacking a consent
#: button), nothing leaks through the Referer of a link followed from them.
_PAGE_HEADERS: Final = (
    *_NO_STORE,
    (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    ),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
)


class BadRequest(Exception):
    """Parameters that cannot be read: answered as ``invalid_request``."""


def parameters(request: RouteRequest, *, form: bool) -> dict[str, str]:
    """The query's (``form=False``) or the url-encoded body's parameters. RFC 6749 section
    3.1 and 3.2: a parameter sent twice is an error (never "the first wins", the way one
    parser and another disagree); so is a body of another media type, or one too large."""
    if form:
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/x-www-form-urlencoded":
            raise BadRequest("the body must be application/x-www-form-urlencoded")
        if len(request.body) > MAX_FORM_BYTES:
            raise BadRequest(f"the form is larger than {MAX_FORM_BYTES} bytes")
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest("the form is not UTF-8") from None
    else:
        text = urlsplit(request.target).query
    found: dict[str, str] = {}
    try:
        pairs = parse_qsl(text, keep_blank_values=True, errors="strict")
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("the parameters are not valid url-encoding") from None
    for name, value in pairs:
        if name in found:
            raise BadRequest(f"parameter {name!r} is given more than once")
        if value:  # RFC 6749 section 3.1: a parameter without a value is omitted
            found[name] = value
    return found


def json_response(
    status: int, document: Any, *, extra: Sequence[tuple[str, str]] = ()
) -> RouteResponse:
    return RouteResponse(status, msgspec.json.encode(document), headers=(*_NO_STORE, *extra))


def oauth_error(
    status: int, error: str, description: str, *, extra: Sequence[tuple[str, str]] = ()
) -> RouteResponse:
    """RFC 6749 section 5.2's error response (also RFC 7591 section 3.2.2's)."""
    return json_response(status, {"error": error, "error_description": description}, extra=extra)


def html(status: int, page: str, *, extra: Sequence[tuple[str, str]] = ()) -> RouteResponse:
    return RouteResponse(
        status,
        page.encode("utf-8"),
        content_type="text/html; charset=utf-8",
        headers=(*_PAGE_HEADERS, *extra),
    )


def redirect(
    uri: str,
    params: Mapping[str, str | None],
    *,
    status: int = 302,
    extra: Sequence[tuple[str, str]] = (),
) -> RouteResponse:
    """A redirect to ``uri`` with ``params`` added to its query (RFC 6749 section 4.1.2:
    the query component is kept as registered; None values are left out)."""
    parts = urlsplit(uri)
    added = urlencode({name: value for name, value in params.items() if value is not None})
    query = f"{parts.query}&{added}" if parts.query and added else parts.query or added
    location = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
    return RouteResponse(status, b"", None, (("Location", location), *_NO_STORE, *extra))


def basic_credentials(request: RouteRequest) -> tuple[str, str] | bool | None:
    """``Authorization: Basic`` client credentials (RFC 6749 section 2.3.1: each part
    form-url-encoded, then Base64): (id, secret), None when absent, False when malformed."""
    value = request.headers.get("authorization")
    if value is None:
        return None
    scheme, _, encoded = value.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        return False
    return unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " "))


def cookie(request: RouteRequest, name: str) -> str | None:
    """The value of cookie ``name`` (RFC 6265 section 5.4's ``Cookie`` header), or None."""
    for part in request.headers.get("cookie", "").split(";"):
        key, equals, value = part.strip().partition("=")
        if equals and key == name:
            return value
    return None
