"""Run the whole benchmark suite: ``python -m benchmarks.run [--quick] [--profile]``.

Contenders are interleaved (every group of measurements runs each contender in turn, the order
rotating per repeat; for HTTP, all contenders' servers of a mode run at once and each client
count is measured in short slices that rotate through them, and spawn-to-initialize spawns one
contender after another, round after round, so a change in the machine's speed hits all alike)
and every measurement is repeated (2 in --quick, 3 otherwise); the table
shows medians of the repeats, absolute figures and ratios against the official SDK. Results go
to benchmarks/results/ as JSON lines, a Markdown table and a PNG chart.

Rows a contender cannot produce (no such transport, no answer to batches) say why instead of a
number; our HTTP and WebSocket rows light up once ``mcp-runtime serve --transport http|ws`` exists.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import functools
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _procfs as procfs
from . import _wire as wire
from ._wire import BenchError

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
RESULTS = HERE / "results"
OURS, SDK, FASTMCP = "mcp-runtime", "sdk", "fastmcp"
CONTENDERS = (OURS, SDK, FASTMCP)
# Our runtime refuses past --max-in-flight (default 64) by design; for the throughput rows it
# gets room for 256 in flight, like the peers, which have no such limit.
OURS_MAX_IN_FLIGHT = "1024"


@dataclass(frozen=True)
class Settings:
    repeats: int
    time_cap: float  # seconds per load measurement (sending stops then; answers are drained)
    seq_count: int
    pipe_count: int
    spawns: int
    imports: int
    idle_conns: int
    hang_timeout: float
    http_slices: int  # HTTP: each client count is measured in this many slices per contender,
    http_slice: float  # of this many seconds each, rotating through the contenders
    streams: int  # idle handshake sessions with GET streams / listen streams (benchmarks/_fanout)
    fanout: int  # of which this many are subscribed to the resource that changes
    big_reads: int  # requests per big-payload measurement (benchmarks/_big)

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(2, 0.8, 500, 50_000, 3, 2, 2000, 2.0, 4, 0.4, 1000, 1000, 20)
        return cls(3, 2.5, 3000, 200_000, 7, 5, 2000, 5.0, 6, 0.6, 10_000, 1000, 150)


@dataclass
class Recorder:
    run_id: str
    mode: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[tuple[str, str], str] = field(default_factory=dict)
    out: Any = None

    def add(
        self,
        repeat: int,
        contender: str,
        metric: str,
        value: float | None,
        note: str = "",
        **extra: Any,
    ) -> None:
        row = {
            "run": self.run_id,
            "mode": self.mode,
            "repeat": repeat,
            "contender": contender,
            "metric": metric,
            "value": value,
            "note": note,
            **extra,
        }
        self.rows.append(row)
        if note:
            self.notes[(contender, metric)] = note
        if self.out:
            self.out.write(json.dumps(row) + "\n")
            self.out.flush()
        shown = "n/a" if value is None else f"{value:,.3f}".rstrip("0").rstrip(".")
        print(f"  [{repeat}] {contender:<12} {metric:<22} {shown:>14} {note}", flush=True)

    def unavailable(self, repeat: int, contender: str, metrics: list[str], why: str) -> None:
        for metric in metrics:
            self.add(repeat, contender, metric, None, f"not available: {why}")


# -- contenders ----------------------------------------------------------------------------


def _ours_cli() -> list[str]:
    script = Path(sys.executable).parent / "mcp-runtime"
    return [str(script)] if script.exists() else [sys.executable, "-m", "runtime"]


def _ours_help() -> str:
    proc = subprocess.run(
        [*_ours_cli(), "serve", "--help"], capture_output=True, text=True, timeout=30
    )
    return proc.stdout + proc.stderr


def ours_transports() -> set[str]:
    text = _ours_help()
    start = text.find("--transport")
    found = set()
    if start >= 0:
        choices = text[start : text.find("}", start) + 1]
        for name in ("stdio", "tcp", "unix", "http", "ws"):
            if f"{{{name}," in choices or f",{name}," in choices or f",{name}}}" in choices:
                found.add(name)
    return found


def stdio_argv(contender: str) -> list[str]:
    if contender == OURS:
        return [
            *_ours_cli(),
            "serve",
            str(SERVERS / "mcp_runtime_server.py"),
            "--log-level",
            "warning",
        ]
    script = "sdk_server.py" if contender == SDK else "fastmcp_server.py"
    return [sys.executable, str(SERVERS / script), "stdio"]


def ours_http_args(port: int, log_level: str = "warning") -> list[str]:
    """Our CLI's arguments (after the command) serving the benchmark server over HTTP."""
    return [
        "serve",
        str(SERVERS / "mcp_runtime_server.py"),
        "--transport",
        "http",
        "--port",
        str(port),
        "--log-level",
        log_level,
    ]


def http_argv(contender: str, mode: str, port: int) -> list[str]:
    if contender == OURS:
        return [*_ours_cli(), *ours_http_args(port)]
    script = "sdk_server.py" if contender == SDK else "fastmcp_server.py"
    return [sys.executable, str(SERVERS / script), mode, str(port)]


