"""Request logging (with redaction) and timing: middleware that observe outcome and duration."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Final

import msgspec
import trio

from ..features import principal_key
from ..protocol import JSONRPCError, Refusal
from ._chain import Middleware, Next, Request
from ._labels import method_label

__all__ = ["DEFAULT_REDACT", "MethodTiming", "RequestLogging", "Timing", "redact"]

#: Keys (case-insensitive substrings) whose values never reach a log line.
DEFAULT_REDACT: Final = (
    "password",
    "passwd",
    "secret",
    "token",
    "authorization",
    "api_key",
    "apikey",
    "cookie",
    "credential",
    "private_key",
)
_MASK: Final = "[REDACTED]"


def redact(value: Any, keys: Iterable[str] = DEFAULT_REDACT) -> Any:
    """``value`` with the value of every mapping key that contains one of ``keys``
    (case-insensitive) replaced by ``"[REDACTED]"``, at any depth."""
    needles = tuple(k.lower() for k in keys)

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return {
                k: _MASK if any(n in str(k).lower() for n in needles) else walk(v)
                for k, v in item.items()
            }
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value)


def _outcome(exc: BaseException | None, result: Any) -> str:
    if exc is None:
        if isinstance(result, dict) and result.get("isError") is True:
            return "tool-error"
        return "ok"
    if isinstance(exc, JSONRPCError):
        return f"error:{exc.code}"
    if isinstance(exc, trio.Cancelled):
        return "cancelled"
    return "exception"


class RequestLogging(Middleware):
    """One structured line per request (and notification) on ``logger``: method, id, era,
    transport, principal, outcome (``ok``, ``tool-error``, ``error:<code>``, ``cancelled``,
    ``exception``) and duration in ms.

    ``include_params``: also log the params, with every value under a key matching
    ``redact_keys`` masked and the text cut at ``max_params_chars`` (limit: a log line
    never carries a whole payload; DESIGN.md "Logging").
    """

    def __init__(
        self,
        *,
        logger: str | logging.Logger = "mcp_runtime.requests",
        level: int = logging.INFO,
        include_params: bool = False,
        redact_keys: Iterable[str] = DEFAULT_REDACT,
        max_params_chars: int = 500,
    ) -> None:
        self.log = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self.include_params = include_params
        self.redact_keys = tuple(redact_keys)
        self.max_params_chars = max_params_chars

    def _line(self, request: Request, outcome: str) -> None:
        if not self.log.isEnabledFor(self.level):
            return
        elapsed_ms = (perf_counter() - request.started) * 1000
        extra = ""
        if self.include_params:
            text = msgspec.json.encode(redact(request.params, self.redact_keys)).decode()
            if len(text) > self.max_params_chars:
                text = text[: self.max_params_chars] + "..."
            extra = f" params={text}"
        self.log.log(
            self.level,
            "mcp %s method=%s id=%s era=%s transport=%s principal=%s outcome=%s duration_ms=%.3f%s",
            "notification" if request.is_notification else "request",
            request.method,
            msgspec.json.encode(request.id).decode(),
            request.era,
            request.transport,
            principal_key(request.principal) or "-",
            outcome,
            elapsed_ms,
            extra,
        )

    async def on_request(self, request: Request, call_next: Next) -> Any:
        result: Any = None
        failure: BaseException | None = None
        try:
            result = await call_next()
            return result
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._line(request, _outcome(failure, result))

    def on_refusal(self, refusal: Refusal) -> None:
        """One line for a message refused before the chain (never its params: it was not
        read as far as that)."""
        if not self.log.isEnabledFor(self.level):
            return
        self.log.log(
            self.level,
            "mcp refusal method=%s id=%s transport=%s conn=%s principal=%s outcome=%s "
            "status=%s close=%s peer=%s reason=%r",
            refusal.method or "-",
            msgspec.json.encode(refusal.request_id).decode(),
            refusal.transport,
            refusal.connection_id,
            principal_key(refusal.principal) or "-",
            "-" if refusal.code is None else f"error:{refusal.code}",
            refusal.status or "-",
            refusal.close_code or "-",
            refusal.peer or "-",
            refusal.message[:200],
        )

    async def on_notification(self, request: Request, call_next: Next) -> None:
        failure: BaseException | None = None
        try:
            await call_next()
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._line(request, _outcome(failure, None))


@dataclass(slots=True)
class MethodTiming:
    """Durations of one method's requests, in seconds."""

    count: int = 0
    errors: int = 0
    total: float = 0.0
    max: float = 0.0

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0


class Timing(Middleware):
    """Times every request: per-method ``stats`` (count, errors, total, max), and
    ``on_timing(method, seconds, outcome)`` when given (to feed your own metrics). A method
    no MCP revision defines is counted as ``"unknown"`` (``method_label``): a client's
    made-up names do not grow ``stats``, nor the label sets of what ``on_timing`` feeds."""

    def __init__(self, on_timing: Callable[[str, float, str], None] | None = None) -> None:
        self.on_timing = on_timing
        self.stats: dict[str, MethodTiming] = {}

    async def on_request(self, request: Request, call_next: Next) -> Any:
        result: Any = None
        failure: BaseException | None = None
        try:
            result = await call_next()
            return result
        except BaseException as exc:
            failure = exc
            raise
        finally:
            elapsed = perf_counter() - request.started
            outcome = _outcome(failure, result)
            method = method_label(request.method)
            stat = self.stats.get(method)
            if stat is None:
                stat = self.stats[method] = MethodTiming()
            stat.count += 1
            stat.total += elapsed
            stat.max = max(stat.max, elapsed)
            if outcome.startswith(("error", "exception")):
                stat.errors += 1
            if self.on_timing is not None:
                self.on_timing(method, elapsed, outcome)
