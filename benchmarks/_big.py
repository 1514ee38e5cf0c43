"""Big payloads against the physical floor, over stdio.

Each contender (ours, the SDK, fastmcp and ``servers/floor_stdio.py``, a bare loop that decodes
each request with msgspec and writes the same reply encoded per request) answers, one at a
time, ``resources/read`` of 1 and 16 MiB of text and of a 4 MiB blob (base64 on the wire), and
a ``tools/call`` whose argument is 1 MiB of text. The floors run with the glibc malloc
thresholds that ``mcp-runtime serve`` sets in itself (``run.floor_env``, ``runtime/cli/_heap.py``):
with glibc's default rule, the same process can take 0.05 or 720 page faults per request, and
the floor would then be measured against the allocator's luck rather than against ours. Per
payload:

- ``big_<name>_cpu_ms``: server CPU (schedstat run time of its threads) per request, after
  one warm-up request (which also builds the payload: a user's data, not the server's cost):
  the median of the requests' own figures (the run time between one reply and the next), so
  that a stall of this shared machine lands on one request and not on the whole figure (a
  summed figure moved 1.8x between repeats of the same code);
- ``big_<name>_rss_x``: peak RSS growth (VmHWM after, less VmRSS after the warm-up) over the
  payload's size: how many copies of the payload the server holds at once, at most;
- ``big_<name>_step_ms`` (ours only): the longest trio task step while answering, from a trio
  instrument in the benchmark server: how long one message kept the event loop from others.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from . import _procfs as procfs
from . import _wire as wire

MIB = 1 << 20
FLOOR = "floor"


@dataclass(frozen=True)
class Payload:
    name: str
    template: bytes
    size: int  # bytes of payload
    share: int  # requests per measurement = s.big_reads // share (at least 3)


def payloads() -> list[Payload]:
    data = ("0123456789abcdef" * (MIB // 16)).replace("%", "%%")
    return [
        Payload("read1", wire._template("resources/read", {"uri": "mem://text/1"}), MIB, 1),
        Payload("read16", wire._template("resources/read", {"uri": "mem://text/16"}), 16 * MIB, 4),
        Payload("blob4", wire._template("resources/read", {"uri": "mem://bytes/4"}), 4 * MIB, 3),
        Payload("call1", wire.call_template("size", {"data": data}), MIB, 1),
    ]


def metrics(payload: Payload) -> list[str]:
    return [f"big_{payload.name}_{what}" for what in ("cpu_ms", "rss_x", "step_ms")]


def _ask(peer: wire.StdioPeer, template: bytes, rid: int, timeout: float = 120.0) -> bytes:
    reply = peer.request(template % rid, timeout)
    if wire.is_error(reply[:300]) or b'"result"' not in reply[:300]:
        raise wire.BenchError(f"answered {reply[:200]!r}")
    return reply


def cpu_ms_per_request(pid: int, ask: Callable[[int], object], requests: int) -> float:
    """The median of ``requests`` requests' server CPU in ms: ``ask(i)`` sends the i-th and
    returns once its whole reply is in; each figure is the run time from the previous reply
    to this one (so work a server does after a reply is counted in the next request's)."""
    costs = []
    before = procfs.run_seconds(pid)
    for i in range(requests):
        ask(i)
        after = procfs.run_seconds(pid)
        costs.append(after - before)
        before = after
    return statistics.median(costs) * 1000


def _longest_step(peer: wire.StdioPeer, rid: int) -> float:
    reply = _ask(peer, wire.call_template("longest_step_ms", {}), rid)
    return float(wire._decode(reply)["result"]["structuredContent"]["result"])


def measure(
    peer: wire.StdioPeer, contender: str, payload: Payload, requests: int
) -> dict[str, float]:
    """CPU per request, peak RSS growth over the payload, longest step (ours): see the module."""
    from .run import OURS

    peer.handshake()
    reply = _ask(peer, payload.template, 1)  # warm-up; builds the payload
    if len(reply) < payload.size // 2 and payload.name.startswith(("read", "blob")):
        raise wire.BenchError(f"a {payload.size} byte read answered {len(reply)} bytes")
    if payload.name == "call1" and str(payload.size).encode() not in reply:
        raise wire.BenchError(f"size() answered {reply[:200]!r}")
    if contender == OURS:
        _longest_step(peer, 2)
    rss = procfs.status_kib(peer.pid, "VmRSS")
    got = {
        "cpu_ms": cpu_ms_per_request(
            peer.pid, lambda i: _ask(peer, payload.template, 10 + i), requests
        ),
        "rss_x": max(0, procfs.status_kib(peer.pid, "VmHWM") - rss) * 1024 / payload.size,
    }
    if contender == OURS:
        got["step_ms"] = _longest_step(peer, 3)
    return got


# -- HTTP ------------------------------------------------------------------------------------


def http_templates() -> dict[str, tuple[bytes, str, str]]:
    """Per payload: the modern (2026-07-28) request template, its Mcp-Method and Mcp-Name."""
    data = ("0123456789abcdef" * (MIB // 16)).replace("%", "%%")
    meta = {"_meta": wire.MODERN_META}
    out = {}
    for name, uri in (("read1", "mem://text/1"), ("read16", "mem://text/16")):
        out[name] = (wire._template("resources/read", {"uri": uri, **meta}), "resources/read", uri)
    out["blob4"] = (
        wire._template("resources/read", {"uri": "mem://bytes/4", **meta}),
        "resources/read",
        "mem://bytes/4",
    )
    call = wire._template("tools/call", {"name": "size", "arguments": {"data": data}, **meta})
    out["call1"] = (call, "tools/call", "size")
    return out


def http_metrics(payload: Payload) -> list[str]:
    return [f"http_big_{payload.name}_{what}" for what in ("cpu_ms", "step_ms")]


def measure_http(
    port: int, pid: int, contender: str, payload: Payload, requests: int
) -> dict[str, float]:
    """Server CPU per request (and our longest task step) for one keep-alive client sending
    ``payload`` as modern POSTs one at a time."""
    from .run import OURS

    template, method, name = http_templates()[payload.name]
    client = wire.HttpClient(port, "/mcp", "modern", timeout=120)

    def ask(rid: int, body: bytes, m: str, n: str) -> bytes:
        status, _, reply = client.exchange(body % rid, {"Mcp-Method": m, "Mcp-Name": n})
        if status != 200 or b'"result"' not in reply[:300]:
            raise wire.BenchError(f"HTTP {status}: {reply[:200]!r}")
        return reply

    def longest(rid: int) -> float:
        body = wire._template(
            "tools/call", {"name": "longest_step_ms", "arguments": {}, "_meta": wire.MODERN_META}
        )
        reply = ask(rid, body, "tools/call", "longest_step_ms")
        return float(wire._decode(reply)["result"]["structuredContent"]["result"])

    try:
        ask(1, template, method, name)  # warm-up; builds the payload
        if contender == OURS:
            longest(2)
        got = {
            "cpu_ms": cpu_ms_per_request(
                pid, lambda i: ask(10 + i, template, method, name), requests
            )
        }
        if contender == OURS:
            got["step_ms"] = longest(3)
        return got
    finally:
        client.close()
