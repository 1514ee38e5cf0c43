"""Response caching for the cacheable lists and reads, by the server's cache hints.

MCP 2026-07-28 server/utilities/caching: results of ``server/discover``, the list methods
and ``resources/read`` carry ``ttlMs`` (how long the result stays fresh) and ``cacheScope``
(``"public"``: the same for every caller; ``"private"``: for this authorization context
only). This middleware keeps a result exactly as long as the hint the server gives for it
(``Server(cache_ttl_ms=..., cache_hints=...)``) and, for ``"private"`` results, per
principal. A hint of 0 ms (the default) caches nothing. Served in both eras; a modern hit
says how much of its ``ttlMs`` is left.

A list result is keyed on the registry's current entries too, so a tool, prompt or resource
added or removed (what sends list-changed) is never hidden by a cached list; a resource the
server reports updated (``notify_resource_updated``) is dropped from the cache at once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from ..features import principal_key
from ..protocol import CACHEABLE_METHODS, RESOURCES_READ
from ._chain import Middleware, Next, Request

if TYPE_CHECKING:
    from ..features import App, Change

__all__ = ["ResponseCache"]

_canonical: Final = msgspec.json.Encoder(order="sorted").encode


class ResponseCache(Middleware):
    """Caches cacheable results for their hinted TTL; at most ``max_entries`` results
    (least recently used dropped first). ``hits``/``misses`` count lookups."""

    def __init__(self, *, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self._app: App | None = None
        #: key -> (expiry, result, the URI of a resources/read or None)
        self._entries: OrderedDict[bytes, tuple[float, Any, str | None]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def bind(self, app: App) -> None:
        self._app = app
        relays = app.registry.changes.relays
        if self._forget not in relays:
            relays.append(self._forget)

    def _forget(self, change: Change) -> None:
        """A resource update drops its cached reads (the relay of the change broadcast)."""
        what, uri = change
        if what != "updated":
            return
        for key in [k for k, entry in self._entries.items() if entry[2] == uri]:
            del self._entries[key]

    def _key(self, request: Request, scope: str) -> bytes:
        assert self._app is not None
        params = {k: v for k, v in request.params.items() if k != "_meta"}
        registry = self._app.registry
        # The registered objects' identities: any registration change makes a new key.
        generation = [
            id(entry)
            for table in (registry.tools, registry.prompts, registry.resources, registry.templates)
            for entry in table.values()
        ]
        who = principal_key(request.principal) if scope != "public" else None
        return _canonical(
            [request.method, request.era, request.protocol_version, who, params, generation]
        )

    async def on_request(self, request: Request, call_next: Next) -> Any:
        method = request.method
        if self._app is None or method not in CACHEABLE_METHODS:
            return await call_next()
        ttl_ms, scope = self._app.cache_hint(method)
        if ttl_ms <= 0:
            return await call_next()
        key = self._key(request, scope)
        now = trio.current_time()
        entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            self._entries.move_to_end(key)
            self.hits += 1
            result = dict(entry[1])
            if isinstance(result.get("_meta"), dict):
                result["_meta"] = dict(result["_meta"])
            if request.context.modern:
                result["ttlMs"] = max(0, int((entry[0] - now) * 1000))
                result["cacheScope"] = scope
            return result
        self.misses += 1
        result = await call_next()
        if isinstance(result, dict) and result.get("resultType", "complete") == "complete":
            stored = msgspec.json.decode(msgspec.json.encode(result))  # a private copy
            uri = request.params.get("uri") if method == RESOURCES_READ else None
            self._entries[key] = (
                now + ttl_ms / 1000,
                stored,
                uri if isinstance(uri, str) else None,
            )
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return result
