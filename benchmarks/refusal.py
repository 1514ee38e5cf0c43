"""Python bytecodes per refused request, one at a time, over stdio (issue 22 item 5).

    python -m benchmarks.refusal [--top N] [--instructions]

The overload server (``benchmarks/servers/overload_server.py``) runs under
``benchmarks._opcount`` with ``--max-in-flight 1``; one ``sleep`` call that outlasts the run
holds the only slot, so every probe (an ``echo`` call) is refused with -32010. Probes go one at
a time, the server parked in its event loop's wait before each (as ``benchmarks.guard`` paces
its paths), so each refusal is a whole wake-up: the read, the decode, the refusal, the write
and the wait for the next input. Nothing else runs in the server meanwhile (the sleeping call
has no timer due), so the count is the refusal's alone: a deterministic figure to decide a
change to the refusal path by, where the benchmark suite's CPU per refusal is wall-clock noise.

``--instructions`` also counts the instructions per refusal under valgrind's callgrind (the
difference between a run of ``FEW`` and one of ``MORE`` refusals, so start-up and exit cancel
out): the interpreter's work and the C work (msgspec, the system call wrappers) bytecodes miss,
though not the kernel's.

:func:`cpu_per_refusal` is the benchmark suite's row "overload, one at a time: server CPU per
refusal": the same refusals against the plain server (no tracing), their server CPU from
``/proc/<pid>/task/*/schedstat`` (nanoseconds, user and kernel, every thread). Rounds
interleave a phase of ``counted`` paced refusals with an idle phase of the same wall time (the
held call has no timer due, so the idle server should cost nothing; what it does cost is
subtracted), and the row is the median round's net CPU per refusal. Each refusal is a whole
wake-up from idle (``epoll_wait`` returns, read, decode, refuse, write, wait again): that is
what one refusal at a time costs, and the figure keeps it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

from . import _procfs as procfs
from . import _wire as wire
from .guard import ROOT, _env, _parked, _Traced

OVERLOAD_SERVER = ROOT / "benchmarks" / "servers" / "overload_server.py"
WARM, COUNTED = 100, 200
FEW, MORE = 100, 500  # refusals in the two callgrind runs
PAUSE = 0.01
OVERLOAD = -32010


def _serve(*command: str) -> list[str]:
    """The overload server's command line: ``command`` runs the CLI (``serve`` follows)."""
    return [
        *command,
        "serve",
        str(OVERLOAD_SERVER),
        "--log-level",
        "warning",
        "--max-in-flight",
        "1",
    ]


def _refuser(
    peer: wire.StdioPeer, pid: int, timeout: float = 120, pause: float = PAUSE
) -> Callable[[int], None]:
    """Holds the server's one slot (a call that outlasts the run, never answered) and returns
    a function that sends one probe, paced (``pause``, then parked; ``pause=0``: as soon as
    the previous answer is in), and checks it was refused with its own id."""
    peer.write(wire.call_template("sleep", {"ms": 3_600_000}) % 1 + b"\n")
    probe = wire.echo_template()

    def refuse(rid: int) -> None:
        if pause:
            time.sleep(pause)
            _parked(pid)
        reply = peer.request(probe % rid, timeout=timeout)
        if wire.error_code(reply) != OVERLOAD or wire.response_id(reply) != rid:
            raise wire.BenchError(f"probe {rid} answered {reply[:200]!r}")

    return refuse


