"""Run the atheris fuzz targets: ``python -m tests.fuzzing [--seconds N] [TARGET ...]``.

Each target runs in its own process for N seconds (default 10: the nine targets take about
a minute and a half, the bounded run ``.ci/run`` makes). A crash prints the input and fails the run
(exit 1); crashing inputs are written to ``fuzz-artifacts/``. Maintainers run it longer,
e.g. ``python -m tests.fuzzing --seconds 3600 http11`` (docs/reliability.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .targets import SEEDS, TARGETS

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzzing")
    parser.add_argument("--seconds", type=int, default=10, help="per target")
    parser.add_argument("targets", nargs="*", default=list(TARGETS))
    args = parser.parse_args()
    artifacts = ROOT / "fuzz-artifacts"
    artifacts.mkdir(exist_ok=True)
    failed = []
    for name in args.targets:
        with tempfile.TemporaryDirectory() as corpus:
            for index, seed in enumerate(SEEDS[name]):
                Path(corpus, f"seed-{index}").write_bytes(seed)
            command = [
                sys.executable,
                "-m",
                "tests.fuzzing.run_one",
                name,
                corpus,
                f"-max_total_time={args.seconds}",
                "-rss_limit_mb=1024",
                "-timeout=10",
                f"-artifact_prefix={artifacts}/{name}-",
                "-print_final_stats=1",
            ]
            result = subprocess.run(command, cwd=ROOT, env={**os.environ}, capture_output=True)
            stats = [
                line
                for line in result.stderr.decode(errors="replace").splitlines()
                if line.startswith(("stat::number_of_executed_units", "stat::new_units_added"))
            ]
            print(f"fuzz {name}: exit {result.returncode} {' '.join(stats)}", flush=True)
            if result.returncode != 0:
                print(result.stderr.decode(errors="replace")[-4000:], file=sys.stderr)
                failed.append(name)
    if failed:
        print(f"fuzz: crashes in {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
