"""Which era a request belongs to, decided from its shape alone (one rule for every transport).

MCP 2026-07-28 basic/versioning, "Backward Compatibility": a server that speaks both eras
serves a request whose ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion``
statelessly at that revision; anything else belongs to the handshake era (an ``initialize``
opens a session; other requests belong to the one already open). Such a modern request must
also carry ``io.modelcontextprotocol/clientCapabilities`` (basic/index, "Request Metadata").
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ._errors import JSONRPCError, invalid_params, unsupported_version
from ._versions import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
)

__all__ = ["MODERN_MARKER", "ModernRequest", "modern_request", "select_era"]

#: The marker key as bytes: a request whose raw params lack it is in the handshake era
#: without decoding anything (the common case on a handshake-era connection).
MODERN_MARKER: Final = META_PROTOCOL_VERSION.encode()


class ModernRequest(msgspec.Struct, frozen=True):
    """What a 2026-07-28 request says about itself in ``params._meta``. (A Struct: built in
    C, once per modern request.)"""

    version: str
    capabilities: dict[str, Any]
    meta: dict[str, Any]


def select_era(meta: dict[str, Any] | None) -> ModernRequest | None:
    """The modern reading of a request's decoded ``params._meta``, or None when the request
    belongs to the handshake era (no ``_meta``, or no protocol version in it).

    Raises JSONRPCError for a modern request that cannot be served: -32602 when the version
    is not a string or the client capabilities are missing (the path names the key), -32022
    (with the supported list) when this server does not speak the version. The version is
    judged before the capabilities: a client at a revision we do not speak may shape its
    ``_meta`` differently, and "unsupported version" is what it needs to hear.
    """
    if not meta or META_PROTOCOL_VERSION not in meta:
        return None
    version = meta[META_PROTOCOL_VERSION]
    if not isinstance(version, str):
        raise invalid_params(
            f"_meta[{META_PROTOCOL_VERSION!r}] must be a string",
            f"params._meta.{META_PROTOCOL_VERSION}",
        )
    return modern_request(version, meta)


def modern_request(version: str, meta: dict[str, Any]) -> ModernRequest:
    """:func:`select_era` of a ``_meta`` whose protocol version (``version``) its caller
    already read as a string (the HTTP transport, whose header rules needed it first): the
    same refusals, -32022 before -32602, without reading the version again."""
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version, SUPPORTED_VERSIONS)
    capabilities = meta.get(META_CLIENT_CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise missing_capabilities()
    return ModernRequest(version, capabilities, meta)


def missing_capabilities() -> JSONRPCError:
    """-32602 for a modern request without ``_meta`` client capabilities."""
    return invalid_params(
        f"_meta[{META_CLIENT_CAPABILITIES!r}] is required (an object) on every 2026-07-28 request",
        f"params._meta.{META_CLIENT_CAPABILITIES}",
    )
