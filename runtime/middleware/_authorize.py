"""Authorization by tool, resource and prompt: required scopes, or a predicate.

A caller who may not use something neither sees it in the lists (``tools/list``,
``prompts/list``, ``resources/list``, ``resources/templates/list``) nor can call, get or
read it: that is -32003 (``runtime.protocol.forbidden``), in band on every transport.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ..protocol import PROMPTS_LIST, RESOURCES_LIST, RESOURCES_TEMPLATES_LIST, TOOLS_LIST, forbidden
from ._chain import Middleware, Next, PromptGet, Request, ResourceRead, ToolCall

__all__ = ["Authorize", "scopes_of"]

#: ``predicate(principal, kind, name) -> bool`` where kind is "tool", "prompt" or "resource".
Predicate = Callable[[Any, str, str], bool]

_LISTS: Final = {
    TOOLS_LIST: ("tools", "tool", "name"),
    PROMPTS_LIST: ("prompts", "prompt", "name"),
    RESOURCES_LIST: ("resources", "resource", "uri"),
    RESOURCES_TEMPLATES_LIST: ("resourceTemplates", "resource", "uriTemplate"),
}


def scopes_of(principal: Any) -> frozenset[str]:
    """The scopes a principal holds: ``runtime.auth.AccessToken.scopes`` (or any
    principal's ``scopes`` attribute); none for an unauthenticated caller."""
    scopes = getattr(principal, "scopes", None)
    return frozenset(scopes) if scopes else frozenset()


class Authorize(Middleware):
    """``tools``/``prompts``/``resources``: ``{pattern: required scopes}`` (``fnmatch``
    patterns over tool and prompt names and resource URIs or templates; every scope of the
    first matching pattern is required). Names no pattern matches are open unless
    ``default`` scopes are given. ``predicate(principal, kind, name)``, when given, must
    also allow.
    """

    def __init__(
        self,
        *,
        tools: Mapping[str, Iterable[str]] | None = None,
        prompts: Mapping[str, Iterable[str]] | None = None,
        resources: Mapping[str, Iterable[str]] | None = None,
        default: Iterable[str] = (),
        predicate: Predicate | None = None,
        scopes: Callable[[Any], frozenset[str]] = scopes_of,
    ) -> None:
        self.rules = {
            kind: [(pattern, frozenset(req)) for pattern, req in (table or {}).items()]
            for kind, table in (("tool", tools), ("prompt", prompts), ("resource", resources))
        }
        self.default = frozenset(default)
        self.predicate = predicate
        self.scopes = scopes

    def allows(self, principal: Any, kind: str, name: str) -> bool:
        required = self.default
        for pattern, needed in self.rules[kind]:
            if fnmatch.fnmatchcase(name, pattern):
                required = needed
                break
        if required and not required <= self.scopes(principal):
            return False
        return self.predicate is None or bool(self.predicate(principal, kind, name))

    def _check(self, principal: Any, kind: str, name: str) -> None:
        if not self.allows(principal, kind, name):
            raise forbidden(f"Forbidden: {kind} {name!r}", **{kind: name})

    async def on_request(self, request: Request, call_next: Next) -> Any:
        listing = _LISTS.get(request.method)
        result = await call_next()
        if listing is not None and isinstance(result, dict):
            field, kind, key = listing
            items = result.get(field)
            if isinstance(items, list):
                principal = request.principal
                result[field] = [
                    item for item in items if self.allows(principal, kind, str(_get(item, key)))
                ]
        return result

    async def on_call_tool(self, call: ToolCall, call_next: Next) -> Any:
        self._check(call.principal, "tool", call.name)
        return await call_next()

    async def on_get_prompt(self, get: PromptGet, call_next: Next) -> Any:
        self._check(get.principal, "prompt", get.name)
        return await call_next()

    async def on_read_resource(self, read: ResourceRead, call_next: Next) -> Any:
        self._check(read.principal, "resource", read.uri)
        return await call_next()


def _get(item: Any, key: str) -> Any:
    if isinstance(item, dict):
        return item.get(key)
    return getattr(item, key, None)
