"""benchmarks/run.py's refusal floors into benchmarks/_report.py's table: a real floor measured
by the suite's own code, its rows set beside this runtime's with the ratio."""

from __future__ import annotations

import pathlib

import pytest

from benchmarks import _report, run


def test_a_floor_measured_by_the_suite_lands_in_the_table_beside_ours(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "logs").mkdir()
    monkeypatch.setattr(run, "RESULTS", tmp_path)
    rec = run.Recorder("test", "quick")
    run.measure_refusal_floor(rec, 0, "floor-c", "c")  # every probe checked -32010, its id
    got = {row["metric"]: row for row in rec.rows}
    assert set(got) == set(run.REFUSAL_FLOOR_METRICS)
    assert all(row["contender"] == "floor-c" for row in rec.rows)
    # A refusal from idle wakes the floor at least once; its CPU is real and small.
    assert got["shed_slices_idle"]["value"] >= 0.8
    assert 0 < got["shed_cpu_idle_us"]["value"] < 5000
    assert "paced 2 ms (each from idle)" in got["shed_cpu_idle_us"]["note"]
    assert "back to back" in got["shed_cpu_us"]["note"]
    # Back to back, the C floor is back in its read long before the next probe is written:
    # it sleeps before (nearly) every one.
    assert 0.5 < got["shed_sleeps"]["value"] < 1.5
    # Ours at twice the floor's figure: the table shows the floor's row and "ours 2x".
    rows = [*rec.rows]
    for metric in ("shed_cpu_us", "shed_cpu_idle_us"):
        rows.append(
            {"contender": _report.OURS, "metric": metric, "value": 2 * got[metric]["value"]}
        )
    main, _, _ = _report.table(rows)
    line = next(
        line
        for line in main.splitlines()
        if line.startswith("| floor (C loop): overload, one at a time, each from idle: server CPU")
    )
    assert "| ours 2x |" in line
    assert _report._fmt(got["shed_cpu_idle_us"]["value"]) in line


def test_a_missing_floor_is_shown_as_not_available_not_hidden() -> None:
    rec = run.Recorder("test", "quick")
    run.guarded(rec, 0, "floor-c", run.REFUSAL_FLOOR_METRICS, _no_compiler)
    main, _, footnotes = _report.table(rec.rows)
    assert "floor (C loop)" not in main  # no figure, no row
    assert any("floor-c" in note and "no C compiler" in note for note in footnotes)


def _no_compiler() -> None:
    raise run.BenchError("no C compiler for the C floor (Debian: apt-get install gcc)")
