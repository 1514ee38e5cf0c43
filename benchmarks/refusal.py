"""Python bytecodes per refused request, one at a time, over stdio.

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
though not the kernel's. With ``--floors``, for every server both ways: a trio server back to
back finds the next probe waiting when it comes back from its write (about 0 sleeps per
refusal) and never runs its wait path, so it counts fewer instructions than from idle.

:func:`cpu_per_refusal` is the benchmark suite's row "overload, one at a time: server CPU per
refusal": the same refusals against the plain server (no tracing), their server CPU from
``/proc/<pid>/task/*/schedstat`` (nanoseconds, user and kernel, every thread). Rounds
interleave a phase of ``counted`` paced refusals with an idle phase of the same wall time (the
held call has no timer due, so the idle server should cost nothing; what it does cost is
subtracted), and the row is the median round's net CPU per refusal. Each refusal is a whole
wake-up from idle (``epoll_wait`` returns, read, decode, refuse, write, wait again): that is
what one refusal at a time costs, and the figure keeps it.

``--floors`` measures the same way (:func:`cost_per_refusal`: the same pacing, rounds, median
and idle phase, the same probe bytes, each reply checked -32010 with its own id) three floors
that refuse every request and nothing else (``benchmarks/servers/floor_refusal.py`` and
``.c``): ``bare``, a blocking Python loop (``os.read``, msgspec decode, a msgspec-encoded
-32010 with the id, ``os.write``); ``trio``, the same loop as one trio task; ``c``, the same in
C (compiled with ``cc`` on the spot). With each figure it reads, from ``/proc`` over the same
phases and net of the same idle phase, what the kernel saw of each refusal: the time spent
runnable but waiting for a CPU (schedstat's second field), the times the server was put on
a CPU (its third), voluntary and involuntary context switches and minor page faults. So
"each from idle costs more than back to back" is measured against servers with no runtime
in them: the floors pay the same wake-up, and what the runtime adds on top is the difference.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import _procfs as procfs
from . import _wire as wire
from .guard import ROOT, _env, _parked, _Traced

OVERLOAD_SERVER = ROOT / "benchmarks" / "servers" / "overload_server.py"
FLOOR_SERVER = ROOT / "benchmarks" / "servers" / "floor_refusal.py"
FLOOR_C = ROOT / "benchmarks" / "servers" / "floor_refusal.c"
#: The servers :func:`cost_per_refusal` measures: this runtime and the floors.
SERVERS = ("ours", "bare", "trio", "c")
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
    peer: wire.StdioPeer,
    pid: int,
    timeout: float = 120,
    pause: float = PAUSE,
    parked: Callable[[int], None] = _parked,
    hold: bool = True,
) -> Callable[[int], None]:
    """Holds the server's one slot (a call that outlasts the run, never answered; ``hold``
    False: none, for a floor that refuses everything) and returns a function that sends one
    probe, paced (``pause``, then ``parked``; ``pause=0``: as soon as the previous answer is
    in), and checks it was refused with its own id."""
    if hold:
        peer.write(wire.call_template("sleep", {"ms": 3_600_000}) % 1 + b"\n")
    probe = wire.echo_template()

    def refuse(rid: int) -> None:
        if pause:
            time.sleep(pause)
            parked(pid)
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


def _blocked(pid: int, timeout: float = 60.0) -> None:
    """:func:`benchmarks.guard._parked` for a floor: its one thread asleep in its wait for
    input, ``epoll_wait`` (trio) or a blocking ``read`` of the pipe (``pipe_read``)."""
    _parked(pid, timeout, waits=("epoll", "pipe"))


#: What :func:`_counters` reads: schedstat's three fields (nanoseconds on a CPU, nanoseconds
#: runnable but waiting for one, times put on one), then /proc status and stat counts.
COUNTERS = ("run_ns", "wait_ns", "slices", "vcsw", "nvcsw", "minflt")


def _counters(pid: int) -> list[int]:
    """:data:`COUNTERS` summed over the server's process tree and threads."""
    total = [0] * len(COUNTERS)
    for p in procfs.tree(pid):
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                total[5] += int(f.read().rsplit(b")", 1)[1].split()[7])  # minflt (field 10)
            tids = os.listdir(f"/proc/{p}/task")
        except (OSError, ValueError, IndexError):
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/schedstat", "rb") as f:
                    run, wait, slices = (int(x) for x in f.read().split()[:3])
                with open(f"/proc/{p}/task/{tid}/status", "rb") as f:
                    status = dict(
                        line.split(b":", 1) for line in f.read().splitlines() if b":" in line
                    )
            except (OSError, ValueError):
                continue
            total[0] += run
            total[1] += wait
            total[2] += slices
            total[3] += int(status.get(b"voluntary_ctxt_switches", b"0"))
            total[4] += int(status.get(b"nonvoluntary_ctxt_switches", b"0"))
    return total


