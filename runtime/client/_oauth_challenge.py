"""Reading a ``WWW-Authenticate`` header: the server's Bearer challenge (sans-IO).

RFC 9110 11.6.1: a header holds one or more challenges, each a scheme followed by
comma-separated ``name=value`` parameters (a token or a quoted string), and challenges
are themselves separated by commas, so a parameter list ends where a bare token (the next
scheme) begins. RFC 6750 3 names the Bearer parameters (``error``, ``error_description``,
``scope``); RFC 9728 5.1 adds ``resource_metadata``. What does not parse is ignored
rather than refused: the challenge is advice, and the client's fallbacks (the well-known
metadata URLs) still apply.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Final

__all__ = ["Challenge", "parse_challenge"]

#: The longest header read: the server's advice is small, and a header is already bounded
#: by the HTTP parser's head limit; this keeps the scan linear and short.
_MAX_HEADER: Final = 8 * 1024
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_SPACE: Final = re.compile(r"[ \t]*")
_QUOTED: Final = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclasses.dataclass(frozen=True, slots=True)
class Challenge:
    """The Bearer challenge's parameters (None: absent). ``scope`` as sent (space-separated)."""

    error: str | None = None
    error_description: str | None = None
    #: "bearer" or "dpop" (RFC 9449 7.1), None when there was no challenge.
    scheme: str | None = None
    scope: str | None = None
    resource_metadata: str | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(self.scope.split()) if self.scope else ()


def _challenges(header: str) -> list[tuple[str, dict[str, str]]]:
    found: list[tuple[str, dict[str, str]]] = []
    position = 0
    params: dict[str, str] | None = None
    text = header[:_MAX_HEADER]
    while position < len(text):
        position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
        if position < len(text) and text[position] == ",":
            position += 1
            continue
        token = _TOKEN.match(text, position)
        if token is None:
            break  # not a challenge we can read: keep what we have
        after = _SPACE.match(text, token.end()).end()  # type: ignore[union-attr]
        if after < len(text) and text[after] == "=" and params is not None:
            value_at = _SPACE.match(text, after + 1).end()  # type: ignore[union-attr]
            quoted = _QUOTED.match(text, value_at)
            if quoted is not None:
                value = re.sub(r"\\(.)", r"\1", quoted.group(1))
                position = quoted.end()
            else:
                bare = _TOKEN.match(text, value_at)
                value = bare.group(0) if bare is not None else ""
                position = bare.end() if bare is not None else value_at
            params.setdefault(token.group(0).lower(), value)
            continue
        # A scheme: a new challenge (a token68 after it is skipped: Bearer has none).
        params = {}
        found.append((token.group(0).lower(), params))
        position = token.end()
        if after < len(text) and text[after] == "=":
            position = after
            while position < len(text) and text[position] == "=":
                position += 1
    return found


def parse_challenge(header: str | None) -> Challenge:
    """The Bearer (or DPoP, RFC 9449 7.1, whose parameters are the same) challenge of a
    ``WWW-Authenticate`` header; an empty :class:`Challenge` when there is none."""
    if not header:
        return Challenge()
    for scheme, params in _challenges(header):
        if scheme in ("bearer", "dpop"):
            return Challenge(
                scheme=scheme,
                error=params.get("error"),
                error_description=params.get("error_description"),
                scope=params.get("scope"),
                resource_metadata=params.get("resource_metadata"),
            )
    return Challenge()
