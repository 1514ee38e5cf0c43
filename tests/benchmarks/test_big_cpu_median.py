"""``_big.cpu_ms_per_request``: each request's own server CPU, and their median, so one stall
does not move the figure (the summed figure of the same code moved 1.8x between repeats)."""

from __future__ import annotations

import os
import time

from benchmarks._big import cpu_ms_per_request


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_figure_is_the_median_of_each_requests_own_cpu() -> None:
    # This process is the "server": request 2 stalls for 80 ms of CPU, the rest take 2 ms.
    asked: list[int] = []

    def ask(i: int) -> None:
        asked.append(i)
        _burn(0.080 if i == 2 else 0.002)

    figure = cpu_ms_per_request(os.getpid(), ask, 5)
    assert asked == [0, 1, 2, 3, 4]
    # The mean would be about 17.6 ms; each request's own figure is about 2 ms (plus the
    # reads of /proc between them, counted as this process's run time too).
    assert 1.9 <= figure < 10
