"""A 2026-07-28 remote's task, run to its end for a handshake-era client.

A 2026-07-28 remote may answer a request with a task (the ``io.modelcontextprotocol/tasks``
extension, SEP-2663) when the proxy's upstream client declares the extension. A handshake-era
client that did not ask for a task (the extension is not declared across eras) gets the
request's outcome as if it had been answered at once: :func:`await_remote_task` polls the task
and answers its result or its error, asking our client the task's input requests.
"""

from __future__ import annotations

import contextlib
from typing import Any

import trio

from ..client import Client, ClientError, PeerError
from ._hop import per_hop_removed, remote_error
from ._tasks import CANCEL_WAIT, Ask, poll_wait, task_error

__all__ = ["await_remote_task"]


async def await_remote_task(
    client: Client, created: dict[str, Any], ask: Ask, *, max_poll_interval: float
) -> Any:
    """A 2026-07-28 remote chose to run a handshake-era client's request as a task
    (tasks extension): poll it with ``tasks/get`` at its poll interval until it ends and
    answer its result (or its error); its input requests are asked of our client as
    server-to-client requests and answered with ``tasks/update``. Our client's
    cancellation cancels the task (``tasks/cancel``)."""
    task_id = str(created.get("taskId"))
    interval = created.get("pollIntervalMs")
    answered: set[str] = set()
    try:
        while True:
            await trio.sleep(poll_wait(interval, max_poll_interval))
            try:
                task = await client.get_task(task_id)
            except PeerError as exc:
                raise remote_error(exc) from None
            interval = task.poll_interval_ms or task.poll_interval or interval
            if task.status == "completed":
                return per_hop_removed(task.result)
            if task.status in ("failed", "cancelled"):
                raise task_error(task.error, task.status)
            fresh = {
                key: asked
                for key, asked in (task.input_requests or {}).items()
                if key not in answered and isinstance(asked, dict)
            }
            if task.status == "input_required" and fresh:
                responses = {
                    key: await ask(str(asked.get("method")), asked.get("params"))
                    for key, asked in fresh.items()
                }
                answered.update(responses)
                await client.update_task(task_id, responses)
                interval = 0
    except trio.Cancelled:
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(CANCEL_WAIT),
            contextlib.suppress(ClientError),
        ):
            await client.cancel_task(task_id)
        raise
