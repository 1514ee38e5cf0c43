"""A chain of three shipped middleware, for measuring what a chain costs per request:

MCP_RUNTIME_MIDDLEWARE=benchmarks.middleware_chain:CHAIN python -m benchmarks.http_floor --opcodes
"""

from __future__ import annotations

from runtime.middleware import Authorize, Middleware, RateLimit, Timing

#: Timing, a rate limit that never refuses, and an authorization rule that never matches
#: the benchmark's tool: three middleware doing their real work on every request.
CHAIN: list[Middleware] = [
    Timing(),
    RateLimit(per_principal=(1e9, 1e9)),
    Authorize(tools={"admin_*": {"admin"}}),
]
