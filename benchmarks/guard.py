"""The regression guard: a deterministic cost per hot path, against committed baselines.

    python -m benchmarks.guard            # measure, compare with benchmarks/baselines.json
    python -m benchmarks.guard --update   # measure and write the figures as the new baselines

No timing: a shared CI machine makes wall-clock figures noise. Each hot path is driven by one
client, one request at a time, and costed by a count that the machine's speed does not move:

- Python bytecodes per request (``benchmarks/_opcount.py``: every opcode the server process
  executes, ours, trio's and the standard library's, between two signals) for the small,
  interpreter-bound paths: stdio ``tools/call``, one item of a batch, a modern (2026-07-28)
  HTTP POST, a handshake-session HTTP POST.
- Instructions per request under valgrind's callgrind (the difference between a run of
  ``BIG_LONG`` and one of ``BIG_SHORT`` requests, so start-up and exit cancel out) for a 1 MiB
  ``resources/read`` and a ``tools/call`` with a 1 MiB argument over stdio, and that call as
  a modern HTTP POST, whose cost is C work
  (decoding, encoding, copies, reads and writes) that bytecodes miss. Likewise, once recorded
  (``EXTRA_PATHS``), that call inside a stdio batch and POSTed to a handshake-era session.

A figure more than ``TOLERANCE`` above its baseline fails the check (exit 1) with the command
that records new baselines; a change that makes a path dearer on purpose commits the new
``baselines.json`` with the reason in its commit message. Figures well below their baseline are
reported too, so that a gain is locked in by updating. Per package shares (runtime, handlers,
trio, other) are stored beside each bytecode figure to show where a regression lives.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _wire as wire

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINES = HERE / "baselines.json"
SERVER = HERE / "servers" / "mcp_runtime_server.py"
TOLERANCE = 0.10
UPDATE_COMMAND = "python -m benchmarks.guard --update"
WARM = 100  # requests before counting: memos filled, code paths specialised
COUNTED = 200  # requests counted per bytecode figure
BATCH = 32  # items per batch
PAUSE = 0.01  # seconds after each answer before the next request (see _paced)
BIG_SHORT, BIG_LONG = 3, 11  # 1 MiB requests of a kind in the callgrind runs
MIB = 1 << 20
BYTECODES, INSTRUCTIONS = "bytecodes per request", "instructions per request"


@dataclass(frozen=True)
class Measured:
    value: float
    unit: str
    shares: dict[str, float]  # per package, same unit; empty when not known


@dataclass(frozen=True)
class Finding:
    path: str
    baseline: float
    value: float
    verdict: str  # "ok", "regressed", "improved", "new", "missing"

    @property
    def change(self) -> float:
        return self.value / self.baseline - 1 if self.baseline else 0.0


# -- the comparison (pure; tests/benchmarks/test_guard.py) -----------------------------------


def compare(
    baselines: dict[str, Any], measured: dict[str, Measured], tolerance: float = TOLERANCE
) -> list[Finding]:
    """Each path's verdict: more than ``tolerance`` above its baseline is a regression, more
    than ``tolerance`` below an improvement (worth recording), a path with no baseline is new,
    a baseline with no measure is missing (both fail: the guard must cover what it claims)."""
    paths = baselines.get("paths", {})
    found = []
    for name in sorted(set(paths) | set(measured)):
        if name not in measured:
            found.append(Finding(name, float(paths[name]["value"]), 0.0, "missing"))
            continue
        value = measured[name].value
        if name not in paths or paths[name].get("unit") != measured[name].unit:
            found.append(Finding(name, 0.0, value, "new"))
            continue
        base = float(paths[name]["value"])
        if value > base * (1 + tolerance):
            verdict = "regressed"
        elif value < base * (1 - tolerance):
            verdict = "improved"
        else:
            verdict = "ok"
        found.append(Finding(name, base, value, verdict))
    return found


def failed(findings: list[Finding]) -> bool:
    return any(f.verdict in ("regressed", "new", "missing") for f in findings)


def environment() -> dict[str, str]:
    """What the counts depend on besides our code: the interpreter and trio (its bytecodes are
    counted too) and msgspec (its C code is in the instruction counts)."""
    from importlib.metadata import version

    return {
        "python": platform.python_version(),
        "trio": version("trio"),
        "msgspec": version("msgspec"),
    }


def report(
    findings: list[Finding],
    baselines: dict[str, Any],
    measured: dict[str, Measured],
    env: dict[str, str],
    tolerance: float = TOLERANCE,
) -> str:
    """The guard's message: every path, its figure against its baseline, and on failure the
    command that records new baselines and what differs in the environment."""
    paths = baselines.get("paths", {})
    lines = []
    for f in findings:
        unit = measured[f.path].unit if f.path in measured else paths[f.path]["unit"]
        if f.verdict == "new":
            lines.append(f"  NEW        {f.path}: {f.value:,.0f} {unit} (no baseline)")
        elif f.verdict == "missing":
            lines.append(f"  MISSING    {f.path}: baseline {f.baseline:,.0f} {unit}, not measured")
        else:
            lines.append(
                f"  {f.verdict.upper():10s} {f.path}: {f.value:,.0f} {unit}, baseline "
                f"{f.baseline:,.0f} ({f.change:+.1%})"
            )
            if f.verdict == "regressed":
                lines += _share_changes(paths[f.path].get("shares", {}), measured[f.path].shares)
    if failed(findings):
        lines.append("")
        lines.append(
            f"A hot path grew by more than {tolerance:.0%} (or the guard's paths changed). "
            "If that is a deliberate trade, record the new figures and commit them with the "
            f"reason:\n    {UPDATE_COMMAND}\n    git commit benchmarks/baselines.json"
        )
        recorded = baselines.get("environment", {})
        drift = {k: (recorded[k], v) for k, v in env.items() if recorded.get(k, v) != v}
        if drift:
            lines.append(
                "Note: the baselines were recorded with "
                + ", ".join(f"{k} {old} (now {new})" for k, (old, new) in drift.items())
                + "; a dependency or interpreter change moves these counts too."
            )
    elif any(f.verdict == "improved" for f in findings):
        lines.append("")
        lines.append(f"A path got cheaper: lock the gain in with `{UPDATE_COMMAND}`.")
    return "\n".join(lines)


def _share_changes(before: dict[str, float], after: dict[str, float]) -> list[str]:
    out = []
    for package in sorted(set(before) | set(after), key=lambda p: -after.get(p, 0.0)):
        old, new = before.get(package, 0.0), after.get(package, 0.0)
        if abs(new - old) >= 1:
            out.append(f"               {package}: {old:,.0f} -> {new:,.0f}")
    return out


def baselines_document(measured: dict[str, Measured], env: dict[str, str]) -> dict[str, Any]:
    return {
        "about": f"python -m benchmarks.guard; update deliberately with `{UPDATE_COMMAND}`",
        "tolerance": TOLERANCE,
        "environment": env,
        "paths": {
            name: {
                "unit": m.unit,
                "value": round(m.value, 1),
                "shares": {k: round(v, 1) for k, v in sorted(m.shares.items())},
            }
            for name, m in sorted(measured.items())
        },
    }


# -- bytecodes ---------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONHASHSEED"] = "0"  # set and dict orders the same in every run
    return env


def _package(filename: str) -> str:
    for package in ("runtime", "handlers", "trio"):
        if f"/{package}/" in filename:
            return package
    return "other"


class _Traced:
    """A server under ``benchmarks._opcount``: zero its counts, then read them."""

    def __init__(self, pid: int, out: str) -> None:
        self.pid = pid
        self.out = out

    def zero(self) -> None:
        os.kill(self.pid, signal.SIGUSR1)
        _wait_for(self.out + ".zeroed")

    def counts(self, requests: int) -> Measured:
        os.kill(self.pid, signal.SIGUSR2)
        _wait_for(self.out)
        with open(self.out, encoding="utf-8") as f:
            counts: dict[str, int] = json.load(f)
        shares: dict[str, float] = {}
        for key, n in counts.items():
            package = _package(key.rsplit(":", 2)[0])
            shares[package] = shares.get(package, 0.0) + n / requests
        return Measured(sum(counts.values()) / requests, BYTECODES, shares)


def _wait_for(path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise wire.BenchError(f"the traced server did not answer a signal ({path})")
        time.sleep(0.02)


def _opcount_argv(out: str, *serve: str) -> list[str]:
    return [sys.executable, "-m", "benchmarks._opcount", out, "serve", str(SERVER), *serve]


@contextlib.contextmanager
def _stdio_traced(tmp: str) -> Iterator[tuple[wire.StdioPeer, _Traced]]:
    out = os.path.join(tmp, "opcodes.json")
    peer = wire.StdioPeer(
        _opcount_argv(out, "--log-level", "warning"),
        cwd=str(ROOT),
        env=_env(),
        stderr_path=os.path.join(tmp, "stderr.log"),
    )
    try:
        yield peer, _Traced(peer.pid, out)
    finally:
        peer.close()


@contextlib.contextmanager
def _http_traced(tmp: str) -> Iterator[tuple[int, _Traced]]:
    out = os.path.join(tmp, "opcodes.json")
    port = wire.free_port()
    argv = _opcount_argv(out, "--transport", "http", "--port", str(port), "--log-level", "warning")
    with open(os.path.join(tmp, "stderr.log"), "ab") as err:
        proc = subprocess.Popen(
            argv, cwd=str(ROOT), env=_env(), stdin=subprocess.DEVNULL, stdout=err, stderr=err
        )
    try:
        wire.wait_for_port(port, 120, lambda: proc.poll() is None)
        yield port, _Traced(proc.pid, out)
    finally:
        proc.kill()
        proc.wait()


def _parked(pid: int, timeout: float = 60.0, waits: tuple[str, ...] = ("epoll",)) -> None:
    """Wait until the server's main thread sleeps in epoll_wait (trio's event loop waiting for
    I/O), or in another of ``waits`` (kernel wait channels): under CPU contention (the
    callgrind runs beside it, a busy CI machine) a pause alone can end before a slow traced
    server gets back to its wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/wchan") as f:
                wchan = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return  # no /proc: the pause alone
        if state == b"S" and (any(wait in wchan for wait in waits) or wchan in ("", "0")):
            return
        time.sleep(0.001)
    raise wire.BenchError(f"the server (pid {pid}) never went back to waiting")