@dataclass
class RefusalCost:
    """One server's refusals, one at a time: :func:`cost_per_refusal`."""

    server: str
    cpu: float  # median round's net server CPU seconds per refusal
    note: str
    #: Per refusal, from the same median round, net of its idle phase: microseconds runnable
    #: but waiting for a CPU, times put on a CPU, voluntary and involuntary context switches,
    #: minor page faults.
    wait_us: float
    slices: float
    vcsw: float
    nvcsw: float
    minflt: float

    def kernel_view(self) -> str:
        return (
            f"per refusal: {self.wait_us:.1f} us runnable waiting for a CPU, "
            f"{self.slices:.2f} times put on a CPU, {self.vcsw:.2f} voluntary and "
            f"{self.nvcsw:.2f} involuntary context switches, {self.minflt:.2f} minor faults"
        )


def _floor_argv(server: str, tmp: str) -> list[str]:
    """The command line of floor ``server`` (the C one compiled into ``tmp``)."""
    if server in ("bare", "trio"):
        return [sys.executable, str(FLOOR_SERVER), server]
    if server != "c":
        raise ValueError(f"no server {server!r}: one of {SERVERS}")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise wire.BenchError("no C compiler for the C floor (Debian: apt-get install gcc)")
    binary = os.path.join(tmp, "floor_refusal")
    built = subprocess.run(
        [cc, "-O2", "-o", binary, str(FLOOR_C)], capture_output=True, text=True, check=False
    )
    if built.returncode:
        raise wire.BenchError(f"cc failed on {FLOOR_C.name}: {built.stderr[-500:]}")
    return [binary]