def server_env(contender: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["FASTMCP_SHOW_SERVER_BANNER"] = "false"
    env["FASTMCP_LOG_LEVEL"] = "WARNING"
    if contender == OURS:
        env["MCP_RUNTIME_MAX_IN_FLIGHT"] = OURS_MAX_IN_FLIGHT
    return env


def floor_env() -> dict[str, str]:
    """The big-payload floors' environment: glibc's malloc thresholds as ``mcp-runtime serve``
    sets them in itself (runtime/cli/_heap.py), so that no floor pays for glibc's default rule
    what ours does not."""
    from runtime.cli._heap import MMAP_THRESHOLD, TRIM_THRESHOLD

    return {
        **os.environ,
        "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD),
        "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD),
    }


def peer_missing(contender: str) -> str | None:
    module = {SDK: "mcp.server.mcpserver", FASTMCP: "fastmcp"}.get(contender)
    if module is None:
        return None
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    return None if found else f"{module} is not installed (pip install -e '.[bench]')"


@contextlib.contextmanager
def stdio_peer(contender: str, log_name: str) -> Iterator[wire.StdioPeer]:
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    peer = wire.StdioPeer(
        stdio_argv(contender),
        cwd=str(ROOT),
        env=server_env(contender),
        stderr_path=str(logs / f"{contender}-{log_name}.log"),
    )
    try:
        yield peer
    finally:
        peer.close()


@contextlib.contextmanager
def http_server(contender: str, mode: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = wire.free_port()
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{contender}-{mode}.log", "ab") as err:
        proc = subprocess.Popen(
            http_argv(contender, mode, port),
            cwd=str(ROOT),
            env=server_env(contender),
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
        )
    try:
        wire.wait_for_port(port, 60, lambda: proc.poll() is None)
        yield proc, port
    finally:
        wire.stop(proc, 5)


# -- measurement groups ----------------------------------------------------------------------


def measure_imports(rec: Recorder, s: Settings, r: int, order: list[str]) -> None:
    modules = {OURS: "runtime", SDK: "mcp.server.mcpserver", FASTMCP: "fastmcp"}
    for contender in ["python", *order]:
        if contender != "python" and (why := peer_missing(contender)):
            rec.unavailable(r, contender, ["import_ms"], why)
            continue
        code = "pass" if contender == "python" else f"import {modules[contender]}"
        samples = []
        for _ in range(s.imports):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=str(ROOT))
            samples.append((time.perf_counter() - t) * 1000)
        rec.add(r, contender, "import_ms", statistics.median(samples), f'python -c "{code}"')


#: The HTTP rows' ceiling and floors (``benchmarks.http_floor``): metric, server script, note.
HTTP_FLOORS = [
    ("ceiling_http16", "null_http.py", "load client vs a fixed-reply HTTP responder, 16 clients"),
    ("floor_http16_trio", "trio_floor.py", "trio alone answering fixed bytes, 16 clients"),
    ("floor_http16_layer", "runtime_http_floor.py", "our HTTP layer, fixed answer, 16 clients"),
]


def measure_client_ceiling(rec: Recorder, s: Settings, r: int) -> None:
    """The load client against zero-work peers (`cat` echoes each request line back as its
    own answer; a fixed-reply HTTP responder): the most calls/s it can measure on this
    machine. Then, by the same client, the HTTP floors under our modern rows: trio waking
    a task per request with no parsing, and our HTTP layer answering a fixed body (where an
    HTTP call's time goes, ``benchmarks.http_floor``)."""
    peer = wire.StdioPeer(["cat"])
    try:
        res = peer.load(wire.echo_template(), total=10**6, depth=64, time_cap=s.time_cap)
        rec.add(r, "client", "ceiling_stdio64", res.rate, "load client vs `cat`, 64 in flight")
    finally:
        peer.close()
    for metric, script, note in HTTP_FLOORS:
        port = wire.free_port()
        proc = subprocess.Popen(
            [sys.executable, str(SERVERS / script), str(port)],
            cwd=str(ROOT),
            env=server_env(OURS),
            stdin=subprocess.DEVNULL,
        )
        try:
            wire.wait_for_port(port, 10, lambda: proc.poll() is None)  # noqa: B023 - waited here
            clients = [wire.HttpClient(port, "/mcp", "modern") for _ in range(16)]
            template = wire.echo_template(True)
            res = wire.http_load(clients, template, total=10**6, time_cap=s.time_cap)
            rec.add(r, "client", metric, res.rate, note)
            for c in clients:
                c.close()
        finally:
            proc.kill()
            proc.wait()


STDIO_METRICS = [
    "rss_init_mib",
    "seq_p50_us",
    "seq_p99_us",
    "pipe1",
    "pipe16",
    "pipe64",
    "pipe64_p99_ms",
    "pipe256",
    "cpu_10k_s",
    "read16",
    "peak_rss_mib",
]


def _load_note(res: wire.LoadResult) -> str:
    parts = []
    if res.errors:
        parts.append(f"{res.errors} errors {res.error_codes}")
    if res.timed_out:
        parts.append("TIMED OUT draining answers")
    return "; ".join(parts)


def measure_spawns(rec: Recorder, s: Settings, r: int, order: list[str]) -> None:
    """Spawn to first ``initialize`` reply, the spawns rotating through the contenders.

    One spawn of each in turn, ``s.spawns`` rounds, so a slow spell of the machine (or a peer's
    exiting process still on the CPU) falls on every contender alike; the median per contender.
    """
    failed = {c: why for c in order if (why := peer_missing(c))}
    # Our modules' bytecode, written now: an installed copy has it (pip compiles at install),
    # as the SDK and fastmcp in site-packages do; a checkout run with PYTHONDONTWRITEBYTECODE=1
    # (or stale .pyc files) would otherwise compile ~75 modules from source at every spawn
    # (the start-up work took it from 1.9x the floor's CPU time to 1.3x).
    for folder in ("runtime", "handlers", "benchmarks/servers"):
        compileall.compile_dir(str(ROOT / folder), quiet=2)
    spawn_ms: dict[str, list[float]] = {c: [] for c in order}
    floor: list[float] = []
    for i in range(s.spawns):
        # The floor: the interpreter importing our two dependencies, in the same
        # rounds, so it sees the same machine as the servers do; timed to its first line out,
        # as a server is to its first reply (the interpreter's exit is not part of either).
        t = time.perf_counter()
        with subprocess.Popen(
            [sys.executable, "-c", "import trio, msgspec; print('ready', flush=True)"],
            stdout=subprocess.PIPE,
            cwd=str(ROOT),
        ) as imported:
            assert imported.stdout is not None
            if imported.stdout.readline() != b"ready\n":
                raise BenchError("python -c 'import trio, msgspec' failed")
            floor.append((time.perf_counter() - t) * 1000)
        for contender in order:
            if contender in failed:
                continue
            try:
                with stdio_peer(contender, f"spawn{i}") as peer:
                    peer.handshake()
                    spawn_ms[contender].append((time.perf_counter() - peer.spawned_at) * 1000)
            except (BenchError, OSError, ValueError, KeyError) as exc:
                failed[contender] = f"error: {type(exc).__name__}: {exc}"[:200]
    rec.add(
        r,
        "floor",
        "spawn_init_ms",
        statistics.median(floor),
        f'python -c "import trio, msgspec; print(...)" to its line, n={len(floor)}',
    )
    for contender in order:
        if contender in failed:
            rec.unavailable(r, contender, ["spawn_init_ms"], failed[contender])
            continue
        times = spawn_ms[contender]
        rec.add(
            r,
            contender,
            "spawn_init_ms",
            statistics.median(times),
            f"n={len(times)}, min {min(times):.0f}, max {max(times):.0f}",
        )


def measure_stdio(rec: Recorder, s: Settings, r: int, contender: str) -> None:
    with stdio_peer(contender, "stdio") as peer:
        reply = peer.handshake()
        rss_init = procfs.status_kib(peer.pid, "VmRSS") / 1024
        rec.add(
            r,
            contender,
            "rss_init_mib",
            rss_init,
            json.loads(reply)["result"]["serverInfo"]["name"],
        )
        # Check the answers are right before timing them.
        check = json.loads(peer.request(wire.echo_template() % 0))
        assert check["result"]["content"][0]["text"] == wire.ECHO_TEXT, check
        blob = json.loads(peer.request(wire.read_template() % 0))
        assert len(blob["result"]["contents"][0]["text"]) == 1024, blob
        echo = wire.echo_template()
        peer.load(echo, total=5000, depth=64, time_cap=0.5)  # warm-up

        res = peer.sequential(echo, total=s.seq_count, time_cap=s.time_cap)
        rec.add(
            r,
            contender,
            "seq_p50_us",
            wire.percentile(res.rtts_ns, 50) / 1000,
            _load_note(res) or f"n={len(res.rtts_ns)}",
        )
        rec.add(r, contender, "seq_p99_us", wire.percentile(res.rtts_ns, 99) / 1000)
        for depth in (1, 16, 64, 256):
            cpu0 = procfs.cpu_seconds(peer.pid)
            res = peer.load(echo, total=s.pipe_count, depth=depth, time_cap=s.time_cap)
            cpu = procfs.cpu_seconds(peer.pid) - cpu0
            rec.add(r, contender, f"pipe{depth}", res.rate, _load_note(res) or f"n={res.ok}")
            if depth == 64:
                rec.add(r, contender, "pipe64_p99_ms", wire.percentile(res.rtts_ns, 99) / 1e6)
                if res.ok:
                    rec.add(
                        r,
                        contender,
                        "cpu_10k_s",
                        cpu / res.ok * 10_000,
                        f"{cpu:.2f}s CPU for {res.ok} calls",
                    )
        res = peer.load(wire.read_template(), total=s.pipe_count, depth=16, time_cap=s.time_cap)
        rec.add(r, contender, "read16", res.rate, _load_note(res) or f"n={res.ok}")
        rec.add(r, contender, "peak_rss_mib", procfs.status_kib(peer.pid, "VmHWM") / 1024)


def measure_batches(rec: Recorder, s: Settings, r: int, contender: str) -> None:
    with stdio_peer(contender, "batch") as peer:
        peer.handshake(wire.BATCH_VERSION)
        verdict, _ = peer.batch_probe(32, wire.echo_template(), s.hang_timeout)
        if verdict != "answered":
            rec.add(r, contender, "batch32", 0.0, f"batch of 32: {verdict}", behaviour=verdict)
            return
        res = peer.batch_load(
            32, wire.echo_template(), batches=s.pipe_count // 32, depth=2, time_cap=s.time_cap
        )
        rec.add(
            r,
            contender,
            "batch32",
            res.rate,
            _load_note(res) or f"answered; 2 batches of 32 in flight, n={res.ok}",
            behaviour=verdict,
        )


MODERN_METRICS = ["modern_seq_p50_us", "modern_pipe64"]


def measure_modern(rec: Recorder, s: Settings, r: int, contender: str) -> None:
    with stdio_peer(contender, "modern") as peer:
        try:
            # The first request also waits out the server's start (fastmcp takes ~2 s); a
            # server without the modern wire answers -32601 at once rather than hanging.
            probe = peer.request(wire.discover(0), 30.0)
        except BenchError as exc:
            rec.unavailable(r, contender, MODERN_METRICS, f"server/discover: {exc}")
            return
        if wire.is_error(probe):
            rec.unavailable(
                r,
                contender,
                MODERN_METRICS,
                f"2026-07-28 server/discover answered error {wire.error_code(probe)}",
            )
            return
        echo = wire.echo_template(modern=True)
        check = peer.request(echo % 0, s.hang_timeout)
        if wire.is_error(check) or wire.ECHO_TEXT.encode() not in check:
            rec.unavailable(r, contender, MODERN_METRICS, f"modern tools/call gave {check[:120]!r}")
            return
        peer.load(echo, total=200, depth=16, time_cap=s.time_cap)
        res = peer.sequential(echo, total=s.seq_count, time_cap=s.time_cap)
        rec.add(
            r,
            contender,
            "modern_seq_p50_us",
            wire.percentile(res.rtts_ns, 50) / 1000,
            _load_note(res),
        )
        res = peer.load(echo, total=s.pipe_count, depth=64, time_cap=s.time_cap)
        rec.add(r, contender, "modern_pipe64", res.rate, _load_note(res))


HTTP_MODES = {
    "http-json": "stateless JSON (modern wire where spoken)",
    "http-sse": "handshake session, SSE",
}


def _http_clients(port: int, wire_mode: str, n: int) -> list[wire.HttpClient]:
    clients = []
    for _ in range(n):
        c = wire.HttpClient(port, "/mcp", wire_mode)
        c.handshake()
        clients.append(c)
    return clients


def _probe_http_modern(port: int) -> bool:
    c = wire.HttpClient(port, "/mcp", "modern", timeout=10)
    try:
        c.sock.sendall(c.request_bytes(wire.echo_template(modern=True), 1, "tools/call", "echo"))
        c.sock.settimeout(10)
        while (got := wire.parse_response(c.buf)) is None:
            data = c.sock.recv(65536)
            if not data:
                return False
            c.buf += data
        _, status, headers, body = got
        msgs = wire.json_messages(headers, body) if status == 200 else []
        return bool(msgs) and "result" in msgs[-1]
    except (OSError, BenchError, ValueError):
        return False
    finally:
        c.close()


HTTP_CLIENTS = (1, 16, 64)


def http_metrics(mode: str) -> list[str]:
    return [f"{mode.replace('-', '_')}_c{n}" for n in HTTP_CLIENTS]


@dataclass
class _Sliced:
    """One contender's share of an interleaved HTTP measurement, summed over its slices."""

    res: wire.LoadResult = field(default_factory=wire.LoadResult)
    cpu: float = 0.0
    failed: str = ""


def measure_http(
    rec: Recorder, s: Settings, r: int, order: list[str], mode: str, ours_has_http: bool
) -> None:
    """All contenders' servers run at once; each client count is measured in short slices that
    rotate through the contenders, so a drift in machine speed hits every contender alike."""
    metrics = http_metrics(mode)
    with contextlib.ExitStack() as stack:
        servers: dict[str, tuple[subprocess.Popen[bytes], int, str]] = {}
        for contender in order:
            if why := peer_missing(contender):
                rec.unavailable(r, contender, metrics, why)
            elif contender == OURS and not ours_has_http:
                rec.unavailable(
                    r, contender, metrics, "`mcp-runtime serve --transport http` is missing"
                )
            else:
                try:
                    proc, port = stack.enter_context(http_server(contender, mode))
                    if mode == "http-json":
                        wire_mode = "modern" if _probe_http_modern(port) else "stateless"
                    else:
                        wire_mode = "session"
                    servers[contender] = (proc, port, wire_mode)
                except (BenchError, OSError) as exc:
                    rec.unavailable(
                        r, contender, metrics, f"error: {type(exc).__name__}: {exc}"[:200]
                    )
        for n, metric in zip(HTTP_CLIENTS, metrics, strict=True):
            _measure_http_sliced(rec, s, r, servers, n, metric)


def _measure_http_sliced(
    rec: Recorder,
    s: Settings,
    r: int,
    servers: dict[str, tuple[subprocess.Popen[bytes], int, str]],
    n: int,
    metric: str,
) -> None:
    got = {contender: _Sliced() for contender in servers}
    templates = {c: wire.echo_template(mode == "modern") for c, (_, _, mode) in servers.items()}
    clients: dict[str, list[wire.HttpClient]] = {}
    try:
        for contender, (_, port, wire_mode) in servers.items():
            try:
                clients[contender] = _http_clients(port, wire_mode, n)
                wire.http_load(
                    clients[contender], templates[contender], total=300, time_cap=0.3
                )  # warm-up
            except (BenchError, OSError) as exc:
                got[contender].failed = f"error: {type(exc).__name__}: {exc}"
        names = list(servers)
        for k in range(s.http_slices):
            # Rotate who goes first in each slice.
            for contender in names[k % len(names) :] + names[: k % len(names)]:
                share = got[contender]
                if share.failed:
                    continue
                pid = servers[contender][0].pid
                try:
                    cpu0 = procfs.cpu_seconds(pid)
                    share.res.absorb(
                        wire.http_load(
                            clients[contender],
                            templates[contender],
                            total=s.pipe_count // s.http_slices,
                            time_cap=s.http_slice,
                        )
                    )
                    share.cpu += procfs.cpu_seconds(pid) - cpu0
                except (BenchError, OSError) as exc:
                    share.failed = f"error: {type(exc).__name__}: {exc}"
    finally:
        for group in clients.values():
            for c in group:
                c.close()
    for contender, share in got.items():
        if share.failed:
            print(f"  ! {contender}: {share.failed}", flush=True)
            rec.unavailable(r, contender, [metric], share.failed[:200])
            continue
        res = share.res
        content_type = clients[contender][0].content_type
        note = f"{servers[contender][2]} wire, {content_type}, {s.http_slices} slices"
        if res.errors or res.timed_out:
            note += "; " + _load_note(res)
        rec.add(
            r,
            contender,
            metric,
            res.rate,
            note,
            cpu_10k_s=share.cpu / res.ok * 10_000 if res.ok else None,
            p50_ms=wire.percentile(res.rtts_ns, 50) / 1e6 if res.rtts_ns else None,
        )


def measure_idle(rec: Recorder, s: Settings, r: int, transport: str, available: bool) -> None:
    metric = f"{transport}_idle_kib"
    if not available:
        rec.unavailable(
            r, OURS, [metric], f"`mcp-runtime serve --transport {transport}` does not exist yet"
        )
        return
    port = wire.free_port()
    argv = [
        *_ours_cli(),
        "serve",
        str(SERVERS / "mcp_runtime_server.py"),
        "--transport",
        transport,
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    if transport == "ws":
        # The WebSocket transport caps connections at 1,000 by default (HttpLimits).
        # (All from one loopback address: its share is the whole cap too.)
        cap = str(s.idle_conns + 100)
        argv += ["--max-connections", cap, "--max-connections-per-address", cap]
    with open(RESULTS / "logs" / f"{OURS}-{transport}.log", "ab") as err:
        proc = subprocess.Popen(
            argv,
            cwd=str(ROOT),
            env=server_env(OURS),
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
        )
    socks: list[Any] = []
    try:
        wire.wait_for_port(port, 30, lambda: proc.poll() is None)
        time.sleep(0.2)
        before = procfs.status_kib(proc.pid, "VmRSS")
        t = time.perf_counter()
        refused: list[str] = []
        if transport == "tcp":
            socks, answered = wire.open_idle_tcp(port, s.idle_conns, 60)
        else:
            socks, answered = wire.open_idle_ws(port, "/mcp", s.idle_conns, 60, refused)
        took = time.perf_counter() - t
        time.sleep(0.5)
        after = procfs.status_kib(proc.pid, "VmRSS")
        n = len(socks)
        rec.add(
            r,
            OURS,
            metric,
            (after - before) / max(n, 1),
            f"{n} connections ({answered} initialized in {took:.1f}s), RSS {before / 1024:.1f}"
            f"->{after / 1024:.1f} MiB" + (f"; {refused[0]}" if refused else ""),
        )
    except (BenchError, OSError) as exc:
        rec.add(r, OURS, metric, None, f"error: {exc}")
    finally:
        for sock in socks:
            sock.close()
        wire.stop(proc, 5)


def _big_one(rec: Recorder, r: int, contender: str, payload: Any, requests: int) -> None:
    from . import _big

    cm: contextlib.AbstractContextManager[wire.StdioPeer]
    if contender == _big.FLOOR:
        floor = [sys.executable, str(SERVERS / "floor_stdio.py")]
        cm = contextlib.closing(wire.StdioPeer(floor, cwd=str(ROOT), env=floor_env()))
    else:
        cm = stdio_peer(contender, f"big-{payload.name}")
    with cm as peer:
        got = _big.measure(peer, contender, payload, requests)
    names = _big.metrics(payload)
    rec.add(r, contender, names[0], got["cpu_ms"], f"n={requests}, {payload.size >> 20} MiB")
    rec.add(r, contender, names[1], got["rss_x"], "peak RSS growth / payload")
    if "step_ms" in got:
        rec.add(r, contender, names[2], got["step_ms"], "longest trio task step")


def measure_big(rec: Recorder, s: Settings, r: int, order: list[str]) -> None:
    """Big payloads over stdio, each contender and the floor in turn per payload (_big.py)."""
    from . import _big

    for payload in _big.payloads():
        requests = max(3, s.big_reads // payload.share)
        names = _big.metrics(payload)
        for contender in [_big.FLOOR, *order]:
            if contender != _big.FLOOR and (why := peer_missing(contender)):
                rec.unavailable(r, contender, names, why)
                continue
            one = functools.partial(_big_one, rec, r, contender, payload, requests)
            guarded(rec, r, contender, names, one)


@contextlib.contextmanager
def _big_http_server(contender: str) -> Iterator[tuple[int, int]]:
    from . import _big

    if contender != _big.FLOOR:
        with http_server(contender, "http-json") as (proc, port):
            yield proc.pid, port
        return
    port = wire.free_port()
    floor = subprocess.Popen(
        [sys.executable, str(SERVERS / "floor_http.py"), str(port)],
        stdin=subprocess.DEVNULL,
        env=floor_env(),
    )
    try:
        wire.wait_for_port(port, 30, lambda: floor.poll() is None)
        yield floor.pid, port
    finally:
        floor.kill()
        floor.wait()


def _big_http_one(rec: Recorder, r: int, contender: str, payload: Any, requests: int) -> None:
    from . import _big

    with _big_http_server(contender) as (pid, port):
        got = _big.measure_http(port, pid, contender, payload, requests)
    names = _big.http_metrics(payload)
    rec.add(r, contender, names[0], got["cpu_ms"], f"n={requests}, modern POSTs, one client")
    if "step_ms" in got:
        rec.add(r, contender, names[1], got["step_ms"], "longest trio task step")


def measure_big_http(rec: Recorder, s: Settings, r: int, order: list[str]) -> None:
    """The same payloads as modern (2026-07-28) HTTP POSTs, one keep-alive client, beside
    servers/floor_http.py (a blocking loop: msgspec decode, the same reply, one sendall)."""
    from . import _big

    for payload in _big.payloads():
        requests = max(3, s.big_reads // payload.share)
        names = _big.http_metrics(payload)
        for contender in [_big.FLOOR, *order]:
            if contender != _big.FLOOR and (why := peer_missing(contender)):
                rec.unavailable(r, contender, names, why)
                continue
            one = functools.partial(_big_http_one, rec, r, contender, payload, requests)
            guarded(rec, r, contender, names, one)


FANOUT_METRICS = {
    "session": ["session_idle_kib", "session_fanout_ms", "session_fanout_cpu_ms"],
    "listen": ["listen_idle_kib", "listen_fanout_ms", "listen_fanout_cpu_ms"],
}


# The SDK's MCPServer serves subscriptions/listen with its ListenHandler's default
# ``max_subscriptions=1024`` (mcp/server/subscriptions.py), which MCPServer does not expose:
# the 1,025th listen is refused with INTERNAL_ERROR by design. So it cannot hold the 10,000
# idle listen streams of the memory row, but it can take the fan-out row's 1,000.
SDK_MAX_LISTENS = 1024


def measure_fanout(rec: Recorder, s: Settings, r: int, era: str, contender: str) -> None:
    """Idle handshake sessions with GET streams, or idle modern listen streams (_fanout.py).

    Two measures, each on a fresh server: memory per idle stream at ``s.streams`` open, and
    the fan-out of one resources/updated to ``s.fanout`` subscribers with exactly
    ``s.fanout`` streams open ("1,000 subscribers"), so every contender meets the fan-out row
    under the same conditions, including the SDK, which caps listen streams at
    ``SDK_MAX_LISTENS``. When ``s.streams == s.fanout`` (quick) one run gives both.
    """
    from . import _fanout

    with open(RESULTS / "logs" / f"{contender}-{era}-fanout.log", "ab") as log:
        if s.streams == s.fanout:
            idle = fan = _fanout.measure(era, s.streams, s.fanout, log, contender)
        else:
            fan = _fanout.measure(era, s.fanout, s.fanout, log, contender)
            idle = None
            if contender == SDK and era == "listen" and s.streams > SDK_MAX_LISTENS:
                why = f"the SDK's ListenHandler caps listen streams at {SDK_MAX_LISTENS}"
                rec.unavailable(r, contender, [f"{era}_idle_kib"], why)
            else:
                idle = _fanout.measure(era, s.streams, s.fanout, log, contender)
    if idle is not None:
        note = idle["idle_note"]
        if idle is not fan:
            note += f"; {idle['fanout_note']}: last one at {idle['fanout_ms']:.1f} ms"
        rec.add(r, contender, f"{era}_idle_kib", idle["idle_kib"], note)
    rec.add(r, contender, f"{era}_fanout_ms", fan["fanout_ms"], fan["fanout_note"])
    rec.add(r, contender, f"{era}_fanout_cpu_ms", fan["fanout_cpu_ms"], "server CPU to the last")


FANOUT_FLOOR = "floor"


def measure_fanout_floor(rec: Recorder, s: Settings, r: int) -> None:
    """The listen fan-out row's floor: ``servers/floor_fanout.py`` (no runtime: the same
    bytes to the same ``s.fanout`` sockets, one ``send`` each in a plain loop), measured by
    the same client as every contender (``_fanout.measure``)."""
    from . import _fanout

    with open(RESULTS / "logs" / "floor-listen-fanout.log", "ab") as log:
        fan = _fanout.measure("listen", s.fanout, s.fanout, log, _fanout.FLOOR)
    rec.add(r, FANOUT_FLOOR, "listen_fanout_ms", fan["fanout_ms"], fan["fanout_note"])
    rec.add(r, FANOUT_FLOOR, "listen_fanout_cpu_ms", fan["fanout_cpu_ms"], "server CPU to the last")


# Who can be measured how: the SDK's MCPServer publishes resources/updated to 2026-07-28
# listen streams (Context.notify_resource_updated) but has no server-wide call for handshake
# sessions' resources/subscribe; fastmcp has neither.
FANOUT_UNAVAILABLE = {
    (SDK, "session"): "MCPServer has no server-wide resources/updated for handshake sessions",
    (FASTMCP, "session"): "no server-wide resources/updated",
    (FASTMCP, "listen"): "no 2026-07-28 subscriptions/listen",
}


OVERLOAD_METRICS = [
    "shed_err_p50_us",
    "shed_err_p99_us",
    "shed_cpu_us",
    "shed_cpu_idle_us",
    "shed_sleeps",
    "shed_slices_idle",
    "shed_wait_idle_us",
    "shed_ok_p50_ms",
]
#: One refusal at a time, each pacing: the server CPU metric, the pause between probes (0:
#: back to back), probes per round. The floors run the same.
REFUSAL_PACINGS = (("shed_cpu_us", 0.0, 1000), ("shed_cpu_idle_us", 0.002, 200))
#: The refusal rows' floors (benchmarks/servers/floor_refusal.py, .c): contender, server.
REFUSAL_FLOORS = (("floor-bare", "bare"), ("floor-trio", "trio"), ("floor-c", "c"))
REFUSAL_FLOOR_METRICS = ["shed_cpu_us", "shed_cpu_idle_us", *OVERLOAD_METRICS[4:7]]


def measure_overload(rec: Recorder, s: Settings, r: int) -> None:
    """--max-in-flight 16, 16 slow (50 ms) calls always in flight, echo probes one at a time.

    The probes are refused with -32010; their round trip (client-side, so an upper bound on
    server time) and the server CPU per refusal show how cheap shedding is, and the slow calls'
    latency beyond their 50 ms shows what shedding costs the requests that were accepted.

    The server CPU per refusal is measured apart (``benchmarks.refusal.cpu_per_refusal``: one
    slot held by a call with no timer due, rounds of refusals interleaved with idle phases as
    long, the median round), twice: probes back to back (the next sent as the last answer
    arrives) and probes paced 2 ms apart, so each wakes the server from idle. The phases here
    used to give it as (CPU of the probe phases - their slow calls x the slow-only phases' CPU
    per slow call) / refusals; that difference of two large figures moved 23-77 us from run to
    run on this shared machine, most with the load client starved (few refusals, so the slow
    calls' share dominated). It stays in the note. The paced figure is not the same path as
    the back-to-back one (``python -m benchmarks.refusal --floors --instructions``): back to
    back the server comes back from its write to find the next probe waiting (about 0 sleeps
    per refusal) and never runs trio's wait path; paced, it sleeps in ``epoll_wait`` before
    each probe (a failed read, an ``epoll_ctl``, the wait: more system calls and more
    instructions) and runs on a cold CPU: what one refusal at a time really costs on a busy
    machine, shown, not hidden. The floors (:func:`measure_refusal_floor`: a bare
    Python loop, a trio loop, a C loop, each refusing every request) are measured the same
    way beside it, and each row's kernel counts (times put on a CPU per refusal, time runnable
    but waiting for one) say where the from-idle figure goes.
    """
    limit, slow_ms = 16, 50
    phase = max(s.time_cap, 1.0)
    argv = [
        *_ours_cli(),
        "serve",
        str(SERVERS / "overload_server.py"),
        "--log-level",
        "error",
        "--max-in-flight",
        str(limit),
    ]
    logs = RESULTS / "logs"
    peer = wire.StdioPeer(
        argv, cwd=str(ROOT), env=server_env(OURS), stderr_path=str(logs / "overload.log")
    )
    try:
        peer.handshake()
        _shed_phase(peer, limit, slow_ms, 0, 0.5)  # warm-up
        base_cpu = loaded_cpu = 0.0
        base_slow = 0
        err_rtts: list[int] = []
        ok_probe_rtts: list[int] = []
        slow_rtts: list[int] = []
        codes: dict[int, int] = {}
        for _ in range(2):
            got = _shed_phase(peer, limit, slow_ms, 0, phase)
            base_cpu += got.cpu
            base_slow += len(got.slow_rtts)
            got = _shed_phase(peer, limit, slow_ms, 1, phase)
            loaded_cpu += got.cpu
            slow_rtts += got.slow_rtts
            err_rtts += got.err_rtts
            ok_probe_rtts += got.ok_probe_rtts
            for code, n in got.codes.items():
                codes[code] = codes.get(code, 0) + n
        shed = codes.get(-32010, 0)
        per_slow = base_cpu / base_slow if base_slow else 0.0
        net = loaded_cpu - len(slow_rtts) * per_slow
        rec.add(
            r,
            OURS,
            "shed_err_p50_us",
            wire.percentile(err_rtts, 50) / 1000 if err_rtts else None,
            f"{shed} refused with -32010, {len(ok_probe_rtts)} probes accepted, codes {codes}",
        )
        rec.add(
            r, OURS, "shed_err_p99_us", wire.percentile(err_rtts, 99) / 1000 if err_rtts else None
        )
        phases = (
            f"; the phases' difference: ({loaded_cpu * 1e3:.0f} ms CPU - {len(slow_rtts)} slow "
            f"calls x {per_slow * 1e6:.0f} us) / {shed} refusals = "
            f"{net / shed * 1e6 if shed else 0:.1f} us"
        )
        _refusal_rows(rec, r, OURS, "ours", str(logs / "overload-cpu.log"), phases)
        rec.add(
            r,
            OURS,
            "shed_ok_p50_ms",
            wire.percentile(slow_rtts, 50) / 1e6 if slow_rtts else None,
            f"accepted {slow_ms} ms calls, p99 {wire.percentile(slow_rtts, 99) / 1e6:.1f} ms, "
            f"n={len(slow_rtts)}",
        )
    except BenchError as exc:
        for metric in OVERLOAD_METRICS:
            rec.add(r, OURS, metric, None, f"error: {exc}")
    finally:
        peer.close()


def _refusal_rows(
    rec: Recorder, r: int, contender: str, server: str, log: str, phases: str = ""
) -> None:
    """``server``'s refusals one at a time (``benchmarks.refusal.cost_per_refusal``), back to
    back and each from idle: its CPU per refusal, and the kernel's view of each. Back to back,
    the sleeps per refusal (voluntary context switches): a server that comes back from its
    write to find the next probe waiting never takes its wait path (the trio servers, about
    0 sleeps), where a fast one sleeps before every probe (1). From idle, every server sleeps
    once per refusal; the times it is put on a CPU (a preemption mid-refusal makes it 2) and
    the time it was runnable but waiting for a CPU (the machine's other load) are shown."""
    from . import refusal

    for metric, pause, counted in REFUSAL_PACINGS:
        cost = refusal.cost_per_refusal(pause, server, counted=counted, stderr_path=log)
        rec.add(r, contender, metric, cost.cpu * 1e6, cost.note + (phases if not pause else ""))
        if pause:
            rec.add(r, contender, "shed_slices_idle", cost.slices, cost.kernel_view())
            rec.add(r, contender, "shed_wait_idle_us", cost.wait_us, cost.kernel_view())
        else:
            rec.add(r, contender, "shed_sleeps", cost.vcsw, cost.kernel_view())


def measure_refusal_floor(rec: Recorder, r: int, contender: str, server: str) -> None:
    """The refusal rows' floors: a server that refuses every request and does nothing else
    (``servers/floor_refusal.py`` bare or on trio, ``floor_refusal.c``), measured exactly as
    this runtime's rows (the same pacing, rounds, idle phase and probe bytes), so the from-idle
    figure is set against what a wake-up costs a process with no runtime in it."""
    _refusal_rows(rec, r, contender, server, str(RESULTS / "logs" / f"{contender}.log"))


@dataclass
class _Shed:
    cpu: float  # server CPU seconds (schedstat), sending to the last answer
    slow_rtts: list[int] = field(default_factory=list)
    err_rtts: list[int] = field(default_factory=list)
    ok_probe_rtts: list[int] = field(default_factory=list)
    codes: dict[int, int] = field(default_factory=dict)


def _shed_phase(
    peer: wire.StdioPeer, limit: int, slow_ms: int, probes_in_flight: int, seconds: float
) -> _Shed:
    """For ``seconds``, keep ``limit`` slow calls and ``probes_in_flight`` echo probes in
    flight (each replaced when answered); then wait for every answer."""
    slow = wire.call_template("sleep", {"ms": slow_ms})
    probe = wire.echo_template()
    kinds: dict[int, tuple[str, int]] = {}
    slow_busy = probe_busy = 0
    got = _Shed(0.0)
    clock = time.perf_counter_ns
    cpu0 = procfs.run_seconds(peer.pid)
    end = clock() + int(seconds * 1e9)
    hard = end + int(10e9)
    while clock() < hard:
        now = clock()
        out = []
        if now < end:
            while slow_busy < limit:
                out.append(slow % peer.next_id)
                kinds[peer.next_id] = ("slow", now)
                peer.next_id += 1
                slow_busy += 1
            while probe_busy < probes_in_flight:
                out.append(probe % peer.next_id)
                kinds[peer.next_id] = ("probe", now)
                peer.next_id += 1
                probe_busy += 1
            if out:
                peer.write(b"\n".join(out) + b"\n")
        elif not slow_busy and not probe_busy:
            break
        for line in peer.read_lines(0.2):
            rid = wire.response_id(line)
            if rid not in kinds:
                continue
            kind, sent = kinds.pop(rid)
            rtt = clock() - sent
            if kind == "slow":
                slow_busy -= 1
                got.slow_rtts.append(rtt)
                continue
            probe_busy -= 1
            if wire.is_error(line):
                code = wire.error_code(line) or 0
                got.codes[code] = got.codes.get(code, 0) + 1
                got.err_rtts.append(rtt)
            else:
                got.ok_probe_rtts.append(rtt)
    if kinds:
        raise BenchError(f"{len(kinds)} calls unanswered")
    got.cpu = procfs.run_seconds(peer.pid) - cpu0
    return got


def _offer(
    peer: wire.StdioPeer, template: bytes, depth: int, seconds: float
) -> tuple[list[int], int, float]:
    """Keep ``depth`` calls in flight for ``seconds`` (a refused one is replaced at once):
    (round trips of the accepted, refusals, server CPU seconds)."""
    ok_rtts: list[int] = []
    refused = 0
    sent_at: dict[int, int] = {}
    clock = time.perf_counter_ns
    cpu0 = procfs.run_seconds(peer.pid)
    end = clock() + int(seconds * 1e9)
    hard = end + int(15e9)
    while clock() < hard and (clock() < end or sent_at):
        if clock() < end and len(sent_at) < depth:
            now = clock()
            out = []
            while len(sent_at) < depth:
                sent_at[peer.next_id] = now
                out.append(template % peer.next_id)
                peer.next_id += 1
            peer.write(b"\n".join(out) + b"\n")
        for line in peer.read_lines(0.2):
            rid = wire.response_id(line)
            if rid not in sent_at:
                continue
            rtt = clock() - sent_at.pop(rid)
            if wire.is_error(line):
                refused += 1
            else:
                ok_rtts.append(rtt)
    return ok_rtts, refused, procfs.run_seconds(peer.pid) - cpu0


OVERLOAD10_METRICS = ["unloaded_p99_ms", "shed_ok_p99_ms", "shed_cpu10x_us"]


def measure_overload10(rec: Recorder, s: Settings, r: int) -> None:
    """Issue 22 item 5: --max-in-flight 16 and 5 ms calls; first exactly 16 in flight (the
    unloaded p99), then 160 offered (10x the cap): the accepted calls' p99, and the server CPU
    per refusal net of the accepted calls' own CPU (measured in the unloaded run)."""
    limit, seconds = 16, max(s.time_cap, 1.0) * 2
    argv = [
        *_ours_cli(),
        "serve",
        str(SERVERS / "overload_server.py"),
        "--log-level",
        "error",
        "--max-in-flight",
        str(limit),
    ]
    logs = RESULTS / "logs"
    peer = wire.StdioPeer(
        argv, cwd=str(ROOT), env=server_env(OURS), stderr_path=str(logs / "overload10.log")
    )
    try:
        peer.handshake()
        call = wire.call_template("sleep", {"ms": 5})
        _offer(peer, call, limit, 0.5)  # warm-up
        base, base_refused, base_cpu = _offer(peer, call, limit, seconds)
        if base_refused or not base:
            raise BenchError(f"{base_refused} refused at the cap itself")
        loaded, refused, cpu = _offer(peer, call, 10 * limit, seconds)
        per_call = base_cpu / len(base)
        rec.add(
            r,
            OURS,
            "unloaded_p99_ms",
            wire.percentile(base, 99) / 1e6,
            f"{limit} sleep(5 ms) calls in flight, n={len(base)}",
        )
        rec.add(
            r,
            OURS,
            "shed_ok_p99_ms",
            wire.percentile(loaded, 99) / 1e6,
            f"{10 * limit} offered: {len(loaded)} accepted, {refused} refused",
        )
        rec.add(
            r,
            OURS,
            "shed_cpu10x_us",
            (cpu - len(loaded) * per_call) / refused * 1e6 if refused else None,
            f"({cpu * 1e3:.0f} ms CPU - {len(loaded)} accepted x {per_call * 1e6:.0f} us) "
            f"/ {refused} refusals",
        )
    finally:
        peer.close()


# -- the run ---------------------------------------------------------------------------------


def guarded(
    rec: Recorder, r: int, contender: str, metrics: list[str], fn: Callable[[], None]
) -> None:
    try:
        fn()
    except (BenchError, OSError, AssertionError, ValueError, KeyError) as exc:
        print(f"  ! {contender}: {type(exc).__name__}: {exc}", flush=True)
        rec.unavailable(r, contender, metrics, f"error: {type(exc).__name__}: {exc}"[:200])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="short run (about 3 minutes)")
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="groups: import stdio batch modern http scale big",
    )
    parser.add_argument("--contenders", nargs="*", default=list(CONTENDERS))
    parser.add_argument(
        "--profile", action="store_true", help="also profile our stdio echo path with py-spy"
    )
    parser.add_argument("--no-chart", action="store_true")
    args = parser.parse_args(argv)
    s = Settings.make(args.quick)
    mode = "quick" if args.quick else "full"
    if args.only is not None or set(args.contenders) != set(CONTENDERS):
        # A partial run never overwrites the full or quick table and chart the README shows.
        mode += "-partial"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # 10,000 idle streams (benchmarks/_fanout) hold a socket each on both sides.
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 32768)), hard))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "logs").mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rec = Recorder(run_id=stamp, mode=mode)
    groups = set(args.only or ["import", "stdio", "batch", "modern", "http", "scale", "big"])
    transports = ours_transports()
    contenders = [c for c in CONTENDERS if c in args.contenders]
    started = time.perf_counter()
    jsonl = RESULTS / f"bench-{mode}-{stamp}.jsonl"
    print(
        f"mcp-runtime benchmarks ({mode}); our transports: {sorted(transports)}; results -> {jsonl}"
    )
    with open(jsonl, "w") as out:
        rec.out = out
        rec.add(
            0,
            "machine",
            "cpus",
            os.cpu_count() or 0,
            f"{platform.python_implementation()} {platform.python_version()} {platform.machine()}",
        )
        for r in range(s.repeats):
            order = contenders[r % len(contenders) :] + contenders[: r % len(contenders)]
            print(
                f"== repeat {r + 1}/{s.repeats}: order {order} "
                f"({time.perf_counter() - started:.0f}s)"
            )
            if "import" in groups:
                measure_imports(rec, s, r, order)
                guarded(
                    rec,
                    r,
                    "client",
                    ["ceiling_stdio64", *(metric for metric, _, _ in HTTP_FLOORS)],
                    lambda: measure_client_ceiling(rec, s, r),  # noqa: B023 - called in this iteration
                )
            if "stdio" in groups:
                measure_spawns(rec, s, r, order)
            plan: list[tuple[str, list[str], Callable[[str], None]]] = [
                ("stdio", STDIO_METRICS, lambda c: measure_stdio(rec, s, r, c)),  # noqa: B023 - called in this iteration
                ("batch", ["batch32"], lambda c: measure_batches(rec, s, r, c)),  # noqa: B023 - called in this iteration
                ("modern", MODERN_METRICS, lambda c: measure_modern(rec, s, r, c)),  # noqa: B023 - called in this iteration
            ]
            for group, metrics, fn in plan:
                if group not in groups:
                    continue
                for contender in order:
                    if why := peer_missing(contender):
                        rec.unavailable(r, contender, metrics, why)
                        continue
                    guarded(rec, r, contender, metrics, functools.partial(fn, contender))
            if "big" in groups:
                measure_big(rec, s, r, order)
                if "http" in transports:
                    measure_big_http(rec, s, r, order)
            if "http" in groups:
                for http_mode in HTTP_MODES:
                    measure_http(rec, s, r, order, http_mode, "http" in transports)
            if "scale" in groups and OURS in contenders:
                guarded(
                    rec,
                    r,
                    OURS,
                    ["tcp_idle_kib"],
                    lambda: measure_idle(rec, s, r, "tcp", "tcp" in transports),  # noqa: B023 - called in this iteration
                )
                guarded(
                    rec,
                    r,
                    OURS,
                    ["ws_idle_kib"],
                    lambda: measure_idle(rec, s, r, "ws", "ws" in transports),  # noqa: B023 - called in this iteration
                )
                guarded(rec, r, OURS, OVERLOAD_METRICS, lambda: measure_overload(rec, s, r))  # noqa: B023 - called in this iteration
                for contender, server in REFUSAL_FLOORS:
                    guarded(
                        rec,
                        r,
                        contender,
                        REFUSAL_FLOOR_METRICS,
                        functools.partial(measure_refusal_floor, rec, r, contender, server),
                    )
                guarded(
                    rec,
                    r,
                    OURS,
                    OVERLOAD10_METRICS,
                    functools.partial(measure_overload10, rec, s, r),
                )
                # The listen fan-out's floor (servers/floor_fanout.py), first in each round.
                guarded(
                    rec,
                    r,
                    FANOUT_FLOOR,
                    FANOUT_METRICS["listen"][1:],
                    functools.partial(measure_fanout_floor, rec, s, r),
                )
                for era, metrics in FANOUT_METRICS.items():
                    for contender in order:
                        if why := FANOUT_UNAVAILABLE.get((contender, era)) or peer_missing(
                            contender
                        ):
                            rec.unavailable(r, contender, metrics, why)
                            continue
                        guarded(
                            rec,
                            r,
                            contender,
                            metrics,
                            functools.partial(measure_fanout, rec, s, r, era, contender),
                        )
        rec.out = None
    if args.profile:
        from ._profile import profile_http, profile_stdio

        profile_stdio(RESULTS, s)
        if "http" in transports:
            profile_http(RESULTS)
    from ._report import render

    render(rec.rows, RESULTS, mode, chart=not args.no_chart, elapsed=time.perf_counter() - started)
    print(f"raw results: {jsonl.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    if shutil.which(sys.executable) is None:  # pragma: no cover
        sys.exit("no python")
    raise SystemExit(main())
