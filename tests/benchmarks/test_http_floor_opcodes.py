"""``python -m benchmarks.http_floor --opcodes --session``: a real server, traced
(``benchmarks/_opcount.py``), answering the load client's ``tools/call`` POSTs to open
handshake-era sessions, its bytecodes printed per request by module and by function."""

from __future__ import annotations

import re

import pytest

from benchmarks import http_floor


def test_session_opcodes_count_the_session_post_path_by_function(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 100 requests after the 200 that warm the memos: some seconds traced (the load client
    # gives up after its time caps, and the server is killed whatever happens).
    http_floor._opcodes(requests=100, top=80, session=True)
    out = capsys.readouterr().out
    total = re.search(r"^([\d,]+) Python bytecodes per request$", out, re.MULTILINE)
    assert total is not None, out
    assert int(total.group(1).replace(",", "")) > 0
    # By function: the session POST's own path ran (a request run in its POST's task, as the
    # session connection's own), and the modern POST's direct path did not.
    rows = {
        match.group(2): float(match.group(1))
        for match in re.finditer(r"^\s+([\d.]+)  (\S+) \(", out, re.MULTILINE)
    }
    for name in (
        "HandshakeEra.find",
        "HandshakeEra.post_session",
        "DirectRequests.run",
        "Connection.run_request",
        "methods.<locals>.call_tool",
    ):
        assert rows.get(name, 0) > 0, (name, out)
    assert "StreamableEndpoint._dispatch_direct" not in rows, out
    # By module: the session transport's own module is among them.
    assert re.search(r"^\s+\d+  runtime/transports/http/_handshake\.py$", out, re.MULTILINE), out
