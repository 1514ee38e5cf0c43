"""One request of the client, from its parameters to its decoded result.

:class:`Caller` builds the request in the era the client speaks (``RequestBuilder``), sends
it through the conversation under the request's timeout, and reads the answer:

- 2026-07-28 input rounds (basic/utilities/mrtr): a result with ``resultType:
  "input_required"`` lists ``inputRequests`` that the application's handlers answer
  (``Answers``); the request goes again with ``inputResponses`` and the server's
  ``requestState``, at most :data:`MAX_INPUT_ROUNDS` times.
- The 2026-07-28 tasks extension: a server may answer with a task instead of the result
  (``resultType: "task"``); the caller then follows the task (``tasks/get`` at its poll
  interval, its input requests answered through ``tasks/update``) until it ends, within
  the same timeout, and returns its result.
- The result decodes as the type asked for, or :class:`BadMessage` names what is wrong.
- A 2026-07-28 request refused with -32022 UnsupportedProtocolVersion whose ``data.supported``
  names a stateless revision this client speaks goes once more, naming that revision (and
  later requests name it too): 2026-07-28 basic/versioning, "the client SHOULD retry with a
  version from the supported list". Once: a server that refuses the version it named is
  not negotiating, and the second refusal is the caller's answer.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeVar

import msgspec
import trio

from ..framing import loggable
from ..protocol import (
    INTERNAL_ERROR,
    MODERN_VERSIONS,
    TASKS_GET,
    TASKS_UPDATE,
    UNSUPPORTED_PROTOCOL_VERSION,
    Task,
)
from ._answers import Answers
from ._conversation import Conversation
from ._decode import convert_as, decode_as, decode_value
from ._errors import ClientError, PeerError, RequestTimeout
from ._notifications import NotificationCallback
from ._outgoing import RequestBuilder, progress_token
from ._serving import ServerRequestHandler

__all__ = ["DEFAULT", "MAX_INPUT_ROUNDS", "Caller"]

log = logging.getLogger("mcp_runtime.client")

T = TypeVar("T")
#: Stands for "the client's own timeout" in a ``timeout=`` argument (None means none).
DEFAULT: Final[Any] = object()
#: Input rounds (2026-07-28 mrtr) one request may go through before the client stops: a
#: server that keeps asking is looping, and each round costs the user an answer.
MAX_INPUT_ROUNDS: Final = 10
#: How often a task that names no poll interval is polled (milliseconds).
_DEFAULT_POLL_MS: Final = 200


class _ResultProbe(msgspec.Struct):
    """The fields of a 2026-07-28 result that say whether it is the result at all (an input
    round, a task), read before the result is decoded as the type asked for."""

    result_type: str | None = msgspec.field(default=None, name="resultType")
    input_requests: dict[str, Any] | None = msgspec.field(default=None, name="inputRequests")
    request_state: str | None = msgspec.field(default=None, name="requestState")


class Caller:
    """Sends the client's requests (see the module docstring). ``era`` is the era the client
    speaks (the handshake sets it); ``timeout`` the default of every request.

    The ``Client``'s methods, the handshake and the listen streams call it; it holds no
    request state of its own (the conversation's table does), so concurrent calls are
    independent. Bounds: each exchange (every input round, every ``tasks/get`` and
    ``tasks/update``) is bounded by the request's timeout; a request goes through at most
    ``MAX_INPUT_ROUNDS`` rounds (then :class:`ClientError`), and a task it became is
    followed for at most that timeout again. What the server answers is decoded here, so
    a malformed result is :class:`BadMessage`, a failed or cancelled task
    :class:`PeerError` with the task's error.
    """

    def __init__(
        self,
        conversation: Conversation,
        builder: RequestBuilder,
        answers: Answers,
        *,
        timeout: float | None,
        era: Literal["modern", "handshake"],
    ) -> None:
        self.conversation = conversation
        self.builder = builder
        self.answers = answers
        self.timeout = timeout
        self.era: Literal["modern", "handshake"] = era

    @property
    def modern(self) -> bool:
        return self.era == "modern"

    async def raw(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
        repeatable: bool | None = None,
        modern: bool | None = None,
        early: bool = False,
        request_id: int | None = None,
        on_notification: NotificationCallback | None = None,
        on_request: ServerRequestHandler | None = None,
    ) -> msgspec.Raw:
        """Send one request and return its raw result. ``modern`` overrides the era (the
        era probe, the handshake); ``early``: it may go before the client is ready (the
        handshake itself); ``request_id``: an id taken already (a listen's is its
        subscription id). A 2026-07-28 -32022 refusal naming a version this client speaks
        sends it once more (see the module docstring), under a new id unless one was given,
        and with a timeout of its own."""
        if timeout is DEFAULT:
            timeout = self.timeout
        modern = self.modern if modern is None else modern
        for attempt in (1, 2):
            out = self.builder.request(
                self.conversation.next_id() if request_id is None else request_id,
                method,
                params,
                modern=modern,
                progress=progress is not None,
                repeatable=repeatable,
            )
            try:
                return await self.conversation.request(
                    out,
                    timeout=timeout,
                    progress=progress,
                    progress_token=progress_token(out.request_id) if progress is not None else None,
                    early=early,
                    on_notification=on_notification,
                    on_request=on_request,
                )
            except PeerError as exc:
                version = _version_to_retry(exc) if modern and attempt == 1 else None
                if version is None:
                    raise
                log.info(
                    "%s: the server refused version %s; once more with %s",
                    method,
                    loggable(out.version),
                    version,
                )
                self.builder.version = version
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        result_type: type[T],
        *,
        timeout: float | None = DEFAULT,
        progress: Callable[[float, float | None, str | None], Any] | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> T:
        """A request whose result decodes as ``result_type``, through its input rounds and a
        task the server chose to run it as (see the module docstring)."""
        body = dict(params or {})
        for _round in range(MAX_INPUT_ROUNDS + 1):
            raw = await self.raw(
                method, body, timeout=timeout, progress=progress, on_notification=on_notification
            )
            probe = (
                decode_as(raw, _ResultProbe, method)
                if b"resultType" in bytes(raw)
                else _ResultProbe()
            )
            if probe.result_type == "task" and result_type is not Task:
                task = decode_as(raw, Task, method)
                return convert_as(await self.await_task(task, timeout), result_type, method)
            if probe.result_type != "input_required":
                return decode_as(raw, result_type, method)
            body["inputResponses"] = await self.answers.input_requests(probe.input_requests or {})
            if probe.request_state is not None:
                body["requestState"] = probe.request_state
            else:
                body.pop("requestState", None)
        raise ClientError(f"{method}: the server asked for input {MAX_INPUT_ROUNDS} times")

    async def get_task(self, task_id: str) -> Task:
        return await self.call(TASKS_GET, {"taskId": task_id}, Task)

    async def update_task(self, task_id: str, input_responses: Mapping[str, Any]) -> None:
        params = {"taskId": task_id, "inputResponses": dict(input_responses)}
        decode_value(await self.raw(TASKS_UPDATE, params), TASKS_UPDATE)

    async def await_task(self, task: Task, timeout: float | None) -> Any:
        """Poll a modern task (``tasks/get`` at its poll interval) until it ends, answering
        its input requests through ``tasks/update``; its result, or :class:`PeerError`."""
        if timeout is DEFAULT:
            timeout = self.timeout
        answered: set[str] = set()
        with trio.move_on_after(math.inf if timeout is None else timeout):
            while True:
                if task.status == "completed":
                    return task.result
                if task.status in ("failed", "cancelled"):
                    error = task.error if isinstance(task.error, dict) else {}
                    raise PeerError(
                        int(error.get("code", INTERNAL_ERROR)),
                        str(error.get("message", f"task {task.status}")),
                        error.get("data"),
                    )
                if task.status == "input_required" and task.input_requests:
                    fresh = {k: v for k, v in task.input_requests.items() if k not in answered}
                    if fresh:
                        responses = await self.answers.input_requests(fresh)
                        answered.update(responses)
                        await self.update_task(task.task_id, responses)
                        task = await self.get_task(task.task_id)
                        continue
                interval = task.poll_interval_ms or task.poll_interval or _DEFAULT_POLL_MS
                await trio.sleep(interval / 1000)
                task = await self.get_task(task.task_id)
        # The caller's timeout covers the whole task, as it covers any request.
        assert timeout is not None
        raise RequestTimeout(f"task {task.task_id}", timeout)


def _version_to_retry(refusal: PeerError) -> str | None:
    """The stateless revision to try after ``refusal``: the newest this client speaks among
    those a -32022 names in ``data.supported`` (2026-07-28 basic/versioning); None for any
    other error, or when the server names none this client speaks."""
    if refusal.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(refusal.data, dict):
        return None
    supported = refusal.data.get("supported")
    if not isinstance(supported, list):
        return None
    return next((version for version in MODERN_VERSIONS if version in supported), None)
