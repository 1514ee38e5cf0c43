"""The atheris targets' seeds, run as plain tests (no atheris needed): the harness and each
parser's contract on the inputs the coverage-guided run starts from."""

from __future__ import annotations

import pytest

from .targets import SEEDS, TARGETS


@pytest.mark.parametrize(
    ("name", "seed"), [(name, seed) for name, seeds in SEEDS.items() for seed in seeds]
)
def test_seed(name: str, seed: bytes) -> None:
    TARGETS[name](seed)
