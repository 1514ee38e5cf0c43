"""Middleware named on the command line by tests/middleware/test_cli_middleware.py."""

from __future__ import annotations

from typing import Any

from runtime.middleware import Next, RateLimit, Request

limit = RateLimit(overall=(0.001, 2))


async def stamp(request: Request, call_next: Next) -> Any:
    result = await call_next()
    if request.method == "tools/call":
        result["content"][0].text += " (via cli middleware)"
    return result


chain = [stamp, limit]
