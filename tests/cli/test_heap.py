"""runtime.cli._heap: ``mcp-runtime serve`` fixes glibc's malloc thresholds, so that a server
answering messages of one big size does not give its heap back and fault it in again per
request (issue 22, stdio tools/call of 1 MiB)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from runtime.cli._heap import settle_heap

from ..peers import ROOT, cli

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's malloc and /proc/self/stat"
)

#: A process that, like a server answering 1 MiB tools/calls, needs three 1 MiB blocks at
#: once after glibc's rule set its thresholds from one freed 1 MiB block; it prints the minor
#: page faults per round in the steady state.
_PROBE = textwrap.dedent(
    """
    import sys
    from runtime.cli._heap import settle_heap
    if sys.argv[1] == "settle":
        assert settle_heap()
    def faults():
        with open("/proc/self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    MIB = 1 << 20
    first = bytearray(MIB)  # mmapped, then freed: the thresholds rise to about 1 and 2 MiB
    del first
    def request():
        a, b, c = bytearray(MIB - 4096), bytearray(MIB - 4096), bytearray(MIB - 4096)
        del a, b, c
    request()
    before = faults()
    for _ in range(20):
        request()
    print((faults() - before) / 20)
    """
)


def _faults_per_request(mode: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode],
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")},
        check=True,
    )
    return float(out.stdout)


def test_settled_heap_keeps_its_pages_between_big_requests() -> None:
    # glibc's own rule: each request grows the heap by 3 MiB and trims it at its end (768
    # pages). The control shows the probe measures what it should on this machine.
    assert _faults_per_request("default") > 500
    assert _faults_per_request("settle") < 5


def test_the_environments_malloc_settings_are_kept() -> None:
    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_"):
        assert settle_heap({name: "131072"}) is False
    assert settle_heap({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"}) is False


def _serve_log(env: dict[str, str]) -> str:
    # stdio at EOF: the server starts, finds no client, and ends.
    out = subprocess.run(
        cli("serve", "examples/quickstart.py", "--log-level", "debug"),
        capture_output=True,
        cwd=ROOT,
        timeout=30,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}, **env},
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    return out.stderr.decode()


def test_serve_settles_the_heap_unless_the_environment_chose() -> None:
    assert "heap: mmap threshold 32 MiB, trim threshold 64 MiB" in _serve_log({})
    chosen = _serve_log({"MALLOC_TRIM_THRESHOLD_": "131072"})
    assert "heap: the environment's malloc settings are kept" in chosen
    assert "mmap threshold" not in chosen
