"""This runtime's benchmark server.

mcp-runtime serve benchmarks/servers/mcp_runtime_server.py                     # stdio
mcp-runtime serve benchmarks/servers/mcp_runtime_server.py --transport http --port 8000  # /mcp
"""

import time
from functools import cache

import trio

from runtime import Server

BLOB = ("0123456789abcdef" * 64)[:1024]  # 1,024 bytes of ASCII text, the same in every server
MIB = 1 << 20


@cache
def big_text(mib: int) -> str:
    """``mib`` MiB of ASCII text, built on first use (not at start-up: the spawn row)."""
    return "0123456789abcdef" * (mib * MIB // 16)


app = Server("bench-mcp-runtime", "1.0.0")


@app.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@app.resource("mem://blob", mime_type="text/plain")
async def blob() -> str:
    """1,024 bytes of text."""
    return BLOB


# The big-payload rows (benchmarks/run.py measure_big): the same resources in every server.
@app.resource("mem://text/1", mime_type="text/plain")
async def text_1mib() -> str:
    """1 MiB of text."""
    return big_text(1)


@app.resource("mem://text/16", mime_type="text/plain")
async def text_16mib() -> str:
    """16 MiB of text."""
    return big_text(16)


@app.resource("mem://bytes/4", mime_type="application/octet-stream")
async def bytes_4mib() -> bytes:
    """4 MiB of bytes (a base64 blob on the wire)."""
    return big_text(4).encode()


@app.tool
async def size(data: str) -> int:
    """The length of ``data`` (the big tools/call argument row)."""
    return len(data)


@app.tool
async def touch() -> str:
    """Tell every subscriber that mem://blob changed (the fan-out row)."""
    app.notify_resource_updated("mem://blob")
    return "touched"


class _LongestStep(trio.abc.Instrument):
    """The longest trio task step: how long one message kept the event loop from anything else."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = time.perf_counter()  # the step that installs it is under way

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._started = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self.longest = max(self.longest, time.perf_counter() - self._started)


_steps: list[_LongestStep] = []


@app.tool
async def longest_step_ms() -> float:
    """The longest task step since the last call, in ms (the first call starts watching)."""
    if not _steps:
        _steps.append(_LongestStep())
        trio.lowlevel.add_instrument(_steps[0])
        return 0.0
    longest, _steps[0].longest = _steps[0].longest, 0.0
    return longest * 1000
