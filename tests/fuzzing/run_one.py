"""One atheris target in this process: ``python -m tests.fuzzing.run_one NAME [libFuzzer args]``
(the runner in ``__main__`` starts one such process per target)."""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["runtime"]):
    from .targets import TARGETS


def main() -> None:
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
