"""What an idle connection holds: tracemalloc and trio's task tree, diffed over N idle peers.

python -m benchmarks.idle_probe tcp|ws|session|listen [--count 1000] [--top 25] [--depth 1]

Serves ``benchmarks/servers/mcp_runtime_server.py`` in this process with tracemalloc on, and
opens ``count`` idle peers of the kind asked from a child process (the same raw clients as
``benchmarks.run`` and ``benchmarks._fanout``, so none of their allocations are counted here).
Prints per peer: traced bytes, trio tasks, cancel scopes, nurseries, and the allocation sites
that grew the most; with ``--depth N`` > 1, grouped by their N innermost
frames (which of our frames holds the memory, not only which line allocated it).
Diagnostic only; the README rows come from ``benchmarks.run`` (RSS of a separate server
process).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.util
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import trio

from runtime.transports import HttpLimits

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import sys, time
from benchmarks import _wire as wire, _fanout as fanout
kind, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if kind == "tcp":
    socks, _ = wire.open_idle_tcp(port, n, 60)
elif kind == "ws":
    socks, _ = wire.open_idle_ws(port, "/mcp", n, 60, [])
elif kind == "session":
    ids = fanout._sessions(port, n, 0)
    socks = [fanout._open_stream(port, fanout._get_request(port, i)) for i in ids]
    fanout._await_all(socks, b"\\r\\n\\r\\n", time.perf_counter() + 60)
else:
    socks = [fanout._open_stream(port, fanout._listen_request(port, 10 + i, False))
             for i in range(n)]
    fanout._await_all(socks, b"acknowledged", time.perf_counter() + 60)
print(len(socks), flush=True)
sys.stdin.read()
"""


def _tasks() -> Counter[str]:
    """Every live trio task by name, and cancel scopes / nurseries via gc."""
    counts: Counter[str] = Counter()
    root = trio.lowlevel.current_root_task()
    assert root is not None
    stack = [root]
    while stack:
        task = stack.pop()
        counts["task"] += 1
        counts["task:" + task.name.rsplit(".", 1)[-1]] += 1
        for nursery in task.child_nurseries:
            counts["nursery (live)"] += 1
            stack.extend(nursery.child_tasks)
    gc.collect()
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name in ("CancelScope", "Nursery", "MemorySendChannel", "MemoryReceiveChannel"):
            counts["gc:" + name] += 1
    return counts


async def _probe(kind: str, count: int, top: int, depth: int = 1) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_server", ROOT / "benchmarks" / "servers" / "mcp_runtime_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: Any = module.app
    # All from one loopback address: its share is the whole cap too.
    http_limits = HttpLimits(max_connections=count + 100, max_connections_per_address=count + 100)
    async with trio.open_nursery() as nursery:
        if kind == "tcp":
            address = await nursery.start(app.serve_tcp, 0)
        elif kind == "ws":
            serve = functools.partial(app.serve_websocket, http_limits=http_limits)
            address = await nursery.start(serve, 0)
        else:
            serve = functools.partial(app.serve_http, http_limits=http_limits)
            address = await nursery.start(serve, 0)
        port = address[1]
        await trio.sleep(0.2)
        gc.collect()
        before = tracemalloc.take_snapshot()
        tasks_before = _tasks()
        child = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHILD, kind, str(port), str(count)],
            cwd=str(ROOT),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert child.stdout is not None and child.stdin is not None
        line = b""
        with trio.fail_after(180):
            while not line.endswith(b"\n"):
                line += await child.stdout.receive_some(64)
        opened = int(line)
        await trio.sleep(1.0)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tasks_after = _tasks()
        await child.stdin.aclose()
        await child.wait()
        nursery.cancel_scope.cancel()
    stats = after.compare_to(before, "lineno" if depth == 1 else "traceback")
    total = sum(s.size_diff for s in stats)
    print(f"{kind}: {opened} idle peers; traced {total / opened / 1024:.2f} KiB per peer")
    for key in sorted(set(tasks_after) | set(tasks_before)):
        diff = tasks_after[key] - tasks_before[key]
        if diff:
            print(f"  {key:40s} {diff / opened:+.2f} per peer")
    print(f"  top {top} allocation sites (bytes per peer, objects per peer):")
    for s in stats[:top]:
        where = [_where(frame) for frame in reversed(s.traceback)]
        print(f"  {s.size_diff / opened:9.0f} {s.count_diff / opened:6.2f}  {where[0]}")
        for outer in where[1:]:
            print(f"  {'':16s}  < {outer}")


def _where(frame: tracemalloc.Frame) -> str:
    path = frame.filename.replace(str(ROOT) + "/", "")
    if "site-packages/" in path:
        path = path.split("site-packages/")[1]
    return f"{path}:{frame.lineno}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.idle_probe")
    parser.add_argument("kind", choices=["tcp", "ws", "session", "listen"])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--depth", type=int, default=1, help="frames per allocation site")
    args = parser.parse_args(argv)
    tracemalloc.start(args.depth)
    trio.run(_probe, args.kind, args.count, args.top, args.depth)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
