"""Python bytecodes per refused request, one at a time, over stdio (issue 22 item 5).

    python -m benchmarks.refusal [--top N]

The overload server (``benchmarks/servers/overload_server.py``) runs under
``benchmarks._opcount`` with ``--max-in-flight 1``; one ``sleep`` call that outlasts the run
holds the only slot, so every probe (an ``echo`` call) is refused with -32010. Probes go one at
a time, the server parked in its event loop's wait before each (as ``benchmarks.guard`` paces
its paths), so each refusal is a whole wake-up: the read, the decode, the refusal, the write
and the wait for the next input. Nothing else runs in the server meanwhile (the sleeping call
has no timer due), so the count is the refusal's alone: a deterministic figure to decide a
change to the refusal path by, where the benchmark suite's CPU per refusal is wall-clock noise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from . import _wire as wire
from .guard import ROOT, _env, _parked, _Traced

OVERLOAD_SERVER = ROOT / "benchmarks" / "servers" / "overload_server.py"
WARM, COUNTED = 100, 200
PAUSE = 0.01
OVERLOAD = -32010


def measure(
    top: int = 0, warm: int = WARM, counted: int = COUNTED
) -> tuple[float, list[tuple[str, float]]]:
    """(bytecodes per refusal, the ``top`` functions by bytecodes per refusal). Raises
    ``BenchError`` when a probe is answered anything but -32010 with its own id."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "opcodes.json")
        argv = [
            sys.executable,
            "-m",
            "benchmarks._opcount",
            out,
            "serve",
            str(OVERLOAD_SERVER),
            "--log-level",
            "warning",
            "--max-in-flight",
            "1",
        ]
        peer = wire.StdioPeer(
            argv, cwd=str(ROOT), env=_env(), stderr_path=os.path.join(tmp, "stderr.log")
        )
        try:
            peer.handshake()
            traced = _Traced(peer.pid, out)
            # Holds the one slot for far longer than the run; never answered.
            peer.write(wire.call_template("sleep", {"ms": 3_600_000}) % 1 + b"\n")
            probe = wire.echo_template()

            def refuse(rid: int) -> None:
                time.sleep(PAUSE)
                _parked(traced.pid)
                reply = peer.request(probe % rid, timeout=120)
                if wire.error_code(reply) != OVERLOAD or wire.response_id(reply) != rid:
                    raise wire.BenchError(f"probe {rid} answered {reply[:200]!r}")

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.refusal", description=__doc__)
    parser.add_argument("--top", type=int, default=0, help="list the N dearest functions")
    args = parser.parse_args(argv)
    value, ranked = measure(args.top)
    print(f"bytecodes per refusal (one at a time, stdio): {value:,.0f}")
    root = str(ROOT) + os.sep
    for name, n in ranked:
        print(f"  {n:8.1f}  {name.replace(root, '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
