"""Profile our stdio echo path under load with py-spy (sampling, outside the process).

``python -m benchmarks.run --profile`` (or ``python -m benchmarks._profile``) runs our stdio
server with 64 echo calls in flight while py-spy samples it, writes the collapsed stacks and a
speedscope file to benchmarks/results/, and prints the top functions by own time and by
inclusive time (share of samples).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from . import _wire as wire

DURATION = 8.0


def _py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return found if Path(found).exists() else None


def summarize(collapsed: Path, top: int = 25) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        total += count
        frames = [f for f in stack.split(";") if f]
        if not frames:
            continue
        own[_short(frames[-1])] += count
        for name in {_short(f) for f in frames}:
            inclusive[name] += count
    out = [f"{total} samples", "", "own time (leaf frame):"]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in own.most_common(top)]
    out += ["", "inclusive time (frame anywhere on the stack):"]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top + 15)]
    return "\n".join(out)


def _short(frame: str) -> str:
    # py-spy raw frames look like "function (path/to/file.py:123)"; keep the function and the
    # file relative to site-packages or the project, without the line (aggregate per function).
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", "/work/main/", "python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


def _record(spy: str, pid: int, raw: Path, duration: float) -> subprocess.Popen[bytes]:
    """Start py-spy sampling ``pid`` for ``duration`` seconds into ``raw`` (collapsed)."""
    return subprocess.Popen(
        [
            spy,
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(int(duration)),
            "--rate",
            "400",
            "--format",
            "raw",
            "--output",
            str(raw),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def profile_stdio(results: Path, settings: Any = None, duration: float = DURATION) -> str | None:
    from .run import OURS, ROOT, server_env, stdio_argv

    spy = _py_spy()
    if spy is None:
        print("py-spy is not installed (pip install -e '.[bench]'): no profile")
        return None
    results.mkdir(parents=True, exist_ok=True)
    raw = results / "profile-stdio-echo.txt"
    peer = wire.StdioPeer(
        stdio_argv(OURS),
        cwd=str(ROOT),
        env=server_env(OURS),
        stderr_path=str(results / "logs" / "profile.log"),
    )
    try:
        peer.handshake()
        peer.load(wire.echo_template(), total=20_000, depth=64, time_cap=1.0)  # warm-up
        spy_proc = _record(spy, peer.pid, raw, duration)
        time.sleep(0.5)
        res = peer.load(wire.echo_template(), total=10**7, depth=64, time_cap=duration - 1)
        _, err = spy_proc.communicate(timeout=duration + 30)
        if spy_proc.returncode != 0 or not raw.exists():
            print(f"py-spy failed: {err.decode(errors='replace')[-500:]}")
            return None
    finally:
        peer.close()
    text = (
        f"py-spy profile of `mcp-runtime serve` (stdio) under 64 echo calls in flight: "
        f"{res.rate:,.0f} calls/s while sampled\n\n" + summarize(raw)
    )
    (results / "profile-stdio-echo-summary.txt").write_text(text)
    print(text)
    return text


def profile_http(results: Path, duration: float = DURATION, clients: int = 16) -> str | None:
    """The same for ``mcp-runtime serve --transport http``: 16 keep-alive clients, modern wire."""
    from .run import OURS, http_server

    spy = _py_spy()
    if spy is None:
        return None
    raw = results / "profile-http-echo.txt"
    with http_server(OURS, "http-json") as (proc, port):
        conns = [wire.HttpClient(port, "/mcp", "modern") for _ in range(clients)]
        wire.http_load(conns, wire.echo_template(True), total=2000, time_cap=1.0)
        spy_proc = _record(spy, proc.pid, raw, duration)
        time.sleep(0.5)
        res = wire.http_load(conns, wire.echo_template(True), total=10**7, time_cap=duration - 1)
        spy_proc.communicate(timeout=duration + 30)
        for c in conns:
            c.close()
    text = (
        f"py-spy profile of `mcp-runtime serve --transport http` under {clients} keep-alive "
        f"clients (modern wire): {res.rate:,.0f} calls/s while sampled\n\n" + summarize(raw)
    )
    (results / "profile-http-echo-summary.txt").write_text(text)
    print(text)
    return text


if __name__ == "__main__":
    from .run import RESULTS

    (RESULTS / "logs").mkdir(parents=True, exist_ok=True)
    profile_stdio(RESULTS)
    profile_http(RESULTS)
