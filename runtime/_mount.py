"""Composition: one server's tools, prompts and resources served by another, namespaced.

``parent.mount(child, prefix="kid")`` serves the child's tool ``search`` as ``kid_search``,
its prompt ``greet`` as ``kid_greet`` and its resource ``notes://welcome`` (and template
``notes://{name}``) as ``notes://kid/welcome`` (``notes://kid/{name}``). The copies follow
the child: a tool the child adds or removes later appears in or leaves the parent at once
(and the parent's clients get list-changed, as for any registration), and the child's
``notify_resource_updated(uri)`` reaches the parent's subscribers of the namespaced URI.
``unmount`` removes the copies (list-changed again). Mounting while serving works the same.

The child's lifespan is entered inside the parent's when the parent starts serving (mounted
before that), so ``child.state`` holds what it yielded. Handlers of mounted features run as
the parent's: the parent's middleware, limits and ``ctx.lifespan_state`` apply.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

from .features import Change, PromptDef, ResourceDef, TemplateDef, ToolDef, UriTemplate

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["Mount", "nested_lifespans", "prefixed_name", "prefixed_uri"]

log = logging.getLogger("mcp_runtime.mount")

#: A prefix becomes part of tool names (2025-11-25 server/tools "Tool Names": A-Z, a-z,
#: 0-9, _, - and .) and of URI paths: the characters both allow.
_PREFIX: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


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


class Mount:
    """The parent's namespaced copies of one child's features, kept in step by a relay on
    the child's change broadcast."""

    def __init__(self, parent: Server, child: Server, prefix: str) -> None:
        if not _PREFIX.fullmatch(prefix):
            raise ValueError(f"invalid mount prefix {prefix!r}: use letters, digits, _ . -")
        self.parent = parent
        self.child = child
        self.prefix = prefix
        #: kind -> {parent key: (child definition, parent copy)}
        self.owned: dict[str, dict[str, tuple[Any, Any]]] = {
            "tools": {},
            "prompts": {},
            "resources": {},
            "templates": {},
        }

    # -- the copies -------------------------------------------------------------------------

    def _desired(self, kind: str) -> dict[str, Any]:
        reg = self.child.registry
        if kind == "tools":
            return {prefixed_name(self.prefix, k): v for k, v in reg.tools.items()}
        if kind == "prompts":
            return {prefixed_name(self.prefix, k): v for k, v in reg.prompts.items()}
        if kind == "resources":
            return {prefixed_uri(self.prefix, k): v for k, v in reg.resources.items()}
        return {prefixed_uri(self.prefix, k): v for k, v in reg.templates.items()}

    def _copy(self, kind: str, key: str, item: Any) -> Any:
        if kind in ("tools", "prompts"):
            assert isinstance(item, ToolDef | PromptDef)
            return dataclasses.replace(item, name=key)
        if kind == "resources":
            assert isinstance(item, ResourceDef)
            return dataclasses.replace(item, uri=key)
        assert isinstance(item, TemplateDef)
        return dataclasses.replace(item, template=UriTemplate(key))

    def _add(self, kind: str, copy: Any) -> None:
        reg = self.parent.registry
        if kind == "tools":
            reg.add_tool(copy)
        elif kind == "prompts":
            reg.add_prompt(copy)
        elif kind == "resources":
            reg.add_resource(copy)
        else:
            reg.add_template(copy)

    def _remove(self, kind: str, key: str) -> None:
        reg = self.parent.registry
        if kind == "tools":
            reg.remove_tool(key)
        elif kind == "prompts":
            reg.remove_prompt(key)
        else:
            reg.remove_resource(key)  # a URI or a template string

    def sync(self, kind: str, *, strict: bool = False) -> None:
        """Make the parent's copies of ``kind`` match the child's (only what changed).
        A name the parent already uses is a ValueError when ``strict`` (at mount), else
        logged and skipped (a later change in the child)."""
        desired = self._desired(kind)
        owned = self.owned[kind]
        for key in [k for k, (item, _) in owned.items() if desired.get(k) is not item]:
            del owned[key]
            self._remove(kind, key)
        for key, item in desired.items():
            if key in owned:
                continue
            copy = self._copy(kind, key, item)
            try:
                self._add(kind, copy)
            except ValueError:
                if strict:
                    raise
                log.error("mount %s: %s %r is taken in the parent: skipped", self.prefix, kind, key)
                continue
            owned[key] = (item, copy)

    def attach(self) -> None:
        try:
            for kind in self.owned:
                self.sync(kind, strict=True)
        except ValueError:
            self.detach()
            raise
        self.child.registry.changes.relays.append(self._relay)

    def detach(self) -> None:
        relays = self.child.registry.changes.relays
        if self._relay in relays:
            relays.remove(self._relay)
        for kind, owned in self.owned.items():
            for key in list(owned):
                del owned[key]
                self._remove(kind, key)

    def _relay(self, change: Change) -> None:
        what, key = change
        if what == "list":
            kinds = ("resources", "templates") if key == "resources" else (key,)
            for kind in kinds:
                self.sync(kind)
        elif what == "updated":
            self.parent.registry.changes.resource_updated(prefixed_uri(self.prefix, key))


@contextlib.asynccontextmanager
async def nested_lifespans(
    children: list[Server], own: contextlib.AbstractAsyncContextManager[Any] | None
) -> AsyncIterator[Any]:
    """Each mounted child's lifespan (its ``state`` set to what it yielded), then the
    parent's own; exited in reverse order."""
    async with contextlib.AsyncExitStack() as stack:
        for child in children:
            opened = child._open_lifespan()
            if opened is not None:
                child.state = await stack.enter_async_context(opened)
        state = await stack.enter_async_context(own) if own is not None else None
        try:
            yield state
        finally:
            for child in children:
                child.state = None
