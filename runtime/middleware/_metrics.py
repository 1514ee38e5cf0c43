"""Request metrics in the Prometheus text exposition format, without a dependency.

``Metrics`` is a middleware (add it first, so it sees what later middleware refuse) and the
source of the ``/metrics`` endpoint of the HTTP transports (``serve_http(metrics=...)``,
off by default). A method label is an MCP method's name or ``"unknown"`` (a client chooses
the method string: see ``_labels``), so the series are as many as MCP has methods, whatever
clients send.
"""

from __future__ import annotations

import bisect
from time import perf_counter
from typing import Any, Final

import trio

from ..protocol import SERVER_OVERLOADED, JSONRPCError, Refusal
from ._chain import Middleware, Next, Request
from ._labels import method_label
from ._sessions import SessionCounter

__all__ = ["DEFAULT_BUCKETS", "Metrics"]

#: Seconds; the Prometheus client libraries' default buckets.
DEFAULT_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


class _Histogram:
    __slots__ = ("buckets", "count", "sum")

    def __init__(self, size: int) -> None:
        self.buckets = [0] * size
        self.count = 0
        self.sum = 0.0


class Metrics(Middleware):
    """Counts requests (by method and outcome), their durations (a histogram by method),
    requests in flight, overload refusals (-32010 answers, from the chain or made before
    it), every refusal made before the chain (by transport, code and HTTP status) and
    open sessions."""

    content_type = CONTENT_TYPE

    def __init__(self, *, buckets: tuple[float, ...] = DEFAULT_BUCKETS):
        self.bounds = tuple(sorted(buckets))
        self.requests: dict[tuple[str, str], int] = {}
        self.durations: dict[str, _Histogram] = {}
        self.in_flight = 0
        self.overload_refusals = 0
        #: (transport, JSON-RPC code or "none", HTTP status or "none") -> refusals made
        #: before the chain (``on_refusal``); the codes and statuses are the runtime's own.
        self.refusals: dict[tuple[str, str, str], int] = {}
        self.sessions = SessionCounter()

    async def on_request(self, request: Request, call_next: Next) -> Any:
        self.sessions.saw(request)
        self.in_flight += 1
        outcome = "ok"
        try:
            return await call_next()
        except JSONRPCError as exc:
            outcome = "error"
            if exc.code == SERVER_OVERLOADED:
                self.overload_refusals += 1
            raise
        except trio.Cancelled:
            outcome = "cancelled"
            raise
        except BaseException:
            outcome = "error"
            raise
        finally:
            self.in_flight -= 1
            elapsed = perf_counter() - request.started
            method = method_label(request.method)
            key = (method, outcome)
            self.requests[key] = self.requests.get(key, 0) + 1
            histogram = self.durations.get(method)
            if histogram is None:
                histogram = self.durations[method] = _Histogram(len(self.bounds))
            index = bisect.bisect_left(self.bounds, elapsed)
            if index < len(self.bounds):
                histogram.buckets[index] += 1
            histogram.count += 1
            histogram.sum += elapsed

    def on_refusal(self, refusal: Refusal) -> None:
        if refusal.code == SERVER_OVERLOADED:
            self.overload_refusals += 1
        status = refusal.status
        key = (
            refusal.transport,
            "none" if refusal.code is None else str(refusal.code),
            # A WebSocket closed in refusal: its close code, apart from HTTP statuses.
            str(status)
            if status is not None
            else ("none" if refusal.close_code is None else f"close-{refusal.close_code}"),
        )
        self.refusals[key] = self.refusals.get(key, 0) + 1

    def render(self) -> bytes:
        """The Prometheus text exposition (format 0.0.4) of every metric."""
        lines = [
            "# HELP mcp_server_requests_total MCP requests answered, by method and outcome.",
            "# TYPE mcp_server_requests_total counter",
        ]
        for (method, outcome), n in sorted(self.requests.items()):
            lines.append(
                f'mcp_server_requests_total{{method="{_label(method)}",outcome="{outcome}"}} {n}'
            )
        lines += [
            "# HELP mcp_server_operation_duration_seconds MCP request duration on the server.",
            "# TYPE mcp_server_operation_duration_seconds histogram",
        ]
        for method, hist in sorted(self.durations.items()):
            label = _label(method)
            cumulative = 0
            for bound, n in zip(self.bounds, hist.buckets, strict=True):
                cumulative += n
                lines.append(
                    f'mcp_server_operation_duration_seconds_bucket{{method="{label}",'
                    f'le="{bound}"}} {cumulative}'
                )
            lines.append(
                f'mcp_server_operation_duration_seconds_bucket{{method="{label}",le="+Inf"}} '
                f"{hist.count}"
            )
            lines.append(
                f'mcp_server_operation_duration_seconds_sum{{method="{label}"}} {hist.sum}'
            )
            lines.append(
                f'mcp_server_operation_duration_seconds_count{{method="{label}"}} {hist.count}'
            )
        lines += [
            "# HELP mcp_server_requests_in_flight MCP requests being served now.",
            "# TYPE mcp_server_requests_in_flight gauge",
            f"mcp_server_requests_in_flight {self.in_flight}",
            "# HELP mcp_server_overload_refusals_total Requests refused with -32010.",
            "# TYPE mcp_server_overload_refusals_total counter",
            f"mcp_server_overload_refusals_total {self.overload_refusals}",
            "# HELP mcp_server_refusals_total Messages refused before any middleware ran.",
            "# TYPE mcp_server_refusals_total counter",
        ]
        for (transport, code, status), n in sorted(self.refusals.items()):
            lines.append(
                f'mcp_server_refusals_total{{transport="{_label(transport)}",code="{code}",'
                f'status="{status}"}} {n}'
            )
        lines += [
            "# HELP mcp_server_sessions_open Open handshake-era sessions and connections.",
            "# TYPE mcp_server_sessions_open gauge",
            f"mcp_server_sessions_open {self.sessions.open}",
        ]
        return ("\n".join(lines) + "\n").encode()


def _label(value: str) -> str:
    """A label value escaped as the text format requires (backslash, quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