def cost_per_refusal(
    pause: float,
    server: str = "ours",
    rounds: int = 7,
    counted: int = 200,
    stderr_path: str | None = None,
) -> RefusalCost:
    """``server``'s refusals (this runtime, ``"ours"``, or a floor: ``"bare"``, ``"trio"``,
    ``"c"``), one at a time: the median over ``rounds`` of the net server CPU per refusal and
    the kernel's counts from that round (:class:`RefusalCost`). Raises ``BenchError`` when a
    probe is answered anything but -32010 with its own id."""
    env = _env()
    with tempfile.TemporaryDirectory() as tmp:
        if server == "ours":
            argv = _serve(sys.executable, "-m", "runtime")
        else:
            argv = _floor_argv(server, tmp)
        peer = wire.StdioPeer(argv, cwd=str(ROOT), env=env, stderr_path=stderr_path)
        try:
            peer.handshake()
            if server == "ours":
                refuse = _refuser(peer, peer.pid, pause=pause)
            else:
                refuse = _refuser(peer, peer.pid, pause=pause, parked=_blocked, hold=False)
            for rid in range(10, 10 + WARM):
                refuse(rid)
            per: list[tuple[float, list[float]]] = []
            idle_share: list[float] = []
            for n in range(rounds):
                cpu0, t0 = procfs.run_seconds(peer.pid), time.perf_counter()
                k0 = _counters(peer.pid)
                for rid in range(1000 + n * counted, 1000 + (n + 1) * counted):
                    refuse(rid)
                busy, wall = procfs.run_seconds(peer.pid) - cpu0, time.perf_counter() - t0
                k1 = _counters(peer.pid)
                cpu0 = procfs.run_seconds(peer.pid)
                time.sleep(wall)
                idle = procfs.run_seconds(peer.pid) - cpu0
                k2 = _counters(peer.pid)
                kernel = [((b - a) - (c - b)) / counted for a, b, c in zip(k0, k1, k2, strict=True)]
                per.append(((busy - idle) / counted, kernel))
                idle_share.append(idle / busy if busy else 0.0)
        finally:
            peer.close()
    per.sort(key=lambda round_: round_[0])
    cpu, kernel = per[len(per) // 2]
    note = (
        f"median of {rounds} rounds of {counted} refusals "
        + (f"paced {pause * 1e3:g} ms (each from idle)" if pause else "back to back")
        + ", net of an "
        f"idle phase as long (at most {max(idle_share):.1%} of the busy CPU); rounds "
        f"{per[0][0] * 1e6:.1f}-{per[-1][0] * 1e6:.1f} us"
    )
    counts = dict(zip(COUNTERS, kernel, strict=True))
    return RefusalCost(
        server,
        cpu,
        note,
        wait_us=counts["wait_ns"] / 1e3,
        slices=counts["slices"],
        vcsw=counts["vcsw"],
        nvcsw=counts["nvcsw"],
        minflt=counts["minflt"],
    )


def cpu_per_refusal(
    pause: float, rounds: int = 7, counted: int = 200, stderr_path: str | None = None
) -> tuple[float, str]:
    """(median net server CPU seconds per refusal over ``rounds``, a note with the spread)."""
    cost = cost_per_refusal(pause, "ours", rounds, counted, stderr_path)
    return cost.cpu, cost.note


def _instructions_for(refusals: int, server: str = "ours", pause: float = PAUSE) -> tuple[int, int]:
    """(instructions the server executes in all, start to exit, refusing ``refusals`` probes
    paced ``pause``; its voluntary context switches until its stdin closes)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        valgrind = (
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            f"--log-file={os.path.join(tmp, 'valgrind.log')}",
        )
        if server == "ours":
            argv = _serve(*valgrind, sys.executable, "-m", "runtime")
        else:
            argv = [*valgrind, *_floor_argv(server, tmp)]
        peer = wire.StdioPeer(
            argv, cwd=str(ROOT), env=_env(), stderr_path=os.path.join(tmp, "stderr.log")
        )
        try:
            peer.handshake(timeout=300)
            if server == "ours":
                refuse = _refuser(peer, peer.pid, timeout=300, pause=pause)
            else:
                refuse = _refuser(
                    peer, peer.pid, timeout=300, pause=pause, parked=_blocked, hold=False
                )
            for rid in range(10, 10 + refusals):
                refuse(rid)
            sleeps = _counters(peer.pid)[COUNTERS.index("vcsw")]
        finally:
            peer.close(timeout=300)  # stdin EOF: the server exits, callgrind writes its counts
        with open(out, encoding="utf-8") as counts:
            found = re.search(r"^summary: (\d+)", counts.read(), re.MULTILINE)
        if found is None:
            raise wire.BenchError("no callgrind summary")
        return int(found.group(1)), sleeps


def instructions(
    server: str = "ours", pause: float = PAUSE, few: int = FEW, more: int = MORE
) -> tuple[float, float]:
    """(instructions per refusal, voluntary context switches per refusal) of ``server``
    (``"ours"`` or a floor) refusing probes paced ``pause`` (0: back to back): two callgrind
    runs at once, the difference per refusal. Back to back, the switches say whether the
    server slept before each probe (its wait path in the count) or found it waiting."""
    if shutil.which("valgrind") is None:
        raise wire.BenchError("valgrind is missing (Debian: apt-get install valgrind)")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        (i_few, s_few), (i_more, s_more) = pool.map(
            lambda n: _instructions_for(n, server, pause), [few, more]
        )
    return (i_more - i_few) / (more - few), (s_more - s_few) / (more - few)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.refusal", description=__doc__)
    parser.add_argument("--top", type=int, default=0, help="list the N dearest functions")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions under callgrind"
    )
    parser.add_argument(
        "--floors",
        action="store_true",
        help="server CPU per refusal, back to back and each from idle (paced --pause), of "
        "this runtime and the three floors, with the kernel's counts",
    )
    parser.add_argument(
        "--pause", type=float, default=0.002, help="seconds between probes from idle"
    )
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    if args.floors:
        for server in SERVERS:
            for pause, counted in ((0.0, 1000), (args.pause, 200)):
                cost = cost_per_refusal(pause, server, args.rounds, counted)
                print(f"{server:5} {cost.cpu * 1e6:6.1f} us  {cost.note}")
                print(f"      {cost.kernel_view()}")
                if args.instructions:
                    count, sleeps = instructions(server, pause)
                    print(
                        f"      callgrind: {count:,.0f} instructions per refusal, "
                        f"{sleeps:.2f} sleeps per refusal under callgrind"
                    )
        return 0
    if args.instructions:
        print(f"instructions per refusal (callgrind): {instructions()[0]:,.0f}")
    value, ranked = measure(args.top)
    print(f"bytecodes per refusal (one at a time, stdio): {value:,.0f}")
    root = str(ROOT) + os.sep
    for name, n in ranked:
        print(f"  {n:8.1f}  {name.replace(root, '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
