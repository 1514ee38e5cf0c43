"""A mounted server's own middleware, run for the requests that reach its features.

``parent.mount(child, prefix)`` serves the child's tools, prompts and resources from the
parent's dispatcher, inside the parent's middleware. When the child has middleware of its
own (``child.add_middleware``), the composition root adds :class:`MountedChains` as the
innermost of the parent's request middleware: for ``tools/call``, ``prompts/get``,
``resources/read`` and ``completion/complete`` naming one of a mount's features, it runs
the child's chain (its request hooks, then its operation hooks) with the names the child
knows (``search``, not ``kid_search``; ``notes://welcome``, not ``notes://kid/welcome``),
then goes on with the parent's chain and handler under the parent's names again.

For the four lists (``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list``) the parent's handler makes the combined page, then each
mount's chain runs around that mount's part of it: the child's middleware sees a list
request whose result is its own items under its own names (copies: change them at will),
and what it returns (filtered, reordered, changed) is namespaced again and takes that
part's place in the page. A page with none of a mount's items does not run its chain.
This is what fastmcp's mounted servers' ``on_list_tools`` see. Every other request passes
straight on.

A server without mounted middleware has none of this: the composition root adds it only
when a mounted server (or one mounted in it) has middleware when the dispatcher is built.
A server with middleware mounted while serving into a parent whose dispatcher was built
without it gets it then (:func:`keep_mounted_chains`): the dispatcher the connections
already hold is changed in place, and a request already routed finishes on the chain it
started with.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final

import msgspec

from ..core import Dispatcher, RequestContext
from ..middleware import Middleware, MiddlewareDispatcher, Next, Request
from ..protocol import (
    COMPLETION_COMPLETE,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ._mount import Mount, Mountable
from ._prefix import prefixed_name, prefixed_uri, unprefixed_uri

__all__ = [
    "MountedChains",
    "has_mounted_middleware",
    "keep_mounted_chains",
    "routes_mounts",
]

_encode: Final = msgspec.json.encode
_decode: Final = msgspec.json.decode
_Rewrite = Callable[[dict[str, Any]], None]

#: list method -> (the mount's kind, the result's key, the item's identifying field)
_LISTS: Final = {
    TOOLS_LIST: ("tools", "tools", "name"),
    PROMPTS_LIST: ("prompts", "prompts", "name"),
    RESOURCES_LIST: ("resources", "resources", "uri"),
    RESOURCES_TEMPLATES_LIST: ("templates", "resourceTemplates", "uriTemplate"),
}


def has_mounted_middleware(server: Mountable) -> bool:
    """Whether a server mounted in ``server`` (at any depth) has middleware."""
    return any(
        mount.child.middleware_chain or has_mounted_middleware(mount.child)
        for mount in server.mounts.values()
    )


def child_chain(child: Mountable) -> list[Middleware]:
    chain: list[Middleware] = list(child.middleware_chain)
    if has_mounted_middleware(child):
        chain.append(MountedChains(child))
    return chain


def _named(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    return value if isinstance(value, str) else None


def _target(
    parent: Mountable, method: str, params: dict[str, Any]
) -> tuple[Mount[Any], _Rewrite] | None:
    """The mount whose feature the request names, and the rewrite back to the parent's
    name; ``params`` is rewritten to the child's name in place."""
    holder: dict[str, Any] = params
    if method == COMPLETION_COMPLETE:
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        holder = ref
        kind, key = ("prompts", "name") if ref.get("type") == "ref/prompt" else ("templates", "uri")
    elif method == TOOLS_CALL:
        kind, key = "tools", "name"
    elif method == PROMPTS_GET:
        kind, key = "prompts", "name"
    elif method == RESOURCES_READ:
        kind, key = "resources", "uri"
    else:
        return None
    wanted = _named(holder, key)
    if wanted is None:
        return None
    for mount in parent.mounts.values():
        prefix = mount.prefix
        owned = mount.owned[kind].get(wanted)
        if owned is not None:
            item = owned[0]
            if kind in ("tools", "prompts"):
                holder[key] = item.name

                def back(p: dict[str, Any], prefix: str = prefix) -> None:
                    h = p.get("ref", p) if method == COMPLETION_COMPLETE else p
                    if isinstance(h, dict) and isinstance(h.get(key), str):
                        h[key] = prefixed_name(prefix, h[key])

                return mount, back
            holder[key] = item.template.template if kind == "templates" else item.uri
        elif kind == "resources" and any(
            copy.template.match(wanted) is not None for _, copy in mount.owned["templates"].values()
        ):
            holder[key] = unprefixed_uri(prefix, wanted)
        else:
            continue

        def back_uri(p: dict[str, Any], prefix: str = prefix) -> None:
            h = p.get("ref", p) if method == COMPLETION_COMPLETE else p
            if isinstance(h, dict) and isinstance(h.get(key), str):
                h[key] = prefixed_uri(prefix, h[key])

        return mount, back_uri
    return None


