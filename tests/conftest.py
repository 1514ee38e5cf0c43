"""Settings for the whole suite.

The suite runs on parallel pytest-xdist workers (``-n auto`` in pyproject.toml's addopts), so
that ``.venv/bin/pytest`` alone gets them; ``-n 0`` runs it in one process (for ``-s`` or
``--pdb``). Most tests wait on sockets, subprocesses and timers rather than compute, so
``auto`` means two workers per core (below). Tests share no fixed port or file: servers listen
on loopback port 0, files live under ``tmp_path``, and what one run builds once (the wheel of
tests/packaging) is built under a lock in the workers' common temporary directory.

Hypothesis has no per-example deadline: on workers that share the cores, an example's wall
time measures the machine's load, not the code (every I/O test bounds itself with
``trio.fail_after``). Under ``CI=true`` it is also derandomized: each property test draws the
same examples on every run (seeded from the test itself) and keeps no example database, so a CI
result depends on the commit alone. Random exploration is for maintainers' longer runs
(docs/reliability.md), whose finds are committed as explicit examples with their fix.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("suite", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "suite")

#: Workers per core for ``-n auto``: while one worker's test waits on a timer or a subprocess
#: another's runs (measured on two cores: four workers finish first). Capped, since each
#: worker collects the whole suite and starts its own redis-server for tests/stores.
WORKERS_PER_CORE = 2
MAX_WORKERS = 16


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(MAX_WORKERS, WORKERS_PER_CORE * (cores or 1))