def _paced(ask: Callable[[int], bytes], requests: int, first_id: int, pid: int) -> None:
    """``requests`` exchanges one at a time, the server parked in its event loop's wait before
    each (a pause, then :func:`_parked`), so each request takes the same code path whatever
    the machine's speed (a request already waiting when the server comes back to read would
    skip the wait and count fewer bytecodes)."""
    for i in range(requests):
        time.sleep(PAUSE)
        _parked(pid)
        reply = ask(first_id + i)
        if wire.is_error(reply) or b'"result"' not in reply:
            raise wire.BenchError(f"request {first_id + i} answered {reply[:200]!r}")


def stdio_tools_call() -> Measured:
    """One ``tools/call`` (echo) over stdio, handshake era (2025-11-25)."""
    with tempfile.TemporaryDirectory() as tmp, _stdio_traced(tmp) as (peer, traced):
        peer.handshake()
        template = wire.echo_template()

        def ask(rid: int) -> bytes:
            return peer.request(template % rid, timeout=120)

        _paced(ask, WARM, 1, traced.pid)
        traced.zero()
        _paced(ask, COUNTED, 1000, traced.pid)
        return traced.counts(COUNTED)


def stdio_batch_item() -> Measured:
    """One item of a batch of 32 echo calls over stdio (2025-03-26, the batching revision)."""
    batches = COUNTED // 10
    with tempfile.TemporaryDirectory() as tmp, _stdio_traced(tmp) as (peer, traced):
        peer.handshake(wire.BATCH_VERSION)
        template = wire.echo_template()

        def ask(rid: int) -> bytes:
            items = b",".join(template % (rid * BATCH + i) for i in range(BATCH))
            peer.write(b"[" + items + b"]\n")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                for line in peer.read_lines(1.0):
                    if line.startswith(b"["):
                        if line.count(b'"result"') != BATCH:
                            raise wire.BenchError(f"batch answered {line[:200]!r}")
                        return line
            raise wire.BenchError("no answer to a batch")

        _paced(ask, 5, 1, traced.pid)
        traced.zero()
        _paced(ask, batches, 1000, traced.pid)
        return traced.counts(batches * BATCH)


