"""Where an HTTP request's server time goes: the HTTP layer alone versus the whole request.

    python -m benchmarks.http_floor

Runs, interleaved and repeated, 16 keep-alive clients (the load client of the suite, modern
2026-07-28 wire) against (1) ``benchmarks/servers/runtime_http_floor.py``, this runtime's
HTTP server answering a fixed body, and (2) ``mcp-runtime serve`` with the echo tool; prints
calls/s and server CPU microseconds per request (utime + stime from /proc), medians.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections.abc import Callable

from . import _procfs as procfs
from . import _wire as wire
from .run import OURS, ROOT, SERVERS, http_argv, server_env

REPEATS = 3


def _measure(argv_for: Callable[[int], list[str]]) -> tuple[float, float]:
    port = wire.free_port()
    proc = subprocess.Popen(
        argv_for(port), cwd=str(ROOT), env=server_env(OURS), stdin=subprocess.DEVNULL
    )
    try:
        wire.wait_for_port(port, 60, lambda: proc.poll() is None)
        clients = [wire.HttpClient(port, "/mcp", "modern") for _ in range(16)]
        template = wire.echo_template(True)
        wire.http_load(clients, template, total=500, time_cap=1)
        cpu0 = procfs.cpu_seconds(proc.pid)
        res = wire.http_load(clients, template, total=20_000, time_cap=4)
        cpu = procfs.cpu_seconds(proc.pid) - cpu0
        for client in clients:
            client.close()
        return res.rate, cpu / max(res.ok, 1) * 1e6
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    setups: dict[str, Callable[[int], list[str]]] = {
        "HTTP layer, fixed answer": lambda port: [
            sys.executable,
            str(SERVERS / "runtime_http_floor.py"),
            str(port),
        ],
        "tools/call echo (modern JSON)": lambda port: http_argv(OURS, "http-json", port),
    }
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
    for _ in range(REPEATS):
        for name, argv in setups.items():
            found[name].append(_measure(argv))
    for name, runs in found.items():
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:32s} {rate:9,.0f} calls/s   {cpu:6.0f} us server CPU per request")


if __name__ == "__main__":
    main()
