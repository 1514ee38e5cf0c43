"""The fan-out floor (benchmarks/servers/floor_fanout.py) puts on the wire the very bytes that
``mcp-runtime serve`` does for the listen fan-out row, so the row compares like with like."""

from __future__ import annotations

import os
import socket
import time

from benchmarks import _fanout
from benchmarks import _wire as wire

MARK = b"notifications/resources/updated"


def _read_until(s: socket.socket, marker: bytes, deadline: float) -> bytes:
    got = b""
    s.settimeout(5)
    while marker not in got:
        assert time.monotonic() < deadline, got
        data = s.recv(65536)
        assert data, got
        got += data
    return got


def _listens_then_touch(contender: str, ids: list[int]) -> list[tuple[bytes, bytes]]:
    """Per listen: (what came before the touch, what came after it)."""
    port = wire.free_port()
    deadline = time.monotonic() + 60
    with open(os.devnull, "wb") as log:
        proc = _fanout._serve(contender, port, len(ids), log)
        socks: list[socket.socket] = []
        try:
            wire.wait_for_port(port, 60, lambda: proc.poll() is None)
            for rid in ids:
                socks.append(_fanout._open_stream(port, _fanout._listen_request(port, rid, True)))
            # (the acknowledged event is the first chunk: it ends the first "\n\n\r\n")
            before = [_read_until(s, b"\n\n\r\n", deadline) for s in socks]
            _fanout._touch(port)
            after = [_read_until(s, b"\n\n\r\n", deadline) for s in socks]
            assert all(MARK in a for a in after)
            return list(zip(before, after, strict=True))
        finally:
            for s in socks:
                s.close()
            wire.stop(proc, 10)


def test_floor_writes_the_bytes_ours_writes() -> None:
    ids = [10, 12345]  # (ids of different lengths: the chunk sizes differ)
    ours = _listens_then_touch("mcp-runtime", ids)
    floor = _listens_then_touch(_fanout.FLOOR, ids)
    assert len(floor) == len(ours) == 2
    for (ours_before, ours_after), (floor_before, floor_after) in zip(ours, floor, strict=True):
        assert floor_before == ours_before
        assert floor_after == ours_after
    assert b'"io.modelcontextprotocol/subscriptionId":12345}' in floor[1][1]


def test_floor_row_reaches_every_subscriber() -> None:
    with open(os.devnull, "wb") as log:
        row = _fanout.measure("listen", 50, 50, log, _fanout.FLOOR)
    assert row["fanout_ms"] > 0
    assert row["fanout_cpu_ms"] > 0
