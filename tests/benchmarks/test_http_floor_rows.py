"""benchmarks/run.py's HTTP ceiling and floors (the fixed-reply responder, trio alone, our
HTTP layer with a fixed answer) measured by the suite's own load client, and shown in the
table as a share of the ceiling (issue 22, target 1: where an HTTP call's time goes)."""

from __future__ import annotations

import dataclasses

from benchmarks import _report, run


def test_the_http_floors_are_measured_and_shown_against_the_ceiling() -> None:
    settings = dataclasses.replace(run.Settings.make(quick=True), time_cap=0.3)
    rec = run.Recorder("test", "quick")
    run.measure_client_ceiling(rec, settings, 0)  # real servers, the real load client
    got = {row["metric"]: row["value"] for row in rec.rows if row["contender"] == "client"}
    assert set(got) == {"ceiling_stdio64", *(metric for metric, _, _ in run.HTTP_FLOORS)}
    assert all(value > 100 for value in got.values()), got  # each answered its load
    main, _, _ = _report.table(rec.rows)
    for metric, label in (
        ("floor_http16_trio", "HTTP floor: trio alone answering fixed bytes, 16 clients"),
        ("floor_http16_layer", "HTTP floor: our HTTP layer, fixed answer, 16 clients"),
    ):
        line = next(line for line in main.splitlines() if line.startswith(f"| {label} |"))
        share = _report._ratio(got[metric], got["ceiling_http16"])
        assert f"| {share} ceiling |" in line, line
        assert _report._fmt(got[metric]) in line
