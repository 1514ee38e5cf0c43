"""benchmarks/refusal.py: bytecodes of one-at-a-time refusals of a real, traced stdio server."""

from __future__ import annotations

from benchmarks import refusal


def test_bytecodes_per_refusal_of_a_real_server() -> None:
    # measure() itself checks each probe was answered -32010 with its own id.
    value, ranked = refusal.measure(top=50, warm=5, counted=20)
    names = [name for name, _ in ranked]
    # A refusal is a whole wake-up: the reader's read and the table's refusal are in it, and
    # no tool ran (the echo probe was refused before dispatch).
    assert any(name.endswith(":Reader._refusal") for name in names)
    assert any(name.endswith(":RequestTable.refusal") for name in names)
    assert not any(".echo" in name.rsplit(":", 1)[1] for name in names)
    assert 300 < value < 20_000


def test_cpu_per_refusal_back_to_back_and_from_idle() -> None:
    # Every probe is checked refused (-32010, its own id); the CPU is the server's own
    # (schedstat), so it is above zero and far below a millisecond of a whole round trip.
    for pause in (0, 0.002):
        per, note = refusal.cpu_per_refusal(pause, rounds=3, counted=20)
        assert 1e-6 < per < 5e-3, (pause, per, note)
        assert note.startswith("median of 3 rounds of 20 refusals")
        assert ("back to back" in note) == (pause == 0)
