"""Run the atheris fuzz targets: ``python -m tests.fuzzing [--seconds N | --runs N]
[--seed S] [TARGET ...]``.

Each target runs in its own process from the committed seeds (``SEEDS``), for N seconds
(default 10) or for exactly N inputs. ``.ci/run`` uses ``--seed 1 --runs N``: libFuzzer with a
fixed seed and a fixed number of inputs explores the same inputs on every machine, however
fast, so CI is deterministic; a crash it finds is found again by the next run. Maintainers
run the random, longer campaigns, e.g. ``python -m tests.fuzzing --seconds 3600 http11``
(docs/reliability.md), and commit what they find as seeds with the fix. A crash prints the
input and fails the run (exit 1); crashing inputs are written to ``fuzz-artifacts/``.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from .targets import SEEDS, TARGETS

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzzing")
    parser.add_argument("--seconds", type=int, default=10, help="per target")
    parser.add_argument("--runs", type=int, help="inputs per target (instead of --seconds)")
    parser.add_argument("--seed", type=int, help="libFuzzer's random seed (default: random)")
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
                *([f"-runs={args.runs}"] if args.runs else [f"-max_total_time={args.seconds}"]),
                # -reload=0: libFuzzer otherwise rereads the corpus each second, by the clock.
                *([f"-seed={args.seed}", "-reload=0"] if args.seed is not None else []),
                "-rss_limit_mb=1024",
                "-timeout=10",
                f"-artifact_prefix={artifacts}/{name}-",
                "-print_final_stats=1",
            ]
            env = {**os.environ}
            if args.seed is not None:
                # A fixed seed alone does not fix the run: str hashes are salted per process
                # and object hashes follow addresses, which ASLR moves; both change set and
                # dict orders and so the coverage atheris sees. Fix the salt and turn ASLR off
                # for the fuzzing process (util-linux's setarch -R, on every Linux).
                env["PYTHONHASHSEED"] = "0"
                command = ["setarch", platform.machine(), "-R", *command]
            result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True)
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
