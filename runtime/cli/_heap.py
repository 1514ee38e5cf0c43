"""The C heap's thresholds for a server process: set once by ``mcp-runtime serve``.

glibc's malloc serves a block of at least ``M_MMAP_THRESHOLD`` bytes with its own ``mmap``,
and gives the top of the heap back to the kernel once ``M_TRIM_THRESHOLD`` bytes of it are
free. Both start small (128 KiB) and rise by a rule: when an mmapped block is freed, the mmap
threshold becomes its size and the trim threshold twice that, up to 32 and 64 MiB.

A server that answers messages of about one size is the rule's worst case (a 1 MiB
``tools/call`` over stdio). After the first such message the thresholds sit at about one and
two copies of it. A request needs more than two copies at once: the frame, the decoded
argument, the chunks it was read in. So each request grows the heap by about 3 MiB, and its
end frees more than the trim threshold at the top, which goes back to the kernel. The next
request faults all of it in again, which costs more CPU than the request itself. Whether a
process falls into that cycle depends on where small long-lived blocks happen to land, so the
same server and the same bytes differ by orders of magnitude in page faults per request from
one process to the next (``strace -e brk`` shows the 3 MiB grow and trim; figures:
``benchmarks/README.md``, "The C heap's thresholds").

Setting both thresholds at the rule's own ceiling from the start takes the lottery away: the
state glibc reaches anyway after one 32 MiB message. The price is that up to 64 MiB of freed
heap stays with the process instead of going back at once. Setting any threshold turns the
rule off for the process, so both are set together. A process whose environment sets one of
glibc's own ``MALLOC_*_`` variables, or a ``glibc.malloc`` tunable, keeps its choice. On
other C libraries this does nothing.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Final

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "settle_heap"]

log = logging.getLogger("mcp_runtime.heap")

#: glibc's ``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit systems, the ceiling of its own rule.
MMAP_THRESHOLD: Final = 32 << 20
#: Twice the mmap threshold, as the rule pairs them.
TRIM_THRESHOLD: Final = 2 * MMAP_THRESHOLD

_M_TRIM_THRESHOLD: Final = -1  # malloc.h
_M_MMAP_THRESHOLD: Final = -3
#: The environment variables by which a user sets glibc's malloc (mallopt(3)).
_USER_SETTINGS: Final = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
)


def settle_heap(environ: Mapping[str, str] | None = None) -> bool:
    """Fix glibc's mmap and trim thresholds (see the module); True when they were set."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    if any(name in env for name in _USER_SETTINGS) or "glibc.malloc" in env.get(
        "GLIBC_TUNABLES", ""
    ):
        log.debug("heap: the environment's malloc settings are kept")
        return False
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # (2-3 ms of import, paid only where it is used)

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:  # (musl's mallopt does nothing)
        return False
    if mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:  # pragma: no cover - glibc takes any
        return False
    log.debug(
        "heap: mmap threshold %d MiB, trim threshold %d MiB",
        MMAP_THRESHOLD >> 20,
        TRIM_THRESHOLD >> 20,
    )
    return True