def measure(
    top: int = 0, warm: int = WARM, counted: int = COUNTED
) -> tuple[float, list[tuple[str, float]]]:
    """(bytecodes per refusal, the ``top`` functions by bytecodes per refusal). Raises
    ``BenchError`` when a probe is answered anything but -32010 with its own id."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "opcodes.json")
        argv = _serve(sys.executable, "-m", "benchmarks._opcount", out)
        peer = wire.StdioPeer(
            argv, cwd=str(ROOT), env=_env(), stderr_path=os.path.join(tmp, "stderr.log")
        )
        try:
            peer.handshake()
            traced = _Traced(peer.pid, out)
            refuse = _refuser(peer, traced.pid)
            for rid in range(10, 10 + warm):
                refuse(rid)
            traced.zero()
            for rid in range(1000, 1000 + counted):
                refuse(rid)
            measured = traced.counts(counted)

            with open(out, encoding="utf-8") as f:
                counts: dict[str, int] = json.load(f)
        finally:
            peer.close()
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
    return measured.value, [(name, n / counted) for name, n in ranked]


def cpu_per_refusal(
    pause: float, rounds: int = 7, counted: int = 200, stderr_path: str | None = None
) -> tuple[float, str]:
    """(median net server CPU seconds per refusal over ``rounds``, a note with the spread)."""
    env = _env()
    peer = wire.StdioPeer(
        _serve(sys.executable, "-m", "runtime"), cwd=str(ROOT), env=env, stderr_path=stderr_path
    )
    try:
        peer.handshake()
        refuse = _refuser(peer, peer.pid, pause=pause)
        for rid in range(10, 10 + WARM):
            refuse(rid)
        per: list[float] = []
        idle_share: list[float] = []
        for n in range(rounds):
            cpu0, t0 = procfs.run_seconds(peer.pid), time.perf_counter()
            for rid in range(1000 + n * counted, 1000 + (n + 1) * counted):
                refuse(rid)
            busy, wall = procfs.run_seconds(peer.pid) - cpu0, time.perf_counter() - t0
            cpu0 = procfs.run_seconds(peer.pid)
            time.sleep(wall)
            idle = procfs.run_seconds(peer.pid) - cpu0
            per.append((busy - idle) / counted)
            idle_share.append(idle / busy if busy else 0.0)
    finally:
        peer.close()
    per.sort()
    note = (
        f"median of {rounds} rounds of {counted} refusals "
        + (f"paced {pause * 1e3:g} ms (each from idle)" if pause else "back to back")
        + ", net of an "
        f"idle phase as long (at most {max(idle_share):.1%} of the busy CPU); rounds "
        f"{per[0] * 1e6:.1f}-{per[-1] * 1e6:.1f} us"
    )
    return per[len(per) // 2], note


def _instructions_for(refusals: int) -> int:
    """Instructions the server executes in all, start to exit, refusing ``refusals`` probes."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        argv = _serve(
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            f"--log-file={os.path.join(tmp, 'valgrind.log')}",
            sys.executable,
            "-m",
            "runtime",
        )
        peer = wire.StdioPeer(
            argv, cwd=str(ROOT), env=_env(), stderr_path=os.path.join(tmp, "stderr.log")
        )
        try:
            peer.handshake(timeout=300)
            refuse = _refuser(peer, peer.pid, timeout=300)
            for rid in range(10, 10 + refusals):
                refuse(rid)
        finally:
            peer.close(timeout=300)  # stdin EOF: the server exits, callgrind writes its counts
        with open(out, encoding="utf-8") as counts:
            found = re.search(r"^summary: (\d+)", counts.read(), re.MULTILINE)
        if found is None:
            raise wire.BenchError("no callgrind summary")
        return int(found.group(1))


def instructions() -> float:
    """Instructions per refusal: two callgrind runs at once, the difference per refusal."""
    if shutil.which("valgrind") is None:
        raise wire.BenchError("valgrind is missing (Debian: apt-get install valgrind)")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        few, more = pool.map(_instructions_for, [FEW, MORE])
    return (more - few) / (MORE - FEW)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.refusal", description=__doc__)
    parser.add_argument("--top", type=int, default=0, help="list the N dearest functions")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions under callgrind"
    )
    args = parser.parse_args(argv)
    if args.instructions:
        print(f"instructions per refusal (callgrind): {instructions():,.0f}")
    value, ranked = measure(args.top)
    print(f"bytecodes per refusal (one at a time, stdio): {value:,.0f}")
    root = str(ROOT) + os.sep
    for name, n in ranked:
        print(f"  {n:8.1f}  {name.replace(root, '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
