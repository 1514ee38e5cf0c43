"""A mounted server's own middleware, run for the requests that reach its features.

``parent.mount(child, prefix)`` serves the child's tools, prompts and resources from the
parent's dispatcher, inside the parent's middleware. When the child has middleware of its
own (``child.add_middleware``), the composition root adds :class:`MountedChains` as the
innermost of the parent's request middleware: for ``tools/call``, ``prompts/get``,
``resources/read`` and ``completion/complete`` naming one of a mount's features, it runs
the child's chain (its request hooks, then its operation hooks) with the names the child
knows (``search``, not ``kid_search``; ``notes://welcome``, not ``notes://kid/welcome``),
then goes on with the parent's chain and handler under the parent's names again. Every
other request (lists included: they combine every mount) passes straight on.

A server without mounted middleware has none of this: the composition root adds it only
when a mounted server (or one mounted in it) has middleware when the dispatcher is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ._mount import Mount, prefixed_name, prefixed_uri, unprefixed_uri
from .core import Dispatcher, RequestContext
from .middleware import Middleware, MiddlewareDispatcher, Next, Request

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["MountedChains", "has_mounted_middleware", "routes_mounts"]

_encode: Final = msgspec.json.encode
_decode: Final = msgspec.json.decode
_Rewrite = Callable[[dict[str, Any]], None]


def has_mounted_middleware(server: Server) -> bool:
    """Whether a server mounted in ``server`` (at any depth) has middleware."""
    return any(
        mount.child.middleware_chain or has_mounted_middleware(mount.child)
        for mount in server.mounts.values()
    )


def child_chain(child: Server) -> list[Middleware]:
    chain: list[Middleware] = list(child.middleware_chain)
    if has_mounted_middleware(child):
        chain.append(MountedChains(child))
    return chain


def _named(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    return value if isinstance(value, str) else None


def _target(parent: Server, method: str, params: dict[str, Any]) -> tuple[Mount, _Rewrite] | None:
    """The mount whose feature the request names, and the rewrite back to the parent's
    name; ``params`` is rewritten to the child's name in place."""
    holder: dict[str, Any] = params
    if method == "completion/complete":
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        holder = ref
        kind, key = ("prompts", "name") if ref.get("type") == "ref/prompt" else ("templates", "uri")
    elif method == "tools/call":
        kind, key = "tools", "name"
    elif method == "prompts/get":
        kind, key = "prompts", "name"
    elif method == "resources/read":
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
                    h = p.get("ref", p) if method == "completion/complete" else p
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
            h = p.get("ref", p) if method == "completion/complete" else p
            if isinstance(h, dict) and isinstance(h.get(key), str):
                h[key] = prefixed_uri(prefix, h[key])

        return mount, back_uri
    return None


class MountedChains(Middleware):
    """The mounted servers' own middleware, for the requests that reach their features."""

    def __init__(self, parent: Server) -> None:
        self.parent = parent
        self._dispatchers: dict[Server, MiddlewareDispatcher | None] = {}

    def _dispatcher(self, child: Server) -> MiddlewareDispatcher | None:
        if child not in self._dispatchers:
            chain = child_chain(child)
            for middleware in chain:
                middleware.bind(child)
            self._dispatchers[child] = (
                MiddlewareDispatcher(Dispatcher({}), chain) if chain else None
            )
        return self._dispatchers[child]

    async def on_request(self, request: Request, call_next: Next) -> Any:
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

        async def parent_rest(ctx: RequestContext) -> Any:
            raw = ctx.params
            decoded = _decode(raw) if raw is not None else {}
            request.params = decoded if isinstance(decoded, dict) else {}
            back(request.params)
            return await call_next()

        return await dispatcher.around(ctx, parent_rest)


def routes_mounts(dispatcher: Dispatcher) -> bool:
    """Whether ``dispatcher`` (a server's) runs mounted servers' middleware."""
    while True:
        if isinstance(dispatcher, MiddlewareDispatcher):
            return any(isinstance(m, MountedChains) for m in dispatcher.middleware)
        inner = getattr(dispatcher, "inner", None)
        if not isinstance(inner, Dispatcher):
            return False
        dispatcher = inner
