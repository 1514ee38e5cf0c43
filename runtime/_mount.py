"""Composition: one server's tools, prompts and resources served by another, namespaced.

``parent.mount(child, prefix="kid")`` serves the child's tool ``search`` as ``kid_search``,
its prompt ``greet`` as ``kid_greet`` and its resource ``notes://welcome`` (and template
``notes://{name}``) as ``notes://kid/welcome`` (``notes://kid/{name}``). The copies follow
the child: a tool the child adds or removes later appears in or leaves the parent at once
(and the parent's clients get list-changed, as for any registration), and the child's
``notify_resource_updated(uri)`` reaches the parent's subscribers of the namespaced URI.
``unmount`` removes the copies (list-changed again). Mounting while serving works the same.

The children's lifespans are held by :class:`MountLifespans`, each in a task of its own:
entered before the parent's own when it starts serving, entered before the features appear
for a child mounted while serving, exited at ``unmount`` (``child.state`` holds what it
yielded meanwhile). Handlers of mounted features run as the parent's (its limits and
``ctx.lifespan_state``); the child's own middleware runs for them too
(``runtime._mount_chain``), and its completer completes its prompts and templates
(:func:`complete_through_mounts`).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from .features import Change, PromptDef, ResourceDef, TemplateDef, ToolDef

if TYPE_CHECKING:
    from ._server import Server

__all__ = [
    "Mount",
    "MountLifespans",
    "complete_through_mounts",
    "prefixed_name",
    "prefixed_uri",
    "unprefixed_uri",
]

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


def unprefixed_uri(prefix: str, uri: str) -> str:
    """The inverse of :func:`prefixed_uri` (``uri`` unchanged when it has no ``prefix``)."""
    scheme, sep, rest = uri.partition("://")
    if sep and rest.startswith(prefix + "/"):
        return f"{scheme}://{rest[len(prefix) + 1 :]}"
    scheme, sep, rest = uri.partition(":")
    if sep and rest.startswith(prefix + "/"):
        return f"{scheme}:{rest[len(prefix) + 1 :]}"
    return uri[len(prefix) + 1 :] if uri.startswith(prefix + "/") else uri


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
            return msgspec.structs.replace(item, name=key)
        if kind == "resources":
            assert isinstance(item, ResourceDef)
            return msgspec.structs.replace(item, uri=key)
        assert isinstance(item, TemplateDef)
        from .features import UriTemplate  # loaded with the first template (start-up time)

        return msgspec.structs.replace(item, template=UriTemplate(key))

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

    def collisions(self) -> list[str]:
        """The names and URIs of the child's features the parent already has."""
        reg = self.parent.registry
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
            self.parent.registry.changes.resource_updated(prefixed_uri(self.prefix, key))


async def complete_through_mounts(
    parent: Server, ref_type: str, ref: str, argument: str, value: str, context: dict[str, str]
) -> Sequence[str] | None:
    """``parent``'s completer (``Server.completer`` when it has mounts): a ref to a mounted
    prompt or template goes to its server's completer with the server's own name or
    template (None when it has none: the annotation's suggestions); any other ref to the
    parent's own completer."""
    kind = "prompts" if ref_type == "ref/prompt" else "templates"
    for mount in parent.mounts.values():
        owned = mount.owned[kind].get(ref)
        if owned is None:
            continue
        item = owned[0]
        own_ref = item.name if isinstance(item, PromptDef) else item.template.template
        completer = mount.child.completer
        if completer is None:
            return None
        return await completer(ref_type, own_ref, argument, value, context)
    own = parent._completer
    return None if own is None else await own(ref_type, ref, argument, value, context)


class _Held:
    """One child's lifespan held open by a task of its own (so that it is exited in the
    task that entered it, as trio's scopes require, whenever it is released)."""

    def __init__(self, child: Server) -> None:
        self.child = child
        self.release = trio.Event()
        self.exited = trio.Event()

    async def hold(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            opened = self.child._open_lifespan()
            if opened is None:
                task_status.started()
                await self.release.wait()
                return
            async with opened as state:
                self.child.state = state
                task_status.started()
                try:
                    await self.release.wait()
                finally:
                    self.child.state = None
        finally:
            self.exited.set()


class MountLifespans:
    """The lifespans of a server's mounted children while it serves.

    Each child's lifespan runs in a task of this object's nursery: the children mounted
    before serving are entered (in mount order) before the parent's own lifespan; a child
    mounted while serving is entered before its features appear (``mount``), and one
    unmounted while serving is exited then (``unmount``). When serving ends, what is still
    mounted is exited in reverse mount order, each waited for in turn. A server that
    started serving without mounts has no nursery here (it runs exactly as before): a child
    mounted into it while serving is held in the server's task nursery, and exited with it
    (cancelled) when serving ends, unless unmounted first.
    """

    def __init__(self, fallback: Callable[[], trio.Nursery | None]) -> None:
        self._nursery: trio.Nursery | None = None
        #: The server's task nursery while it serves: where a child mounted while serving
        #: is held when the server started without mounts (and so without a nursery here).
        self._fallback = fallback
        self._held: dict[str, _Held] = {}

    def _where(self) -> trio.Nursery | None:
        return self._nursery if self._nursery is not None else self._fallback()

    @property
    def open(self) -> bool:
        return self._where() is not None

    async def enter(self, prefix: str, child: Server) -> None:
        """Enter ``child``'s lifespan (under ``prefix``) now; its exceptions propagate."""
        nursery = self._where()
        assert nursery is not None
        held = _Held(child)
        await nursery.start(held.hold)
        self._held[prefix] = held

    def release(self, prefix: str) -> None:
        """Exit the lifespan held under ``prefix`` (soon, in its own task)."""
        held = self._held.pop(prefix, None)
        if held is not None:
            held.release.set()

    @contextlib.asynccontextmanager
    async def serving(
        self, mounts: dict[str, Mount], own: contextlib.AbstractAsyncContextManager[Any] | None
    ) -> AsyncIterator[Any]:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    for prefix, mount in list(mounts.items()):
                        await self.enter(prefix, mount.child)
                    if own is None:
                        yield None
                    else:
                        async with own as state:
                            yield state
                finally:
                    self._nursery = None
                    for prefix in reversed(list(self._held)):
                        held = self._held.pop(prefix)
                        held.release.set()
                        await held.exited.wait()
        except BaseExceptionGroup as group:
            # What the serve raised (a port in use, a crash) passes through as it was: the
            # CLI reports it in one line (as Lifetime's task nursery does).
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    def mount_while_serving(self, parent: Server, prefix: str, mount: Mount) -> None:
        """Enter the child's lifespan in a task, then add its features (list-changed)."""
        nursery = self._where()
        assert nursery is not None
        nursery.start_soon(self._mount, parent, prefix, mount)

    async def _mount(self, parent: Server, prefix: str, mount: Mount) -> None:
        try:
            await self.enter(prefix, mount.child)
        except Exception:
            log.exception("mount %s: the lifespan of %r failed: not mounted", prefix, mount.child)
            if parent.mounts.get(prefix) is mount:
                del parent.mounts[prefix]
            return
        if parent.mounts.get(prefix) is not mount:  # unmounted meanwhile
            self.release(prefix)
            return
        try:
            mount.attach()
        except ValueError as exc:
            log.error("mount %s: %s: not mounted", prefix, exc)
            del parent.mounts[prefix]
            self.release(prefix)