class MountedChains(Middleware):
    """The mounted servers' own middleware, for the requests that reach their features."""

    def __init__(self, parent: Mountable) -> None:
        self.parent = parent
        #: child -> (its chain when built, the dispatcher running it)
        self._dispatchers: dict[Mountable, tuple[tuple[Any, ...], MiddlewareDispatcher | None]] = {}

    def _dispatcher(self, child: Mountable) -> MiddlewareDispatcher | None:
        """The child's chain as it is now: rebuilt (and swapped whole) when the child's
        middleware changed since the last request (``child.add_middleware`` while the
        parent serves); a request already in the old one finishes on it (it holds it)."""
        key = (*child.middleware_chain, has_mounted_middleware(child))
        built = self._dispatchers.get(child)
        if built is not None and built[0] == key:
            return built[1]
        chain = child_chain(child)
        before = built[0] if built is not None else ()
        for middleware in chain:
            if isinstance(middleware, MountedChains) or not any(m is middleware for m in before):
                middleware.bind(child)  # once per middleware, as when a dispatcher is built
        dispatcher = MiddlewareDispatcher(Dispatcher({}), chain) if chain else None
        self._dispatchers[child] = (key, dispatcher)
        return dispatcher

    async def on_request(self, request: Request, call_next: Next) -> Any:
        listing = _LISTS.get(request.method)
        if listing is not None:
            return await self._list(request, call_next, *listing)
        params = request.params
        found = _target(self.parent, request.method, params)
        if found is None:
            return await call_next()
        mount, back = found
        dispatcher = self._dispatcher(mount.child)
        if dispatcher is None:
            back(params)
            return await call_next()
        ctx = request.context
        ctx.params = msgspec.Raw(_encode(params))  # what the child's chain decodes
        ctx.prepared = None  # (a reading of the params it replaced)

        async def parent_rest(ctx: RequestContext) -> Any:
            raw = ctx.params
            decoded = _decode(raw) if raw is not None else {}
            request.params = decoded if isinstance(decoded, dict) else {}
            back(request.params)
            return await call_next()

        return await dispatcher.around(ctx, parent_rest)

    async def _list(
        self, request: Request, call_next: Next, kind: str, key: str, field: str
    ) -> Any:
        result = await call_next()
        items = result.get(key) if isinstance(result, dict) else None
        if not isinstance(items, list):
            return result
        for mount in list(self.parent.mounts.values()):
            owned = mount.owned[kind]
            slots = [
                i
                for i, item in enumerate(items)
                if isinstance(item, dict) and item.get(field) in owned
            ]
            if not slots:
                continue
            dispatcher = self._dispatcher(mount.child)
            if dispatcher is None:
                continue
            # The child's own wire forms (deep copies: the registry's are shared).
            mine = [_decode(_encode(owned[items[i][field]][0].listing)) for i in slots]

            async def own_items(ctx: RequestContext, mine: list[Any] = mine) -> Any:
                return {key: mine}

            seen = await dispatcher.around(request.context, own_items)
            kept = seen.get(key) if isinstance(seen, dict) else None
            back = [
                _namespaced(mount.prefix, kind, field, item)
                for item in (kept if isinstance(kept, list) else [])
                if isinstance(item, dict) and isinstance(item.get(field), str)
            ]
            first, gone = slots[0], set(slots)
            rest = [item for i, item in enumerate(items[first:], first) if i not in gone]
            items = items[:first] + back + rest
        result[key] = items
        return result


def _namespaced(prefix: str, kind: str, field: str, item: dict[str, Any]) -> dict[str, Any]:
    """A child's list item under the parent's name (``item`` is the child's copy)."""
    value = item[field]
    named = kind in ("tools", "prompts")
    item[field] = prefixed_name(prefix, value) if named else prefixed_uri(prefix, value)
    return item


def keep_mounted_chains(
    parent: Mountable, dispatcher: Dispatcher, child: Mountable, *, serving: bool
) -> bool:
    """``child``, mounted in ``parent``, has middleware now (or a server mounted in it
    has): make ``dispatcher`` (``parent``'s, built) run it from the next request. One that
    routes mounts already picks it up by itself (:meth:`MountedChains._dispatcher`); one
    serving without gets the chains in place (connections hold it). False: it must be
    rebuilt (built but not serving)."""
    if not (child.middleware_chain or has_mounted_middleware(child)):
        return True
    if routes_mounts(dispatcher):
        return True
    if serving:
        _install_mounted_chains(parent, dispatcher)
        return True
    return False


def _install_mounted_chains(parent: Mountable, dispatcher: Dispatcher) -> None:
    """Give ``dispatcher`` (``parent``'s, held by its connections) the mounted servers'
    chains, in place: appended, innermost, to its middleware when it has some, else put in
    front of the era dispatcher's routing (an instance attribute over ``route``: the core
    looks ``self.route`` up per request, so no indirection costs a server that never
    needs this)."""
    target = dispatcher
    while not isinstance(target, MiddlewareDispatcher):
        inner = getattr(target, "inner", None)
        if not isinstance(inner, Dispatcher):
            break
        target = inner
    chains = MountedChains(parent)
    if isinstance(target, MiddlewareDispatcher):
        target.rechain([*target.middleware, chains])
        return
    # ``copy.copy``: the era dispatcher as it routes now (same tables), which the chain
    # wraps; the held object then routes through the chain.
    wrapped = MiddlewareDispatcher(copy.copy(target), [chains])
    target.route = wrapped.route  # type: ignore[method-assign]


def routes_mounts(dispatcher: Dispatcher) -> bool:
    """Whether ``dispatcher`` (a server's) runs mounted servers' middleware."""
    while True:
        if isinstance(dispatcher, MiddlewareDispatcher):
            return any(isinstance(m, MountedChains) for m in dispatcher.middleware)
        route = vars(dispatcher).get("route")  # put in front by _install_mounted_chains
        if isinstance(getattr(route, "__self__", None), MiddlewareDispatcher):
            return True
        inner = getattr(dispatcher, "inner", None)
        if not isinstance(inner, Dispatcher):
            return False
        dispatcher = inner
