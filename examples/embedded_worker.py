"""An MCP server inside an existing trio application: a job queue with its own workers.

The application came first: workers take jobs from a memory channel and record results. MCP
is one more task in the same nursery, serving tools that enqueue jobs and read their state:
no second event loop, no threads, no locks (one trio thread owns all the state). Shutting the
application down (``shutdown.set()``, or SIGINT with ``trio.run``) stops accepting MCP
requests, lets in-flight ones finish (``app.shutdown()``), then stops the workers.

Run it:  python examples/embedded_worker.py   (Streamable HTTP at http://127.0.0.1:8000/mcp)
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Literal

import msgspec
import trio

from runtime import Server, ToolError

Status = Literal["queued", "running", "done"]


class Job(msgspec.Struct):
    id: int
    word: str
    status: Status = "queued"
    result: str | None = None


@dataclass
class JobQueue:
    """The application's own state and logic; it knows nothing about MCP."""

    jobs: dict[int, Job] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    send: trio.MemorySendChannel[Job] | None = None

    async def submit(self, word: str) -> Job:
        assert self.send is not None, "the workers are not running"
        job = Job(next(self.ids), word)
        self.jobs[job.id] = job
        await self.send.send(job)  # waits when the queue is full: natural backpressure
        return job

    async def worker(self, receive: trio.MemoryReceiveChannel[Job], seconds: float) -> None:
        async for job in receive:
            job.status = "running"
            await trio.sleep(seconds)  # the "work"
            job.status, job.result = "done", job.word[::-1]


def create_app(queue: JobQueue) -> Server:
    app = Server("job-queue", "1.0.0", instructions="Submit word-reversing jobs and check them.")

    @app.tool
    async def submit(word: str) -> Job:
        """Queue a job that reverses a word.

        Args:
            word: The word to reverse.
        """
        return await queue.submit(word)

    @app.tool(annotations={"readOnlyHint": True})
    async def status(job_id: int) -> Job:
        """A job's state and, once done, its result.

        Args:
            job_id: The id ``submit`` returned.
        """
        if job_id not in queue.jobs:
            raise ToolError(f"no job {job_id}")
        return queue.jobs[job_id]

    @app.tool(annotations={"readOnlyHint": True})
    async def counts() -> dict[str, int]:
        """How many jobs are in each state."""
        out = {"queued": 0, "running": 0, "done": 0}
        for job in queue.jobs.values():
            out[job.status] += 1
        return out

    return app


async def main(
    port: int = 8000,
    *,
    workers: int = 2,
    work_seconds: float = 0.5,
    shutdown: trio.Event | None = None,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The application: workers plus an MCP endpoint, in one nursery."""
    queue = JobQueue()
    app = create_app(queue)
    send, receive = trio.open_memory_channel[Job](100)
    queue.send = send
    async with trio.open_nursery() as nursery:
        async with receive:
            for _ in range(workers):
                nursery.start_soon(queue.worker, receive.clone(), work_seconds)
        # serve_http reports the bound address once it listens (port 0: an ephemeral one).
        address = await nursery.start(functools.partial(app.serve_http, port))
        task_status.started((address[0], address[1]))
        await (shutdown if shutdown is not None else trio.Event()).wait()
        app.shutdown()  # serve_http returns once in-flight requests are done
        await send.aclose()  # then the workers finish the queue and end


if __name__ == "__main__":
    trio.run(main)
