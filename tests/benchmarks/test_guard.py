"""The regression guard's verdicts and message (benchmarks/guard.py), and that its bytecode
measure counts a real server's work (one real, traced stdio server)."""

from __future__ import annotations

from typing import Any

from benchmarks import guard
from benchmarks.guard import BYTECODES, INSTRUCTIONS, Measured

ENV = {"python": "3.11.7", "trio": "0.35.0", "msgspec": "0.23.0"}


def _baselines(**paths: tuple[float, str]) -> dict[str, Any]:
    return {
        "tolerance": 0.10,
        "environment": ENV,
        "paths": {
            name: {"unit": unit, "value": value, "shares": {"runtime": value / 2}}
            for name, (value, unit) in paths.items()
        },
    }


def _verdicts(found: list[guard.Finding]) -> dict[str, str]:
    return {f.path: f.verdict for f in found}


def test_within_tolerance_passes_both_ways() -> None:
    base = _baselines(a=(1000, BYTECODES), b=(1000, BYTECODES))
    measured = {"a": Measured(1100, BYTECODES, {}), "b": Measured(900, BYTECODES, {})}
    found = guard.compare(base, measured)
    assert _verdicts(found) == {"a": "ok", "b": "ok"}
    assert not guard.failed(found)


def test_growth_past_tolerance_fails_and_says_how_to_update() -> None:
    base = _baselines(a=(1000, BYTECODES), b=(5_000_000, INSTRUCTIONS))
    measured = {
        "a": Measured(1101, BYTECODES, {"runtime": 600}),
        "b": Measured(5_000_000, INSTRUCTIONS, {}),
    }
    found = guard.compare(base, measured)
    assert _verdicts(found) == {"a": "regressed", "b": "ok"}
    assert guard.failed(found)
    text = guard.report(found, base, measured, ENV)
    assert "REGRESSED  a: 1,101 bytecodes per request, baseline 1,000 (+10.1%)" in text
    assert "runtime: 500 -> 600" in text  # where the growth lives
    assert "python -m benchmarks.guard --update" in text
    assert "git commit benchmarks/baselines.json" in text


def test_improvement_passes_and_suggests_locking_it_in() -> None:
    base = _baselines(a=(1000, BYTECODES))
    found = guard.compare(base, {"a": Measured(850, BYTECODES, {})})
    assert _verdicts(found) == {"a": "improved"}
    assert not guard.failed(found)
    assert "lock the gain in" in guard.report(found, base, {"a": Measured(850, BYTECODES, {})}, ENV)


def test_a_path_without_baseline_or_without_measure_fails() -> None:
    base = _baselines(gone=(1000, BYTECODES))
    measured = {"fresh": Measured(10, BYTECODES, {})}
    found = guard.compare(base, measured)
    assert _verdicts(found) == {"gone": "missing", "fresh": "new"}
    assert guard.failed(found)
    text = guard.report(found, base, measured, ENV)
    assert "MISSING    gone" in text and "NEW        fresh" in text


def test_a_changed_unit_is_a_new_baseline_not_a_comparison() -> None:
    base = _baselines(a=(1000, BYTECODES))
    found = guard.compare(base, {"a": Measured(5_000_000, INSTRUCTIONS, {})})
    assert _verdicts(found) == {"a": "new"}


def test_the_message_names_a_changed_environment() -> None:
    base = _baselines(a=(1000, BYTECODES))
    measured = {"a": Measured(2000, BYTECODES, {})}
    text = guard.report(guard.compare(base, measured), base, measured, {**ENV, "trio": "0.36.0"})
    assert "trio 0.35.0 (now 0.36.0)" in text
    assert "python" not in text.split("Note:")[1]


def test_the_tolerance_is_the_documents() -> None:
    base = _baselines(a=(1000, BYTECODES))
    measured = {"a": Measured(1150, BYTECODES, {})}
    assert _verdicts(guard.compare(base, measured, 0.20)) == {"a": "ok"}
    assert _verdicts(guard.compare(base, measured, 0.10)) == {"a": "regressed"}


def test_the_committed_baselines_cover_every_path() -> None:
    import json

    doc = json.loads(guard.BASELINES.read_text())
    every = {*guard.PATHS, *guard.BIG_PATHS}
    # (The extra paths join once recorded: ``--update`` measures them.)
    assert every <= set(doc["paths"]) <= every | set(guard.EXTRA_PATHS)
    assert doc["tolerance"] == guard.TOLERANCE
    for entry in doc["paths"].values():
        assert entry["unit"] in (BYTECODES, INSTRUCTIONS) and entry["value"] > 0


def test_baselines_document_round_trips_through_compare() -> None:
    measured = {"a": Measured(1234.56, BYTECODES, {"trio": 300.04, "runtime": 934.52})}
    doc = guard.baselines_document(measured, ENV)
    assert doc["paths"]["a"] == {
        "unit": BYTECODES,
        "value": 1234.6,
        "shares": {"runtime": 934.5, "trio": 300.0},
    }
    assert _verdicts(guard.compare(doc, measured)) == {"a": "ok"}


def test_bytecodes_of_a_real_stdio_call() -> None:
    """The measure itself, on a real traced server: a tools/call costs thousands of bytecodes,
    most of them in our packages and trio, and the same figure twice within a percent."""
    first = guard.stdio_tools_call()
    assert first.unit == BYTECODES
    assert 500 < first.value < 50_000
    assert first.shares["runtime"] + first.shares.get("handlers", 0) > 0.2 * first.value
    assert first.shares["trio"] > 0
    assert abs(sum(first.shares.values()) - first.value) < 1
    second = guard.stdio_tools_call()
    assert abs(second.value / first.value - 1) < 0.02
