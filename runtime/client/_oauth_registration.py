"""How the client gets a ``client_id`` at an authorization server (sans-IO).

basic/authorization "Client Registration", in its priority order:

1. pre-registered credentials the user gave (``OAuth(client_id=..., client_secret=...)``);
2. a Client ID Metadata Document: the client's ``client_id`` is the HTTPS URL of a JSON
   document it hosts, used when the authorization server's metadata says
   ``client_id_metadata_document_supported`` (draft-ietf-oauth-client-id-metadata-document);
3. Dynamic Client Registration (RFC 7591) at the ``registration_endpoint``, with
   ``application_type`` (OpenID Connect Registration 2: "native" for a client whose
   redirect URI is on loopback, as a CLI's is; omitted, OIDC servers assume "web" and refuse
   a loopback redirect).

Whatever is obtained is bound to the issuer that issued it ("Authorization Server Binding").
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ._oauth_store import ClientRegistration

__all__ = [
    "RegistrationError",
    "is_metadata_document_url",
    "read_registration",
    "registration_request",
]

_MAX_DESCRIPTION: Final = 300


class RegistrationError(Exception):
    """The registration endpoint refused, or answered something that is not a client."""


def is_metadata_document_url(client_id: str) -> bool:
    """A Client ID Metadata Document URL: https, with a path (the draft's section 3)."""
    parts = urllib.parse.urlsplit(client_id)
    return parts.scheme == "https" and bool(parts.netloc) and parts.path not in ("", "/")


def registration_request(
    *,
    client_name: str,
    redirect_uris: Sequence[str],
    grant_types: Sequence[str],
    token_endpoint_auth_method: str,
) -> bytes:
    """The RFC 7591 2 request body (JSON). No ``scope``: RFC 7591 2 lets a server hold the
    client to the scopes it registered with, and a step-up asks for more later."""
    document: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types),
        "response_types": ["code"] if "authorization_code" in grant_types else [],
        "token_endpoint_auth_method": token_endpoint_auth_method,
        "application_type": "native",
    }
    return msgspec.json.encode(document)


def read_registration(status: int, body: bytes, issuer: str) -> ClientRegistration:
    """The client an RFC 7591 3.2.1 answer describes; :class:`RegistrationError` for a
    refusal (3.2.2) or an answer without a ``client_id``."""
    try:
        document = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        document = None
    if not isinstance(document, dict):
        raise RegistrationError(f"the registration endpoint answered HTTP {status}, not JSON")
    if status >= 300 or "error" in document:
        error = document.get("error")
        description = document.get("error_description")
        detail = f": {description[:_MAX_DESCRIPTION]}" if isinstance(description, str) else ""
        raise RegistrationError(
            f"the registration endpoint refused (HTTP {status}, "
            f"{error if isinstance(error, str) else 'no error code'}){detail}"
        )
    client_id = document.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise RegistrationError("the registration endpoint's answer has no client_id")
    secret = document.get("client_secret")
    method = document.get("token_endpoint_auth_method")
    return ClientRegistration(
        client_id=client_id,
        issuer=issuer,
        client_secret=secret if isinstance(secret, str) and secret else None,
        token_endpoint_auth_method=method if isinstance(method, str) else None,
        source="dynamic",
    )
