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
