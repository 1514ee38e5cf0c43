"""``require_login``: a server says it needs people to log in, and what scopes it knows; how
they log in (which provider) is the deployment's choice, made on the command line
(``mcp-runtime serve --auth oidc --issuer URL ...``) or when serving it in code."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoginRequirement", "login_requirement", "require_login"]


@dataclass(frozen=True, slots=True)
class LoginRequirement:
    """What a server asked for with ``require_login``."""

    #: The scopes clients may ask for (the default grant when they ask for none).
    scopes: tuple[str, ...] = ()
    #: Scopes every MCP request needs; and those each tool needs on top.
    required_scopes: frozenset[str] = frozenset()
    tool_scopes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: The development mode's users, when no provider is configured.
    dev_users: tuple[str, ...] = ("alice", "bob")


# Kept beside the server rather than on it: the Server knows nothing of how people log in.
_REQUIRED: weakref.WeakKeyDictionary[Any, LoginRequirement] = weakref.WeakKeyDictionary()


def require_login(
    server: object,
    *,
    scopes: Iterable[str] = (),
    required_scopes: Iterable[str] = (),
    tool_scopes: Mapping[str, Iterable[str]] | None = None,
    dev_users: Iterable[str] = ("alice", "bob"),
) -> None:
    """Mark ``server`` as needing login when served over HTTP by ``mcp-runtime serve``: with
    ``--auth oidc --issuer URL`` people log in at that provider; with no provider configured
    it starts in the development mode (``dev_users``, no password, said loudly)."""
    required = frozenset(required_scopes)
    tools = {name: frozenset(s) for name, s in (tool_scopes or {}).items()}
    known = list(
        dict.fromkeys([*scopes, *sorted(required), *(s for t in tools.values() for s in sorted(t))])
    )
    _REQUIRED[server] = LoginRequirement(tuple(known), required, tools, tuple(dev_users))


def login_requirement(server: object) -> LoginRequirement | None:
    """What ``require_login`` recorded for ``server``, or None."""
    return _REQUIRED.get(server)