def _http(mode: str) -> Measured:
    with tempfile.TemporaryDirectory() as tmp, _http_traced(tmp) as (port, traced):
        client = wire.HttpClient(port, "/mcp", mode, timeout=120)
        try:
            client.handshake()
            template = wire.echo_template(mode == "modern")

            def ask(rid: int) -> bytes:
                client.sock.sendall(client.request_bytes(template, rid, "tools/call", "echo"))
                while (got := wire.parse_response(client.buf)) is None:
                    data = client.sock.recv(1 << 16)
                    if not data:
                        raise wire.BenchError("server closed the connection")
                    client.buf += data
                consumed, status, _, body = got
                del client.buf[:consumed]
                if status != 200:
                    raise wire.BenchError(f"HTTP {status}: {body[:200]!r}")
                return body

            _paced(ask, WARM, 1, traced.pid)
            traced.zero()
            _paced(ask, COUNTED, 1000, traced.pid)
            return traced.counts(COUNTED)
        finally:
            client.close()


def http_modern_post() -> Measured:
    """One modern (2026-07-28) ``tools/call`` POST on a keep-alive connection."""
    return _http("modern")


def http_session_post() -> Measured:
    """One ``tools/call`` POST in a handshake-era (2025-11-25) session."""
    return _http("session")


