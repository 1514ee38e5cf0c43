"""A served file whose middleware observes refusals (tests/middleware/test_refusals.py):
``Metrics`` and ``RequestLogging`` (both with ``on_refusal``), and a middleware that
answers the made-up method ``test/metrics`` with the Prometheus text, so a test over
stdio can read what the server counted."""

from __future__ import annotations

import logging
import sys
from typing import Any

import trio

from runtime import Server
from runtime.middleware import Metrics, Next, Request, RequestLogging

app = Server("refusals")
metrics = Metrics()

# RequestLogging's lines on stderr, where the test reads them.
_handler = logging.StreamHandler(sys.stderr)
_handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
_logger = logging.getLogger("test.refusals")
_logger.addHandler(_handler)
_logger.setLevel(logging.INFO)
_logger.propagate = False


@app.tool
async def slow(seconds: float = 0.5) -> str:
    """Sleep, holding the connection's one in-flight slot."""
    await trio.sleep(seconds)
    return "slept"


async def expose(request: Request, call_next: Next) -> Any:
    if request.method == "test/metrics":
        return {"text": metrics.render().decode()}
    return await call_next()


app.add_middleware(metrics, RequestLogging(logger=_logger), expose)
