"""A mount's prefix, and the names and URIs it makes of a mounted server's own.

``prefix`` ``kid``: the tool or prompt ``search`` becomes ``kid_search``; the resource
``notes://welcome`` (and the template ``notes://{name}``) ``notes://kid/welcome``
(``notes://kid/{name}``).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["check_prefix", "prefixed_name", "prefixed_uri", "unprefixed_uri"]

#: A prefix becomes part of tool names (2025-11-25 server/tools "Tool Names": A-Z, a-z,
#: 0-9, _, - and .) and of URI paths: the characters both allow.
_PREFIX: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_prefix(prefix: str) -> None:
    """ValueError unless ``prefix`` can be part of both a tool name and a URI path."""
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(f"invalid mount prefix {prefix!r}: use letters, digits, _ . -")


def prefixed_name(prefix: str, name: str) -> str:
    return f"{prefix}_{name}"


def prefixed_uri(prefix: str, uri: str) -> str:
    """``scheme://rest`` becomes ``scheme://prefix/rest``; a URI without an authority,
    ``urn:x``, becomes ``urn:prefix/x`` (the scheme stays, so clients still route it)."""
    scheme, sep, rest = uri.partition("://")
    if sep:
        return f"{scheme}://{prefix}/{rest}"
    scheme, sep, rest = uri.partition(":")
    return f"{scheme}:{prefix}/{rest}" if sep else f"{prefix}/{uri}"


def unprefixed_uri(prefix: str, uri: str) -> str:
    """The inverse of :func:`prefixed_uri` (``uri`` unchanged when it has no ``prefix``)."""
    scheme, sep, rest = uri.partition("://")
    if sep and rest.startswith(prefix + "/"):
        return f"{scheme}://{rest[len(prefix) + 1 :]}"
    scheme, sep, rest = uri.partition(":")
    if sep and rest.startswith(prefix + "/"):
        return f"{scheme}:{rest[len(prefix) + 1 :]}"
    return uri[len(prefix) + 1 :] if uri.startswith(prefix + "/") else uri
