"""Where an HTTP request's server time goes: trio alone, the HTTP layer, the whole request.

    python -m benchmarks.http_floor                 # calls/s and server CPU per request
    python -m benchmarks.http_floor --instructions  # user-space instructions per request
    python -m benchmarks.http_floor --opcodes       # Python bytecodes per request, by function
    python -m benchmarks.http_floor --opcodes --session   # the same for session POSTs

Three servers answer the suite's load client (16 keep-alive clients, modern 2026-07-28
wire): (1) ``benchmarks/servers/trio_floor.py``, trio waking one task per connection and
answering fixed bytes with no HTTP parsing; (2) ``benchmarks/servers/runtime_http_floor.py``,
this runtime's HTTP server answering a fixed body; (3) ``mcp-runtime serve`` with the echo
tool. The default mode prints calls/s and server CPU microseconds per request (utime + stime
from /proc), medians of interleaved repeats. ``--instructions`` counts the instructions each
server executes per request under valgrind's callgrind (the difference between a run of 300
and one of 1,300 requests, 4 clients): a figure that the machine's noise does not move,
though it leaves out the kernel's share and cache effects. ``--opcodes`` counts the Python
bytecodes the whole modern request executes (``benchmarks/_opcount.py``: 500 requests, 16
clients) and prints them per request by module and by function: the interpreter is about
four fifths of the server's CPU here, so this shows where to cut, exactly and repeatably.
With ``--session`` it counts ``tools/call`` POSTs to open handshake-era (2025-11-25) sessions,
one per client, answered as JSON, instead.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable

from . import _procfs as procfs
from . import _wire as wire
from .run import OURS, ROOT, SERVERS, http_argv, server_env

REPEATS = 3


def _setups(instructions: bool) -> dict[str, Callable[[int], list[str]]]:
    def ours(port: int) -> list[str]:
        if not instructions:
            return http_argv(OURS, "http-json", port)
        # callgrind must start the interpreter itself, not the console script
        argv = http_argv(OURS, "http-json", port)
        return [sys.executable, "-m", "runtime", *argv[argv.index("serve") :]]

    ceiling = {
        # the load client's own ceiling (``benchmarks.run``'s ceiling_http16): not a trio
        # program and not run under callgrind, only beside the calls/s of the others
        "fixed-reply responder (ceiling)": lambda port: [
            sys.executable,
            str(SERVERS / "null_http.py"),
            str(port),
        ]
    }
    return {
        **({} if instructions else ceiling),
        "trio alone, fixed bytes": lambda port: [
            sys.executable,
            str(SERVERS / "trio_floor.py"),
            str(port),
        ],
        "HTTP layer, fixed answer": lambda port: [
            sys.executable,
            str(SERVERS / "runtime_http_floor.py"),
            str(port),
        ],
        "tools/call echo (modern JSON)": ours,
    }


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


def _instructions_for(argv: list[str], port: int, requests: int) -> int:
    """Instructions the server executed in all, having answered ``requests``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
            cwd=str(ROOT),
            env=server_env(OURS),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wire.wait_for_port(port, 300, lambda: proc.poll() is None)
            clients = [wire.HttpClient(port, "/mcp", "modern") for _ in range(4)]
            res = wire.http_load(clients, wire.echo_template(True), total=requests, time_cap=600)
            if res.ok != requests:
                raise wire.BenchError(f"{res.ok} of {requests} answered under callgrind")
            for client in clients:
                client.close()
            proc.send_signal(signal.SIGINT)  # callgrind writes its counts at exit
            proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with open(out, encoding="utf-8") as counts:
            found = re.search(r"^summary: (\d+)", counts.read(), re.MULTILINE)
        if found is None:
            raise wire.BenchError("no callgrind summary")
        return int(found.group(1))


def _instructions(argv_for: Callable[[int], list[str]]) -> float:
    """Instructions per request: start-up and shutdown cancel out of the difference."""
    counts = []
    for requests in (300, 1_300):
        port = wire.free_port()
        counts.append(_instructions_for(argv_for(port), port, requests))
    return (counts[1] - counts[0]) / 1_000


def _opcodes(requests: int = 500, top: int = 40, *, session: bool = False) -> None:
    """Python bytecodes per modern ``tools/call`` (``session``: per ``tools/call`` POSTed to
    a handshake-era session), by module and by function."""
    port = wire.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "opcodes.json")
        argv = http_argv(OURS, "http-json", port)
        argv = [sys.executable, "-m", "benchmarks._opcount", out, *argv[argv.index("serve") :]]
        proc = subprocess.Popen(argv, cwd=str(ROOT), env=server_env(OURS), stdin=subprocess.DEVNULL)
        try:
            wire.wait_for_port(port, 300, lambda: proc.poll() is None)
            mode = "session" if session else "modern"
            clients = [wire.HttpClient(port, "/mcp", mode) for _ in range(16)]
            if session:
                for client in clients:
                    client.handshake()
            template = wire.echo_template(not session)
            wire.http_load(clients, template, total=200, time_cap=120)  # warm the memos
            proc.send_signal(signal.SIGUSR1)
            time.sleep(0.5)
            res = wire.http_load(clients, template, total=requests, time_cap=300)
            if res.ok != requests:
                raise wire.BenchError(f"{res.ok} of {requests} answered while tracing")
            proc.send_signal(signal.SIGUSR2)
            deadline = time.monotonic() + 60
            while not os.path.exists(out) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(0.5)  # the dump is written by the server's signal handler
            with open(out, encoding="utf-8") as f:
                counts: dict[str, int] = json.load(f)
        finally:
            proc.kill()
            proc.wait()
    by_module: Counter[str] = Counter()
    for key, n in counts.items():
        by_module[_short(key.rsplit(":", 2)[0])] += n
    print(f"{sum(counts.values()) / requests:,.0f} Python bytecodes per request\n")
    for module, n in by_module.most_common(25):
        print(f"{n / requests:8.0f}  {module}")
    print()
    for key, n in sorted(counts.items(), key=lambda kv: -kv[1])[:top]:
        path, line, name = key.rsplit(":", 2)
        print(f"{n / requests:8.1f}  {name} ({_short(path)}:{line})")


def _short(path: str) -> str:
    for marker in ("site-packages/", f"{ROOT}/", "python3.11/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_floor")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per request under valgrind's callgrind (slow, exact)",
    )
    parser.add_argument(
        "--opcodes",
        action="store_true",
        help="count Python bytecodes per request of the whole modern request, by function",
    )
    parser.add_argument(
        "--session",
        action="store_true",
        help="with --opcodes: count tools/call POSTs to handshake-era sessions instead",
    )
    args = parser.parse_args()
    if args.opcodes:
        _opcodes(session=args.session)
        return
    setups = _setups(args.instructions)
    if args.instructions:
        if shutil.which("valgrind") is None:
            sys.exit("--instructions needs valgrind (Debian/Ubuntu: apt install valgrind)")
        for name, argv in setups.items():
            print(f"{name:32s} {_instructions(argv):9,.0f} instructions per request")
        return
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
