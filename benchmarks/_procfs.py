"""Server cost from /proc: CPU seconds (utime+stime) and memory (VmRSS, VmHWM) of a process tree."""

from __future__ import annotations

import os

_TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def tree(pid: int) -> list[int]:
    """The process and its descendants (a launcher that forks still counts whole)."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo.extend(_children(p))
    return pids


def cpu_seconds(pid: int) -> float:
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / _TICK


def status_kib(pid: int, key: str) -> int:
    """Sum of a /proc/<pid>/status field (VmRSS, VmHWM) over the tree, in KiB."""
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


def run_seconds(pid: int) -> float:
    """CPU time of the tree's threads from /proc/<pid>/task/<tid>/schedstat (nanoseconds, so
    fine enough for a few requests, where utime/stime count 10 ms ticks)."""
    total = 0
    for p in tree(pid):
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/schedstat", "rb") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e9
