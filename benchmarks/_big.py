"""Big payloads against the physical floor (issue 22, item 2), over stdio.

Each contender (ours, the SDK, fastmcp and ``servers/floor_stdio.py``, a bare loop that decodes
each request with msgspec and writes the same reply encoded per request) answers, one at a
time, ``resources/read`` of 1 and 16 MiB of text and of a 4 MiB blob (base64 on the wire), and
a ``tools/call`` whose argument is 1 MiB of text. Per payload:

- ``big_<name>_cpu_ms``: server CPU (schedstat run time of its threads) per request, after
  one warm-up request (which also builds the payload: a user's data, not the server's cost);
- ``big_<name>_rss_x``: peak RSS growth (VmHWM after, less VmRSS after the warm-up) over the
  payload's size: how many copies of the payload the server holds at once, at most;
- ``big_<name>_step_ms`` (ours only): the longest trio task step while answering, from a trio
  instrument in the benchmark server: how long one message kept the event loop from others.
"""

from __future__ import annotations

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
        Payload("read16", wire._template("resources/read", {"uri": "mem://text/16"}), 16 * MIB, 8),
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
    cpu0 = procfs.run_seconds(peer.pid)
    for i in range(requests):
        _ask(peer, payload.template, 10 + i)
    cpu = procfs.run_seconds(peer.pid) - cpu0
    got = {
        "cpu_ms": cpu / requests * 1000,
        "rss_x": max(0, procfs.status_kib(peer.pid, "VmHWM") - rss) * 1024 / payload.size,
    }
    if contender == OURS:
        got["step_ms"] = _longest_step(peer, 3)
    return got
