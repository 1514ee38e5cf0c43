"""Run ``mcp-runtime`` with every Python bytecode it executes counted, per function.

    python -m benchmarks._opcount OUT serve TARGET [options]   (the CLI's own arguments)

Used by ``python -m benchmarks.http_floor --opcodes``: SIGUSR1 zeroes the counts, SIGUSR2
writes them to ``OUT`` as JSON ({"file:first line:qualified name": count}). Tracing every
opcode makes the server some fifty times slower, but the counts do not depend on the
machine's speed or noise: a deterministic picture of where the interpreter's work goes.
"""

from __future__ import annotations

import json
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

    def dump(signum: int, frame: FrameType | None) -> None:
        # A snapshot first: this handler's own frames are traced too, and a code object
        # seen for the first time while iterating grew the dict under the iteration.
        found = {
            f"{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}": n
            for code, n in list(_counts.items())
        }
        with open(out, "w", encoding="utf-8") as f:
            json.dump(found, f)

    signal.signal(signal.SIGUSR1, reset)
    signal.signal(signal.SIGUSR2, dump)
    from runtime._cli import main as cli

    sys.settrace(_trace)
    return cli(argv)


if __name__ == "__main__":
    sys.exit(main())
