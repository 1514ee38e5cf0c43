"""benchmarks/refusal.py: bytecodes of one-at-a-time refusals of a real, traced stdio server."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

from benchmarks import _wire as wire
from benchmarks import refusal
from benchmarks.guard import ROOT


def test_bytecodes_per_refusal_of_a_real_server() -> None:
    # measure() itself checks each probe was answered -32010 with its own id.
    value, ranked = refusal.measure(top=50, warm=5, counted=20)
    names = [name for name, _ in ranked]
    # A refusal is a whole wake-up: the reader's read, its assembly and the table's refusal
    # are in it, and no tool ran (the echo probe was refused before dispatch).
    assert any(name.endswith(":Reader._on_frame") for name in names)
    assert any(name.endswith(":Assembler.assemble") for name in names)
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


def _reply_to_probe(peer: wire.StdioPeer, rid: int) -> dict[str, object]:
    line = peer.request(wire.echo_template() % rid, timeout=30)
    decoded: dict[str, object] = json.loads(line)
    return decoded


@pytest.mark.parametrize("floor", ["bare", "trio", "c"])
def test_floor_refuses_the_probe_exactly_as_this_runtime_does(
    floor: str, tmp_path: pathlib.Path
) -> None:
    # The same probe bytes to this runtime (its one slot held) and to the floor: the floor's
    # reply is this runtime's refusal, field for field, with the probe's own id.
    ours = wire.StdioPeer(refusal._serve(sys.executable, "-m", "runtime"), cwd=str(ROOT))
    try:
        ours.handshake(timeout=30)
        ours.write(wire.call_template("sleep", {"ms": 600_000}) % 1 + b"\n")
        expected = _reply_to_probe(ours, 4242)
    finally:
        ours.close()
    assert expected["error"]["code"] == -32010  # type: ignore[index]
    peer = wire.StdioPeer(refusal._floor_argv(floor, str(tmp_path)), cwd=str(ROOT))
    try:
        peer.handshake(timeout=30)  # initialize answered with a result, not refused
        assert _reply_to_probe(peer, 4242) == expected
        assert _reply_to_probe(peer, 7) == {**expected, "id": 7}
        peer.write(b"\n")  # a blank line is skipped; the floor lives on
        assert _reply_to_probe(peer, 8) == {**expected, "id": 8}
    finally:
        peer.close()
    assert peer.proc.returncode == 0  # stdin's EOF ends the loop cleanly


@pytest.mark.parametrize("server", ["bare", "c"])
def test_floor_cost_per_refusal_each_from_idle(server: str) -> None:
    # cost_per_refusal checks every probe was refused (-32010, its own id). Paced, the floor
    # sleeps before each probe: about one voluntary context switch per refusal, net of idle.
    cost = refusal.cost_per_refusal(0.002, server, rounds=3, counted=20)
    assert 1e-7 < cost.cpu < 5e-3, cost
    assert 0.8 < cost.vcsw < 3, cost
    assert cost.slices >= 0.8, cost
    assert cost.note.startswith("median of 3 rounds of 20 refusals paced 2 ms")


def test_trio_floor_cost_per_refusal_back_to_back() -> None:
    cost = refusal.cost_per_refusal(0, "trio", rounds=3, counted=20)
    assert 1e-7 < cost.cpu < 5e-3, cost
    assert "back to back" in cost.note


def test_instructions_per_refusal_of_the_c_floor_both_ways() -> None:
    # Callgrind, the difference of two runs: the C floor blocks in read(2) before a probe
    # whichever the pacing, so its count is the same both ways, and small (no interpreter).
    back_to_back, _ = refusal.instructions("c", 0, few=10, more=60)
    paced, sleeps = refusal.instructions("c", 0.002, few=10, more=60)
    assert 200 < back_to_back < 20_000
    assert abs(paced - back_to_back) < 0.05 * back_to_back
    assert 0.8 < sleeps < 1.5  # paced: one sleep per refusal
