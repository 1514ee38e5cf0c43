"""Scale-out figures: the Redis store against in-memory, and ``--workers 2``
against one worker, over Streamable HTTP in both eras.

    python -m benchmarks.scale [--seconds 4] [--rounds 3] [--clients 16] [--only "modern redis"]

Each configuration is a fresh ``mcp-runtime serve benchmarks/servers/mcp_runtime_server.py``
(and, for the Redis store, a fresh ``redis-server`` on a free loopback port, found on PATH).
The load client is ``benchmarks._wire.http_load`` (one thread, keep-alive connections, each
sending its next ``tools/call echo`` as soon as the previous answer is in), on this machine.
Rounds alternate the configurations' order so drift (other load on a shared machine) spreads
over all of them; the spread across rounds is printed as the noise estimate.

CPU per request is the server's process tree's user+system time (``/proc``) over the answered
requests; for the Redis store it is also given with redis-server's CPU added.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import _procfs as procfs
from . import _wire as wire

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "benchmarks" / "servers" / "mcp_runtime_server.py"
RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Config:
    name: str
    mode: str  # "modern" (2026-07-28, stateless) or "session" (handshake era)
    store: str  # "memory" or "redis"
    workers: int


CONFIGS = [
    Config("modern memory w1", "modern", "memory", 1),
    Config("modern redis w1", "modern", "redis", 1),
    Config("session memory w1", "session", "memory", 1),
    Config("session redis w1", "session", "redis", 1),
    Config("modern redis w2", "modern", "redis", 2),
    Config("session redis w2", "session", "redis", 2),
]


@contextlib.contextmanager
def redis_server() -> Iterator[tuple[str, int]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server not found on PATH (Debian package redis-server)")
    port = wire.free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wire.wait_for_port(port, 10, lambda: proc.poll() is None)
        yield f"redis://127.0.0.1:{port}/0", proc.pid
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def server(config: Config, store_url: str | None) -> Iterator[tuple[int, int]]:
    port = wire.free_port()
    argv = [sys.executable, "-m", "runtime", "serve", str(SERVER), "--transport", "http"]
    argv += ["--port", str(port), "--log-level", "warning", "--workers", str(config.workers)]
    if store_url:
        argv += ["--store", store_url]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MCP_RUNTIME_MAX_IN_FLIGHT": "100000"}
    proc = subprocess.Popen(argv, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL)
    try:
        wire.wait_for_port(port, 60, lambda: proc.poll() is None)
        time.sleep(0.5 if config.workers > 1 else 0.1)  # every worker accepting
        yield proc.pid, port
    finally:
        wire.stop(proc, 15)


def measure(config: Config, clients: int, seconds: float) -> dict[str, float]:
    stack = contextlib.ExitStack()
    with stack:
        store_url, redis_pid = None, None
        if config.store == "redis":
            store_url, redis_pid = stack.enter_context(redis_server())
        pid, port = stack.enter_context(server(config, store_url))
        conns = [wire.HttpClient(port, "/mcp", config.mode) for _ in range(clients)]
        for conn in conns:
            conn.handshake()
        template = wire.echo_template(modern=config.mode == "modern")
        wire.http_load(conns, template, total=2000, time_cap=1.0)  # warm-up
        cpu0 = procfs.cpu_seconds(pid)
        client0 = time.process_time()
        redis0 = procfs.cpu_seconds(redis_pid) if redis_pid else 0.0
        res = wire.http_load(conns, template, total=10**9, time_cap=seconds)
        cpu = procfs.cpu_seconds(pid) - cpu0
        client_cpu = time.process_time() - client0
        redis_cpu = (procfs.cpu_seconds(redis_pid) - redis0) if redis_pid else 0.0
        for conn in conns:
            conn.close()
    if res.errors or res.timed_out:
        raise SystemExit(f"{config.name}: {res.errors} errors {res.error_codes}")
    return {
        "rate": res.rate,
        "p99_ms": wire.percentile(res.rtts_ns, 99) / 1e6,
        "cpu_us": cpu / res.ok * 1e6,
        "cpu_redis_us": (cpu + redis_cpu) / res.ok * 1e6,
        "client_us": client_cpu / res.ok * 1e6,
    }


def runs_rate(found: dict[str, list[dict[str, float]]], name: str) -> list[float]:
    return [run["rate"] for run in found[name]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--only", action="append", default=[], help="run the configurations naming this"
    )
    args = parser.parse_args(argv)
    configs = [c for c in CONFIGS if not args.only or any(o in c.name for o in args.only)]
    found: dict[str, list[dict[str, float]]] = {c.name: [] for c in configs}
    for r in range(args.rounds):
        order = configs if r % 2 == 0 else list(reversed(configs))
        for config in order:
            found[config.name].append(measure(config, args.clients, args.seconds))
            print(f"round {r + 1} {config.name}: {found[config.name][-1]}", file=sys.stderr)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"scale-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
    with out.open("w") as f:
        for name, runs in found.items():
            f.write(json.dumps({"config": name, "runs": runs}) + "\n")
    med = {
        n: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for n, runs in found.items()
    }

    def spread(name: str) -> float:
        rates = [r["rate"] for r in found[name]]
        return (max(rates) - min(rates)) / statistics.median(rates) * 100

    print(
        "| configuration | req/s | p99 ms | server CPU us/req | +redis CPU us/req "
        "| client CPU us/req | req/s spread |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, m in med.items():
        print(
            f"| {name} | {m['rate']:.0f} | {m['p99_ms']:.2f} | {m['cpu_us']:.0f} "
            f"| {m['cpu_redis_us']:.0f} | {m['client_us']:.0f} | {spread(name):.0f}% |"
        )
    print()
    for mode in ("modern", "session"):
        mem, red, w2 = (
            med.get(f"{mode} memory w1"),
            med.get(f"{mode} redis w1"),
            med.get(f"{mode} redis w2"),
        )
        if mem is not None and red is not None:
            print(
                f"{mode}: redis/memory CPU per request {red['cpu_us'] / mem['cpu_us']:.2f}x "
                f"(with redis-server's CPU {red['cpu_redis_us'] / mem['cpu_us']:.2f}x), "
                f"throughput {red['rate'] / mem['rate']:.2f}x"
            )
        if red is not None and w2 is not None:
            rounds = [
                w / o for w, o in zip(runs_rate(found, f"{mode} redis w2"),
                                      runs_rate(found, f"{mode} redis w1"), strict=True)
            ]  # fmt: skip
            print(
                f"{mode}: --workers 2 / 1 throughput {w2['rate'] / red['rate']:.2f}x "
                f"(per round: {' '.join(f'{x:.2f}' for x in rounds)})"
            )
    busy = {n: m["rate"] * (m["cpu_redis_us"] + m["client_us"]) / 1e6 for n, m in med.items()}
    print(
        "cores busy (server + redis + load client), of 2: "
        + ", ".join(f"{n} {b:.2f}" for n, b in busy.items())
    )
    print(f"(medians of {args.rounds} rounds of {args.seconds}s, {args.clients} clients; {out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
