"""Python bytecodes the server runs per subscriber to deliver one change.

    python -m benchmarks.fanout_opcount session|listen [--streams 200] [--top 0]

Serves ``benchmarks/servers/mcp_runtime_server.py`` over HTTP under ``benchmarks._opcount``,
opens ``streams`` idle subscribers of the kind asked (the raw clients of
``benchmarks._fanout``: handshake sessions with GET streams subscribed to ``mem://blob``, or
2026-07-28 ``subscriptions/listen`` streams asking for it), zeroes the counts, calls the
``touch`` tool (one ``resources/updated``) and reads every stream until it has the
notification (after one ``touch`` before the streams opened, as the timed rows do).
Prints the server's bytecodes per subscriber (the ``touch`` call's own included, spread
over all) and, with ``--top``, the functions that ran the most. A count the
machine's speed and noise do not move, to decide fan-out changes by; wall-clock rows come
from ``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import _fanout
from . import _wire as wire
from .run import OURS, server_env


def _wait_for(path: Path, deadline: float) -> None:
    while not path.exists():
        if time.monotonic() > deadline:
            raise wire.BenchError(f"the counting server did not write {path}")
        time.sleep(0.05)


def measure(era: str, streams: int) -> dict[str, int]:
    """Bytecodes per function for one change delivered to ``streams`` subscribers."""
    port = wire.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "counts.json"
        argv = [
            sys.executable,
            "-m",
            "benchmarks._opcount",
            str(out),
            *_fanout.serve_args(port, streams),
        ]
        proc = subprocess.Popen(
            argv, env=server_env(OURS), stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        socks = []
        try:
            wire.wait_for_port(port, 120, lambda: proc.poll() is None)
            # One ``touch`` before the streams open, as ``benchmarks.run`` does: a fresh
            # server's first call builds its typed-call decoder (some 20,000 bytecodes, 100
            # per subscriber at 200), which is not fan-out work.
            _fanout._touch(port)
            if era == "session":
                ids = _fanout._sessions(port, streams, streams)
                socks = [_fanout._open_stream(port, _fanout._get_request(port, s)) for s in ids]
                marker = b"\r\n\r\n"
            else:
                socks = [
                    _fanout._open_stream(port, _fanout._listen_request(port, 10 + i, True))
                    for i in range(streams)
                ]
                marker = b"acknowledged"
            ready, _ = _fanout._await_all(socks, marker, time.perf_counter() + 300)
            if ready != streams:
                raise wire.BenchError(f"{ready} of {streams} {era} streams opened")
            time.sleep(0.5)
            proc.send_signal(signal.SIGUSR1)
            _wait_for(Path(str(out) + ".zeroed"), time.monotonic() + 60)
            _fanout._touch(port)
            got, _ = _fanout._await_all(socks, _fanout.UPDATED, time.perf_counter() + 300)
            if got != streams:
                raise wire.BenchError(f"{got} of {streams} subscribers got the update")
            time.sleep(0.3)  # (the server's last steps after the last write)
            proc.send_signal(signal.SIGUSR2)
            _wait_for(out, time.monotonic() + 60)
            counts: dict[str, int] = json.loads(out.read_text())
            return counts
        finally:
            for s in socks:
                s.close()
            wire.stop(proc, 30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("era", choices=["session", "listen"])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--top", type=int, default=0, help="also list this many functions")
    args = parser.parse_args()
    os.chdir(Path(__file__).resolve().parent.parent)
    counts = measure(args.era, args.streams)
    total = sum(counts.values())
    print(f"{args.era}: {total / args.streams:.0f} bytecodes per subscriber ({args.streams})")
    for name, count in sorted(counts.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {count / args.streams:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
