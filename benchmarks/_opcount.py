"""Run ``mcp-runtime`` with every Python bytecode it executes counted, per function.

    python -m benchmarks._opcount OUT serve TARGET [options]   (the CLI's own arguments)

Used by ``python -m benchmarks.http_floor --opcodes`` and ``python -m benchmarks.guard``:
SIGUSR1 zeroes the counts and then creates ``OUT.zeroed`` (so the caller knows the signal was
handled), SIGUSR2 writes them to ``OUT`` as JSON ({"file:first line:qualified name": count}),
whole (written aside and renamed, so a reader never sees half a file). Tracing every
opcode makes the server some fifty times slower, but the counts do not depend on the
machine's speed or noise: a deterministic picture of where the interpreter's work goes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from types import CodeType, FrameType
from typing import Any

_counts: Counter[CodeType] = Counter()


def _trace(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "call":
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
    elif event == "opcode":
        _counts[frame.f_code] += 1
    return _trace


def main() -> int:
    out, argv = sys.argv[1], sys.argv[2:]

    def reset(signum: int, frame: FrameType | None) -> None:
        _counts.clear()
        with open(out + ".zeroed", "w"):
            pass

    def dump(signum: int, frame: FrameType | None) -> None:
        # A snapshot first (one C call, no opcode events): counting this very function's
        # code objects must not change the dict being read.
        snapshot = list(_counts.items())
        found = {
            f"{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}": n
            for code, n in snapshot
        }
        with open(out + ".part", "w", encoding="utf-8") as f:
            json.dump(found, f)
        os.replace(out + ".part", out)

    signal.signal(signal.SIGUSR1, reset)
    signal.signal(signal.SIGUSR2, dump)
    from runtime.cli import main as cli

    sys.settrace(_trace)
    return cli(argv)


if __name__ == "__main__":
    sys.exit(main())
