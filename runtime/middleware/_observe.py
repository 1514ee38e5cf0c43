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
from ..framing import REDACTED, escape_json_text, loggable, redact_url
from ..protocol import (
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    JSONRPCError,
    Refusal,
)
from ._chain import Middleware, Next, Request
from ._labels import method_label

__all__ = [
    "DEFAULT_LOG_FIELDS",
    "DEFAULT_REDACT",
    "MethodTiming",
    "RequestLogging",
    "Timing",
    "redact",
    "redact_url",
]

#: The fields of ``params`` whose values a request log shows (paths of keys: a string is
#: split at its dots, a tuple is a path as it is): the names, addresses and numbers MCP
#: itself defines for the requests that carry them, none of which is a credential or the
#: user's own data. Every other value is logged as ``"[REDACTED]"`` (its key stays, so the
#: shape of a call is still seen): an allow-list, since no list of names a secret may hide
#: under (``password``, ``x-api-key``, ``pwd``, ``auth``...) is ever complete.
DEFAULT_LOG_FIELDS: Final[tuple[str | tuple[str, ...], ...]] = (
    "name",  # tools/call, prompts/get
    "uri",  # resources/read, resources/subscribe (URLs: see redact_url)
    "cursor",
    "level",  # logging/setLevel
    "taskId",
    "requestId",  # notifications/cancelled
    "progress",
    "total",
    "protocolVersion",  # initialize
    "clientInfo.name",
    "clientInfo.version",
    "ref.type",  # completion/complete
    "ref.name",
    "ref.uri",
    "argument.name",
    "_meta.progressToken",
    ("_meta", META_PROTOCOL_VERSION),
    ("_meta", META_CLIENT_INFO, "name"),
    ("_meta", META_CLIENT_INFO, "version"),
)
#: Keys (case-insensitive substrings) whose values are masked even inside a field that is
#: logged (``log_fields=("arguments",)`` still hides an argument named ``password``).
DEFAULT_REDACT: Final = (
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "auth",  # authorization, oauth, auth
    "key",  # api_key, api-key, x-api-key, apikey, private_key
    "cookie",
    "credential",
    "session",
    "signature",
)
#: Characters of a request id kept on a log line (a peer chooses its length).
_ID_CHARS: Final = 200

Fields = Iterable["str | tuple[str, ...]"]
#: A compiled allow-list: key -> True (the value is logged) or a deeper tree.
_Tree = dict[str, "_Tree | bool"]


def _compile(fields: Fields) -> _Tree:
    tree: _Tree = {}
    for field in fields:
        path = tuple(field.split(".")) if isinstance(field, str) else tuple(field)
        if not path:
            continue
        node = tree
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if child is True:
                break  # a shorter path already logs all of it
            assert isinstance(child, dict)
            node = child
        else:
            node[path[-1]] = True
    return tree


def _shown(value: Any, needles: tuple[str, ...]) -> Any:
    """A value inside a logged field: every key matching ``needles`` masked, URLs redacted."""
    if isinstance(value, dict):
        return {
            k: REDACTED if any(n in str(k).lower() for n in needles) else _shown(v, needles)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_shown(v, needles) for v in value]
    if isinstance(value, str):
        return redact_url(value)
    return value


def _walk(value: Any, node: _Tree | bool | None, needles: tuple[str, ...]) -> Any:
    if node is True:
        return _shown(value, needles)
    if isinstance(value, dict):
        tree = node if isinstance(node, dict) else None
        return {k: _walk(v, tree.get(str(k)) if tree else None, needles) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, node, needles) for v in value]
    return REDACTED


def redact(
    value: Any, *, fields: Fields = DEFAULT_LOG_FIELDS, keys: Iterable[str] = DEFAULT_REDACT
) -> Any:
    """``value`` (a request's params) as a log may show it: the values of ``fields`` (see
    :data:`DEFAULT_LOG_FIELDS`) kept, except under a key that contains one of ``keys``
    (case-insensitive); every other value replaced by ``"[REDACTED]"``, at any depth
    (mappings and lists keep their shape); URLs among what is kept passed through
    :func:`redact_url`."""
    return _walk(value, _compile(fields), tuple(k.lower() for k in keys))


def _json(value: Any, limit: int) -> str:
    """``value`` as one-line JSON (see ``escape_json_text``), cut after ``limit`` characters."""
    text = escape_json_text(msgspec.json.encode(value).decode())
    return text[:limit] + "..." if len(text) > limit else text


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

    Every value a peer chose (method, id, principal, the refusal's reason) is escaped for a
    one-line log (``runtime.framing.loggable``): no line break, no control sequence.

    ``include_params``: also log the params, showing only the values of ``log_fields``
    (:data:`DEFAULT_LOG_FIELDS`: names, URIs, cursors, versions...; the rest
    ``[REDACTED]``, and inside them any key matching ``redact_keys`` too; URLs without
    userinfo and query values: :func:`redact`), the text cut at ``max_params_chars``
    (limit: a log line never carries a whole payload; DESIGN.md "Logging").
    """

    def __init__(
        self,
        *,
        logger: str | logging.Logger = "mcp_runtime.requests",
        level: int = logging.INFO,
        include_params: bool = False,
        log_fields: Fields = DEFAULT_LOG_FIELDS,
        redact_keys: Iterable[str] = DEFAULT_REDACT,
        max_params_chars: int = 500,
    ) -> None:
        self.log = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self.include_params = include_params
        self.log_fields = _compile(log_fields)
        self.redact_keys = tuple(k.lower() for k in redact_keys)
        self.max_params_chars = max_params_chars

    def _line(self, request: Request, outcome: str) -> None:
        if not self.log.isEnabledFor(self.level):
            return
        elapsed_ms = (perf_counter() - request.started) * 1000
        extra = ""
        if self.include_params:
            shown = _walk(request.params, self.log_fields, self.redact_keys)
            extra = f" params={_json(shown, self.max_params_chars)}"
        self.log.log(
            self.level,
            "mcp %s method=%s id=%s era=%s transport=%s principal=%s outcome=%s duration_ms=%.3f%s",
            "notification" if request.is_notification else "request",
            loggable(request.method),
            _json(request.id, _ID_CHARS),
            request.era,
            request.transport,
            loggable(principal_key(request.principal) or "-"),
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
            "status=%s close=%s peer=%s reason=%s",
            loggable(refusal.method or "-"),
            _json(refusal.request_id, _ID_CHARS),
            refusal.transport,
            refusal.connection_id,
            loggable(principal_key(refusal.principal) or "-"),
            "-" if refusal.code is None else f"error:{refusal.code}",
            refusal.status or "-",
            refusal.close_code or "-",
            loggable(refusal.peer or "-"),
            loggable(refusal.message),
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
