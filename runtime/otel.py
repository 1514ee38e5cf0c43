"""OpenTelemetry for MCP servers (``pip install 'mcp-runtime[otel]'``): a middleware.

    from runtime.otel import OpenTelemetry
    app.add_middleware(OpenTelemetry())

One SERVER span per request (and per notification from the client), named
``{mcp.method.name} {target}`` (the tool or prompt name when there is one), with the
attributes the OpenTelemetry MCP semantic conventions define (status: development;
gen-ai/mcp.md): ``mcp.method.name``, ``mcp.protocol.version``,
``mcp.session.id`` (handshake-era sessions: the connection id, never the HTTP
``Mcp-Session-Id`` itself, which is a credential), ``mcp.resource.uri``,
``jsonrpc.request.id``, ``jsonrpc.protocol.version``, ``gen_ai.tool.name``,
``gen_ai.prompt.name``, ``gen_ai.operation.name`` (``execute_tool``), ``network.transport``,
and on failure ``error.type`` and ``rpc.response.status_code`` (the JSON-RPC error code).

Context propagation, as the conventions recommend: the parent comes from the request's
``params._meta`` (``traceparent``, ``tracestate``, ``baggage``), and every message the
server sends while serving the request (progress, logging, sampling, elicitation, roots)
carries the span's context in its own ``params._meta``.

Metrics: ``mcp.server.operation.duration`` (histogram, s; the conventions' name),
``mcp.server.requests`` (counter), ``mcp.server.requests.in_flight``,
``mcp.server.overload.refusals`` (-32010 answers) and ``mcp.server.sessions.open``
(up-down counters). Only the OpenTelemetry API is imported: bring an SDK to export.

Names the client chose are never attribute values or span names as they are: a method, a
tool, a prompt or a resource the server does not know is ``"unknown"``
(``runtime.middleware.KnownNames``), so that the series of the metrics (and the span names
a backend groups by) stay as many as the server has names, whatever clients send.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

import trio
from opentelemetry import metrics, propagate, trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace import SpanKind, Status, StatusCode

from ._version import __version__
from .core import Peer, RequestContext
from .middleware import (
    KnownNames,
    Middleware,
    Next,
    Request,
    SessionCounter,
    method_label,
)
from .protocol import (
    PROMPTS_GET,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    SERVER_OVERLOADED,
    TOOLS_CALL,
    JSONRPCError,
    Refusal,
    RequestId,
)

if TYPE_CHECKING:
    from .features import App

__all__ = ["PROPAGATION_KEYS", "OpenTelemetry"]

#: The ``_meta`` keys that carry trace context (W3C Trace Context and Baggage).
PROPAGATION_KEYS: Final = ("traceparent", "tracestate", "baggage")
#: Attributes of the metrics (low cardinality: no ids, no URIs; names the server knows).
_METRIC_KEYS: Final = ("mcp.method.name", "gen_ai.tool.name", "mcp.protocol.version")
_TARGET: Final = {TOOLS_CALL: "gen_ai.tool.name", PROMPTS_GET: "gen_ai.prompt.name"}
#: Requests about one resource: their span names its URI (``mcp.resource.uri``).
_RESOURCE_METHODS: Final = frozenset({RESOURCES_READ, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE})
#: ``network.transport`` by the session's transport kind.
_NETWORK: Final = {"stdio": "pipe", "tcp": "tcp", "http": "tcp", "ws": "tcp", "unix": "unix"}


class _TracingPeer:
    """The request's peer, adding the span's context to what the server sends."""

    def __init__(self, peer: Peer, context: Context, propagator: TextMapPropagator) -> None:
        self._peer = peer
        self._context = context
        self._propagator = propagator

    @property
    def connection_id(self) -> str:
        return self._peer.connection_id

    def _with_context(self, params: Any) -> Any:
        if params is not None and not isinstance(params, dict):
            return params
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, context=self._context)
        if not carrier:
            return params
        params = dict(params or {})
        meta = params.get("_meta")
        params["_meta"] = {**carrier, **meta} if isinstance(meta, dict) else carrier
        return params

    async def notify(
        self, method: str, params: Any = None, *, related: RequestId | None = None
    ) -> None:
        await self._peer.notify(method, self._with_context(params), related=related)

    def start_soon(self, fn: Any, name: str | None = None) -> None:
        self._peer.start_soon(fn, name)

    def at_close(self, fn: Any) -> None:
        self._peer.at_close(fn)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float = 60.0,
        related: RequestId | None = None,
    ) -> Any:
        return await self._peer.request(
            method, self._with_context(params), timeout=timeout, related=related
        )


class OpenTelemetry(Middleware):
    """Spans, metrics and ``_meta`` context propagation; see the module docstring.

    ``tracer_provider``/``meter_provider``/``propagator``: the global ones by default.
    Add it first so its span covers (and its metrics count) what later middleware do.
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        propagator: TextMapPropagator | None = None,
    ) -> None:
        self.tracer = trace.get_tracer("mcp-runtime", __version__, tracer_provider)
        self.names = KnownNames()
        meter = metrics.get_meter("mcp-runtime", __version__, meter_provider)
        self.propagator = propagator or propagate.get_global_textmap()
        self.duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="MCP request duration as observed on the server",
        )
        self.requests = meter.create_counter(
            "mcp.server.requests", unit="{request}", description="MCP requests served"
        )
        self.in_flight = meter.create_up_down_counter(
            "mcp.server.requests.in_flight", unit="{request}", description="Requests now served"
        )
        self.refusals = meter.create_counter(
            "mcp.server.overload.refusals",
            unit="{request}",
            description="Requests refused as overload (-32010)",
        )
        self.early_refusals = meter.create_counter(
            "mcp.server.refusals",
            unit="{message}",
            description="Messages refused before any middleware ran",
        )
        sessions = meter.create_up_down_counter(
            "mcp.server.sessions.open",
            unit="{session}",
            description="Open handshake-era sessions and connections",
        )
        self.sessions = SessionCounter(lambda delta: sessions.add(delta))

    def bind(self, app: App) -> None:
        self.names.bind(app)

    def _parent(self, request: Request) -> Context:
        meta = request.meta
        carrier = {k: v for k in PROPAGATION_KEYS if isinstance(v := meta.get(k), str)}
        return self.propagator.extract(carrier) if carrier else Context()

    def _attributes(self, request: Request) -> tuple[str, dict[str, Any]]:
        method = method_label(request.method)
        attributes: dict[str, Any] = {
            "mcp.method.name": method,
            "jsonrpc.protocol.version": "2.0",
            "network.transport": _NETWORK.get(request.transport, "pipe"),
        }
        if request.protocol_version:
            attributes["mcp.protocol.version"] = request.protocol_version
        if request.id is not None:
            attributes["jsonrpc.request.id"] = str(request.id)
        if not request.context.modern:
            attributes["mcp.session.id"] = request.connection_id
        name = method
        target_key = _TARGET.get(method)
        if target_key is not None:
            target = request.params.get("name")
            if isinstance(target, str):
                known = _tool_or_prompt(self.names, method, target)
                attributes[target_key] = known
                name = f"{method} {known}"
            if method == TOOLS_CALL:
                attributes["gen_ai.operation.name"] = "execute_tool"
        elif method in _RESOURCE_METHODS:
            uri = request.params.get("uri")
            if isinstance(uri, str):
                attributes["mcp.resource.uri"] = self.names.resource(uri)
        return name, attributes

    def on_refusal(self, refusal: Refusal) -> None:
        """Counted (no span: nothing was served): ``mcp.server.refusals`` by transport and
        error, and ``mcp.server.overload.refusals`` for -32010."""
        attributes: dict[str, Any] = {
            "network.transport": _NETWORK.get(refusal.transport, "pipe"),
            "error.type": _refusal_error_type(refusal),
        }
        self.early_refusals.add(1, attributes)
        if refusal.code == SERVER_OVERLOADED:
            self.refusals.add(1, attributes)

    async def on_notification(self, request: Request, call_next: Next) -> None:
        """A SERVER span for each notification the client sends (``notifications/...``),
        with its parent from ``_meta`` too."""
        name, attributes = self._attributes(request)
        with self.tracer.start_as_current_span(
            name,
            context=self._parent(request),
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                await call_next()
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR))
                raise

    async def on_request(self, request: Request, call_next: Next) -> Any:
        self.sessions.saw(request)
        name, attributes = self._attributes(request)
        metric_attributes: dict[str, Any] = {
            k: attributes[k] for k in _METRIC_KEYS if k in attributes
        }
        ctx: RequestContext = request.context
        in_flight = {"mcp.method.name": attributes["mcp.method.name"]}
        self.in_flight.add(1, in_flight)
        error_type: str | None = None
        with self.tracer.start_as_current_span(
            name,
            context=self._parent(request),
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            peer = ctx.peer
            ctx.peer = _TracingPeer(peer, trace.set_span_in_context(span), self.propagator)
            try:
                result = await call_next()
                if isinstance(result, dict) and result.get("isError") is True:
                    error_type = "tool_error"  # a tool's own failure (semconv: error.type)
                    span.set_status(Status(StatusCode.ERROR))
                return result
            except JSONRPCError as exc:
                error_type = str(exc.code)
                span.set_attribute("rpc.response.status_code", str(exc.code))
                span.set_status(Status(StatusCode.ERROR, exc.message))
                if exc.code == SERVER_OVERLOADED:
                    self.refusals.add(1, metric_attributes)
                raise
            except trio.Cancelled:
                error_type = "cancelled"
                span.set_status(Status(StatusCode.ERROR, "cancelled"))
                raise
            except Exception as exc:
                error_type = type(exc).__qualname__
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, "internal error"))
                raise
            finally:
                ctx.peer = peer
                if error_type is not None:
                    span.set_attribute("error.type", error_type)
                    metric_attributes["error.type"] = error_type
                self.in_flight.add(-1, in_flight)
                self.requests.add(1, metric_attributes)
                self.duration.record(perf_counter() - request.started, metric_attributes)


def _tool_or_prompt(names: KnownNames, method: str, target: str) -> str:
    return names.tool(target) if method == TOOLS_CALL else names.prompt(target)


def _refusal_error_type(refusal: Refusal) -> str:
    """The JSON-RPC code, else the HTTP status, else ``websocket.close.<code>``."""
    if refusal.code is not None:
        return str(refusal.code)
    if refusal.status is not None:
        return str(refusal.status)
    if refusal.close_code is not None:
        return f"websocket.close.{refusal.close_code}"
    return "refused"
