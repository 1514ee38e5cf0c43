"""A server whose every request is logged, for the log-forging and redaction tests: the
default request log (params shown through the allow-list) on ``mcp_runtime.requests``, and
one that shows every argument on ``mcp_runtime.requests.arguments`` (so that what it still
hides, the keys of the deny-list and the userinfo and query of URLs, is seen to be hidden)."""

from __future__ import annotations

from runtime import Server
from runtime.middleware import DEFAULT_LOG_FIELDS, RequestLogging

app = Server("logged", "0.0.1")
app.add_middleware(
    RequestLogging(include_params=True),
    RequestLogging(
        logger="mcp_runtime.requests.arguments",
        include_params=True,
        log_fields=(*DEFAULT_LOG_FIELDS, "arguments"),
    ),
)


@app.tool
def fetch(url: str, headers: dict[str, str] | None = None) -> str:
    """Pretend to fetch ``url``."""
    return f"fetched {len(url)} characters of URL"


@app.resource("notes://welcome")
def welcome() -> str:
    """A fixed resource."""
    return "hello"
