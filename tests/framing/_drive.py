"""Drive a framer the way a transport does, recording every outcome for comparison."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from hypothesis import strategies as st

from runtime.framing import FramingError, SSEEvent


@dataclass(frozen=True)
class Err:
    """A FramingError reduced to comparable fields."""

    reason: str
    fatal: bool
    offset: int
    excerpt: bytes

    @classmethod
    def of(cls, error: FramingError) -> Err:
        return cls(error.reason, error.fatal, error.offset, error.excerpt)


Outcome = bytes | SSEEvent | Err


class _Source(Protocol):
    def feed(self, data: bytes) -> None: ...

    def next_frame(self) -> object: ...

    @property
    def finished(self) -> bool: ...

    @property
    def buffered(self) -> int: ...


def drain(framer: _Source, *, steps: int = 100_000) -> list[Outcome]:
    """Call next_frame() until None or a fatal error; a bounded loop, so a bug cannot hang."""
    out: list[Outcome] = []
    for _ in range(steps):
        try:
            item = framer.next_frame()
        except FramingError as error:
            out.append(Err.of(error))
            if error.fatal:
                # Sticky: the very same error again, whatever happens next.
                try:
                    framer.next_frame()
                except FramingError as again:
                    assert again is error
                else:  # pragma: no cover
                    raise AssertionError("fatal error was not sticky") from None
                return out
            continue
        if item is None:
            return out
        assert isinstance(item, bytes | SSEEvent)
        out.append(item)
    raise AssertionError("next_frame() never returned None")  # pragma: no cover


def run(
    framer: _Source,
    chunks: Iterable[bytes],
    *,
    eof: bool = True,
    lazy: Iterable[bool] = (),
) -> list[Outcome]:
    """Feed each non-empty chunk (then EOF), draining after every feed; stop at the first
    fatal error. ``lazy[i]`` true skips the drain after chunk i (several feeds in a row)."""
    out: list[Outcome] = []
    pieces = [*(c for c in chunks if c), *([b""] if eof else [])]
    skips = [*lazy][: len(pieces) - 1]
    for chunk, skip in itertools.zip_longest(pieces, skips, fillvalue=False):
        framer.feed(chunk)
        if skip:
            continue
        out += drain(framer)
        assert framer.buffered >= 0
        if out and isinstance(out[-1], Err) and out[-1].fatal:
            break
    if framer.finished:
        assert framer.buffered == 0
    return out


def split(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """Cut ``data`` at the given offsets (empty pieces dropped: b"" would mean EOF)."""
    points = sorted({0, len(data), *(c for c in cuts if 0 <= c <= len(data))})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


@st.composite
def chunkings(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """Any way of cutting ``data`` into non-empty chunks."""
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=max(1, len(data) // 2)))
    return split(data, cuts)
