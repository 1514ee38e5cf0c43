"""Interleaved fan-out rows, ours against the SDK, with medians.

    python -m benchmarks.fanout_pairs [--pairs 3] [--subscribers 1000] [--era listen] [--no-floor]

Each pair serves both contenders in turn, on fresh servers (``benchmarks._fanout.measure``
with exactly ``subscribers`` streams open, all subscribed), so machine load drifts alike for
both. Prints every row (time to the last subscriber, time the client read it, server CPU,
client CPU) and the medians, and the ratios of the medians. The listen era also runs the floor
(``servers/floor_fanout.py``: the same bytes to the same sockets, one ``send`` each from a plain
loop) in each round, unless ``--no-floor``. The SDK has no server-wide
``resources/updated`` for handshake sessions: ``--era session`` runs ours alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from . import _fanout
from .run import OURS, SDK

_KEYS = ("fanout_ms", "fanout_read_ms", "fanout_cpu_ms", "fanout_client_cpu_ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--era", choices=["listen", "session"], default="listen")
    parser.add_argument("--no-floor", action="store_true", help="ours and the SDK only")
    args = parser.parse_args()
    os.chdir(Path(__file__).resolve().parent.parent)
    contenders = [OURS, SDK] if args.era == "listen" else [OURS]
    if args.era == "listen" and not args.no_floor:
        contenders.append(_fanout.FLOOR)
    rows: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    with open(os.devnull, "wb") as log:
        for i in range(args.pairs):
            for contender in contenders if i % 2 == 0 else contenders[::-1]:
                row = _fanout.measure(args.era, args.subscribers, args.subscribers, log, contender)
                rows[contender].append(row)
                print(
                    f"{contender:12} last {row['fanout_ms']:7.1f} ms  read"
                    f" {row['fanout_read_ms']:7.1f} ms  server CPU {row['fanout_cpu_ms']:6.1f} ms"
                    f"  client CPU"
                    f" {row['fanout_client_cpu_ms']:6.1f} ms",
                    flush=True,
                )
    medians = {c: {k: statistics.median(r[k] for r in rows[c]) for k in _KEYS} for c in rows}
    for c, m in medians.items():
        print(f"median {c:12} " + "  ".join(f"{k} {v:.1f}" for k, v in m.items()))
    if SDK in medians:
        for k in ("fanout_ms", "fanout_cpu_ms"):
            print(f"ratio SDK/ours {k}: {medians[SDK][k] / medians[OURS][k]:.1f}x")
    if _fanout.FLOOR in medians:
        for k in ("fanout_ms", "fanout_cpu_ms"):
            floor = medians[_fanout.FLOOR][k]
            print(f"ratio ours/floor {k}: {medians[OURS][k] / floor:.1f}x", end="")
            if SDK in medians:
                print(f"  SDK/floor: {medians[SDK][k] / floor:.1f}x", end="")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