# -- instructions ------------------------------------------------------------------------------


def read_template(uri: str) -> bytes:
    return wire._template("resources/read", {"uri": uri})


def call_template() -> bytes:
    data = "0123456789abcdef" * (MIB // 16)
    return wire.call_template("size", {"data": data})


def batch_call_template() -> bytes:
    """A batch (2025-03-26) of a tools/call with a 1 MiB argument and a small echo call."""
    echo = wire.echo_template().replace(b'"id":%d', b'"id":"e"', 1)
    return b"[" + call_template() + b"," + echo + b"]"


def _instructions_for(reads: int, calls: int, batches: int = 0) -> int:
    """Instructions a stdio server executes in all, start to exit, answering ``reads`` 1 MiB
    reads and ``calls`` tools/call with 1 MiB arguments (and one of each first: the first read
    builds the text, so it is in every run); with ``batches``, in a session of the batching
    revision, that many batches of :func:`batch_call_template` too (and one first)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        argv = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "runtime",
            "serve",
            str(SERVER),
            "--log-level",
            "warning",
        ]
        peer = wire.StdioPeer(
            argv, cwd=str(ROOT), env=_env(), stderr_path=os.path.join(tmp, "stderr.log")
        )
        try:
            peer.handshake(wire.BATCH_VERSION if batches else wire.HANDSHAKE_VERSION, 300)
            work = [(read_template("mem://text/1"), reads), (call_template(), calls)]
            if batches:
                work.append((batch_call_template(), batches))
            rid = 100
            for template, n in work:
                for _ in range(n + 1):
                    rid += 1
                    reply = peer.request(template % rid, timeout=300)
                    if wire.is_error(reply[:300]) or b'"result"' not in reply[:300]:
                        raise wire.BenchError(f"answered {reply[:200]!r}")
        finally:
            peer.close(timeout=300)  # stdin EOF: the server exits, callgrind writes its counts
        with open(out, encoding="utf-8") as counts:
            found = re.search(r"^summary: (\d+)", counts.read(), re.MULTILINE)
        if found is None:
            raise wire.BenchError("no callgrind summary")
        return int(found.group(1))


def _http_instructions_for(calls: int, mode: str = "modern") -> int:
    """Instructions an HTTP server executes in all, start to exit, answering ``calls`` + 1
    modern (2026-07-28) POSTs of a ``tools/call`` with a 1 MiB argument on one keep-alive
    connection (the first call warms up; SIGINT ends the server); ``mode="session"``: POSTs
    of that call in a handshake-era session instead."""
    from ._big import http_templates

    template, method, name = http_templates()["call1"]
    if mode == "session":
        template = call_template()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        port = wire.free_port()
        argv = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            f"--log-file={os.path.join(tmp, 'valgrind.log')}",
            sys.executable,
            "-m",
            "runtime",
            "serve",
            str(SERVER),
            "--transport",
            "http",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
        with open(os.path.join(tmp, "stderr.log"), "ab") as err:
            proc = subprocess.Popen(
                argv, cwd=str(ROOT), env=_env(), stdin=subprocess.DEVNULL, stdout=err, stderr=err
            )
        try:
            wire.wait_for_port(port, 300, lambda: proc.poll() is None)
            client = wire.HttpClient(port, "/mcp", mode, timeout=300)
            try:
                client.handshake()
                for rid in range(1, calls + 2):
                    headers = {"Mcp-Method": method, "Mcp-Name": name} if mode == "modern" else {}
                    status, _, reply = client.exchange(template % rid, headers)
                    if status != 200 or b'"result"' not in reply[:300]:
                        raise wire.BenchError(f"HTTP {status}: {reply[:200]!r}")
            finally:
                client.close()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with open(out, encoding="utf-8") as counts:
            found = re.search(r"^summary: (\d+)", counts.read(), re.MULTILINE)
        if found is None:
            raise wire.BenchError("no callgrind summary")
        return int(found.group(1))


def _big_instructions() -> dict[str, Measured]:
    """Five callgrind runs at once: over stdio few of both, more reads, more calls; over HTTP
    few calls, more calls; the differences."""
    if shutil.which("valgrind") is None:
        raise wire.BenchError("valgrind is missing (Debian: apt-get install valgrind)")
    few, more = BIG_SHORT, BIG_LONG
    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        http_few, http_more = (
            pool.submit(_http_instructions_for, few),
            pool.submit(_http_instructions_for, more),
        )
        base, reads, calls = pool.map(
            lambda rc: _instructions_for(*rc), [(few, few), (more, few), (few, more)]
        )
        http_calls = http_more.result() - http_few.result()
    return {
        "stdio_read_1mib": Measured((reads - base) / (more - few), INSTRUCTIONS, {}),
        "stdio_call_1mib": Measured((calls - base) / (more - few), INSTRUCTIONS, {}),
        "http_call_1mib": Measured(http_calls / (more - few), INSTRUCTIONS, {}),
    }


def _extra_instructions() -> dict[str, Measured]:
    """The one-pass reading of a big call in a batch over stdio and in a session POST
    : four callgrind runs at once, few and more of each; the differences."""
    if shutil.which("valgrind") is None:
        raise wire.BenchError("valgrind is missing (Debian: apt-get install valgrind)")
    few, more = BIG_SHORT, BIG_LONG
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        session_few, session_more = (
            pool.submit(_http_instructions_for, few, "session"),
            pool.submit(_http_instructions_for, more, "session"),
        )
        batches_few, batches_more = pool.map(lambda n: _instructions_for(0, 0, n), [few, more])
        session = session_more.result() - session_few.result()
    return {
        "stdio_batch_call_1mib": Measured(
            (batches_more - batches_few) / (more - few), INSTRUCTIONS, {}
        ),
        "http_session_call_1mib": Measured(session / (more - few), INSTRUCTIONS, {}),
    }


PATHS: dict[str, Callable[[], Measured]] = {
    "stdio_tools_call": stdio_tools_call,
    "stdio_batch_item": stdio_batch_item,
    "http_modern_post": http_modern_post,
    "http_session_post": http_session_post,
}
# measured together by _big_instructions
BIG_PATHS = ("stdio_read_1mib", "stdio_call_1mib", "http_call_1mib")
#: Measured together by _extra_instructions, when named (``--only``) or once they have a
#: baseline (``--update`` records them): not before, so that a guard run without their
#: baselines does not fail as "new".
EXTRA_PATHS = ("stdio_batch_call_1mib", "http_session_call_1mib")


def measure_all(only: list[str] | None = None, *, extra: bool = False) -> dict[str, Measured]:
    """Every path, the slow callgrind runs started first; all at once (each is sequential
    inside, so running beside the others changes no count). ``EXTRA_PATHS`` only when
    named in ``only`` or when ``extra``."""
    names = [n for n in PATHS if not only or n in only]
    big = not only or any(n in only for n in BIG_PATHS)
    extra = any(n in only for n in EXTRA_PATHS) if only else extra
    with concurrent.futures.ThreadPoolExecutor(max(3, len(names) + 2)) as pool:
        big_future = pool.submit(_big_instructions) if big else None
        extra_future = pool.submit(_extra_instructions) if extra else None
        futures = {name: pool.submit(PATHS[name]) for name in names}
        found = {name: futures[name].result() for name in names}
        for future in (big_future, extra_future):
            if future is not None:
                found.update((k, v) for k, v in future.result().items() if not only or k in only)
        return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.guard", description=__doc__)
    parser.add_argument("--update", action="store_true", help=f"write {BASELINES.name}")
    parser.add_argument(
        "--only", nargs="*", choices=[*PATHS, *BIG_PATHS, *EXTRA_PATHS], help="measure these paths"
    )
    parser.add_argument("--baselines", type=Path, default=BASELINES)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    recorded = json.loads(args.baselines.read_text()) if args.baselines.exists() else {}
    extra = args.update or any(n in recorded.get("paths", {}) for n in EXTRA_PATHS)
    measured = measure_all(args.only, extra=extra)
    env = environment()
    took = time.perf_counter() - started
    if args.update:
        doc = baselines_document(measured, env)
        if args.only and args.baselines.exists():  # keep the paths not measured
            old = json.loads(args.baselines.read_text())
            doc["paths"] = {**old.get("paths", {}), **doc["paths"]}
        args.baselines.write_text(json.dumps(doc, indent=2) + "\n")
        for name, m in measured.items():
            print(f"  {name}: {m.value:,.0f} {m.unit}")
        print(f"wrote {args.baselines} ({took:.0f}s)")
        return 0
    baselines = json.loads(args.baselines.read_text()) if args.baselines.exists() else {}
    if args.only:
        baselines = {
            **baselines,
            "paths": {k: v for k, v in baselines.get("paths", {}).items() if k in args.only},
        }
    findings = compare(baselines, measured, float(baselines.get("tolerance", TOLERANCE)))
    print(f"regression guard ({took:.0f}s):")
    print(report(findings, baselines, measured, env, float(baselines.get("tolerance", TOLERANCE))))
    return 1 if failed(findings) else 0


if __name__ == "__main__":
    raise SystemExit(main())
