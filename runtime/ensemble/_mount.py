"""One server's tools, prompts and resources served by another, namespaced and kept in step.

``parent.mount(child, prefix="kid")`` serves the child's tool ``search`` as ``kid_search``,
its prompt ``greet`` as ``kid_greet`` and its resource ``notes://welcome`` (and template
``notes://{name}``) as ``notes://kid/welcome`` (``notes://kid/{name}``): :class:`Mount`
copies them into the parent's registry. The copies follow the child: a tool the child adds
or removes later appears in or leaves the parent at once (and the parent's clients get
list-changed, as for any registration), and the child's ``notify_resource_updated(uri)``
reaches the parent's subscribers of the namespaced URI. ``unmount`` removes the copies
(list-changed again).

Handlers of mounted features run as the parent's (its limits and ``ctx.lifespan_state``);
the child's own middleware runs for them too (``_chains``), and its completer completes its
prompts and templates (:func:`complete_through_mounts`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import msgspec

from ..features import (
    App,
    Change,
    Completer,
    PromptDef,
    Registry,
    ResourceDef,
    TemplateDef,
    ToolDef,
)
from ._prefix import check_prefix, prefixed_name, prefixed_uri

if TYPE_CHECKING:
    from ..middleware import Middleware

__all__ = ["Mount", "Mountable", "complete_through_mounts"]

log = logging.getLogger("mcp_runtime.mount")


class Mountable(App, Protocol):
    """What mounting needs of a server, on either side (``runtime.Server`` is one): what the
    handlers need of it, and its middleware, its own mounts and the state its lifespan
    yields. Public members only: a mount never reaches into the server that holds it."""

    #: What its lifespan yielded while it runs (None otherwise); set for a mounted child.
    state: Any

    @property
    def middleware_chain(self) -> Sequence[Middleware]: ...

    @property
    def mounts(self) -> Mapping[str, Mount[Any]]: ...


#: Opens a server's lifespan (its own and its mounts'): an async context manager whose value
#: becomes its ``state``, or None when it has none.
LifespanOpener = Callable[[], AbstractAsyncContextManager[Any] | None]
C = TypeVar("C", bound=Mountable)


class Mount(Generic[C]):
    """The parent's namespaced copies of one child's features, kept in step by a relay on
    the child's change broadcast. ``registry``: the parent's; ``lifespan``: opens the
    child's (entered while the parent serves, ``MountLifespans``)."""

    def __init__(self, registry: Registry, child: C, prefix: str, lifespan: LifespanOpener) -> None:
        check_prefix(prefix)
        self.registry = registry
        self.child = child
        self.prefix = prefix
        self.lifespan = lifespan
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
            return msgspec.structs.replace(item, name=key)
        if kind == "resources":
            assert isinstance(item, ResourceDef)
            return msgspec.structs.replace(item, uri=key)
        assert isinstance(item, TemplateDef)
        from ..features import UriTemplate  # loaded with the first template (start-up time)

        return msgspec.structs.replace(item, template=UriTemplate(key))

    def _add(self, kind: str, copy: Any) -> None:
        reg = self.registry
        if kind == "tools":
            reg.add_tool(copy)
        elif kind == "prompts":
            reg.add_prompt(copy)
        elif kind == "resources":
            reg.add_resource(copy)
        else:
            reg.add_template(copy)

    def _remove(self, kind: str, key: str) -> None:
        reg = self.registry
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

    def collisions(self) -> list[str]:
        """The names and URIs of the child's features the parent already has."""
        reg = self.registry
        taken: list[str] = []
        for kind in self.owned:
            existing = getattr(reg, kind)
            taken += [key for key in self._desired(kind) if key in existing]
        return taken

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
            self.registry.changes.resource_updated(prefixed_uri(self.prefix, key))


async def complete_through_mounts(
    mounts: Mapping[str, Mount[Any]],
    own: Completer | None,
    ref_type: str,
    ref: str,
    argument: str,
    value: str,
    context: dict[str, str],
) -> Sequence[str] | None:
    """The completer of a server with ``mounts`` (``own``: its own completer): a ref to a
    mounted prompt or template goes to its server's completer with the server's own name or
    template (None when it has none: the annotation's suggestions); any other ref to
    ``own``."""
    kind = "prompts" if ref_type == "ref/prompt" else "templates"
    for mount in mounts.values():
        owned = mount.owned[kind].get(ref)
        if owned is None:
            continue
        item = owned[0]
        own_ref = item.name if isinstance(item, PromptDef) else item.template.template
        completer: Completer | None = mount.child.completer
        if completer is None:
            return None
        return await completer(ref_type, own_ref, argument, value, context)
    return None if own is None else await own(ref_type, ref, argument, value, context)
