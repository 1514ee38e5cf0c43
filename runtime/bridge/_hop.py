"""What belongs to one hop of the bridge, and is not passed across it.

A message the proxy forwards crosses two hops: our client to us, us to the remote. Some of
what a message carries is the sender's own for its hop and must not reach the other side:
our client's progress token and 2026-07-28 ``io.modelcontextprotocol/*`` ``_meta`` keys going
up (:func:`strip_meta`); the remote's 2026-07-28 ``resultType``, cache hints and ``_meta``
serverInfo coming down (:func:`per_hop_removed`), and the subscription id of an upstream
listen (:func:`without_subscription`, replaced by ours with :func:`with_subscription`). Our
own ``initialize``/``server/discover`` result declares the remote's features as it declares
them (:func:`describe`), and the remote's errors are answered as it gave them
(:func:`remote_error`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..client import Client, PeerError
from ..protocol import (
    META_MCP_PREFIX,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    TASKS_EXTENSION,
    JSONRPCError,
    relayed_error,
)

__all__ = [
    "LEGACY_TASKS_CAPABILITY",
    "declared",
    "describe",
    "per_hop_removed",
    "remote_error",
    "remote_tool_tasks",
    "strip_meta",
    "with_subscription",
    "without_subscription",
]

#: The remote's capabilities we serve as it declares them (``subscribe``, ``listChanged``:
#: forwarded per downstream session; ``tasks``: the 2025-11-25 tasks capability).
_FEATURES: Final = ("tools", "resources", "prompts", "completions", "logging", "tasks")

#: The 2025-11-25 ``tasks`` server capability the proxy declares to a handshake-era client of a
#: 2026-07-28 remote with the tasks extension (list, cancel, task-augmented tools/call: what
#: ``_tasks`` translates).
LEGACY_TASKS_CAPABILITY: Final[dict[str, Any]] = {
    "list": {},
    "cancel": {},
    "requests": {"tools": {"call": {}}},
}

_PER_HOP_FIELDS: Final = ("resultType", "ttlMs", "cacheScope")


def remote_error(exc: PeerError) -> JSONRPCError:
    """The remote's JSON-RPC error, answered to our client with the same code, message and
    data (a code that is not an integer becomes -32603: ``relayed_error``)."""
    return relayed_error(exc.code, exc.message, exc.data)


def strip_meta(params: dict[str, Any]) -> dict[str, Any]:
    """Our client's ``_meta`` is not the remote's: keep only what is not per-hop
    (2026-07-28 ``io.modelcontextprotocol/*`` keys and the progress token are ours)."""
    meta = params.pop("_meta", None)
    if isinstance(meta, dict):
        kept = {
            k: v
            for k, v in meta.items()
            if k != "progressToken" and not k.startswith(META_MCP_PREFIX)
        }
        if kept:
            params["_meta"] = kept
    return params


def per_hop_removed(result: Any, *, keep_result_type: bool = False) -> Any:
    """The remote's result without what belongs to its hop: 2026-07-28 ``resultType``, the
    cache hints (server/utilities/caching) and ``_meta`` serverInfo. Our server adds its own
    to a modern request's result; a handshake-era client never sees them."""
    if not isinstance(result, dict):
        return result
    for key in _PER_HOP_FIELDS:
        if not (keep_result_type and key == "resultType"):
            result.pop(key, None)
    meta = result.get("_meta")
    if isinstance(meta, dict):
        meta.pop(META_SERVER_INFO, None)
        if not meta:
            del result["_meta"]
    return result


def without_subscription(params: dict[str, Any]) -> dict[str, Any]:
    """The remote's ``_meta`` subscription id belongs to the upstream listen (per hop)."""
    meta = params.get("_meta")
    if isinstance(meta, dict) and META_SUBSCRIPTION_ID in meta:
        meta = {k: v for k, v in meta.items() if k != META_SUBSCRIPTION_ID}
        params = {k: v for k, v in params.items() if k != "_meta"}
        if meta:
            params["_meta"] = meta
    return params


def with_subscription(params: dict[str, Any], subscription_id: Any) -> dict[str, Any]:
    """The remote's listen notification as ours: its subscription id replaced by
    ``subscription_id`` (our client's listen request), the rest of its ``_meta`` kept. A
    ``_meta`` that is not an object (2026-07-28 basic: it must be one) is not passed on."""
    params = without_subscription(params)
    meta = params.get("_meta")
    kept = meta if isinstance(meta, dict) else {}
    return {**params, "_meta": {**kept, META_SUBSCRIPTION_ID: subscription_id}}


def declared(capabilities: Mapping[str, Any], *path: str) -> Any:
    """What the remote's capabilities say at ``path`` (``declared(caps, "tools",
    "listChanged")``): None where a level is missing or is not an object. MCP's capabilities
    are objects all the way down; a remote's other values declare nothing."""
    value: Any = capabilities
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def remote_tool_tasks(capabilities: Mapping[str, Any]) -> bool:
    """Whether the remote declares task-augmented ``tools/call`` (2025-11-25
    ``tasks.requests.tools.call``)."""
    tools = declared(capabilities, "tasks", "requests", "tools")
    return isinstance(tools, Mapping) and "call" in tools


def describe(result: Any, client: Client | None, *, modern: bool) -> Any:
    """Our ``initialize``/``server/discover`` result, with the remote's features as it
    declares them (so ``subscribe``, ``listChanged`` and tasks only where it has them)."""
    if client is None or client.description is None or not isinstance(result, dict):
        return result
    remote = client.description
    caps = dict(result.get("capabilities") or {})
    for feature in _FEATURES:
        caps.pop(feature, None)
        if isinstance(remote.capabilities.get(feature), dict):
            caps[feature] = remote.capabilities[feature]
    # Tasks: forwarded in the same protocol, translated across eras (_tasks), so
    # declared in our client's protocol whenever the remote has tool-call tasks in its.
    same_era = client.era == ("modern" if modern else "handshake")
    extensions = remote.capabilities.get("extensions")
    remote_extension = isinstance(extensions, dict) and TASKS_EXTENSION in extensions
    tool_tasks = remote_tool_tasks(remote.capabilities)
    if not same_era:
        caps.pop("tasks", None)
        if not modern and remote_extension:
            caps["tasks"] = {key: dict(value) for key, value in LEGACY_TASKS_CAPABILITY.items()}
    if modern and (remote_extension if same_era else tool_tasks):
        caps["extensions"] = {**(caps.get("extensions") or {}), TASKS_EXTENSION: {}}
    result["capabilities"] = caps
    if remote.instructions and "instructions" not in result:
        result["instructions"] = remote.instructions
    return result
