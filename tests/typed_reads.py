"""Recording who reads what on the one-pass path of a big ``tools/call`` (issue 22): the
typed pass's callers (``TypedCalls.read``) and a module's decoder's inputs, for the tests
that check a big call's bytes are read once."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from runtime._handlers import TypedCalls


def record_typed_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bytes]]:
    """(caller's function name, the bytes read) for each call of ``TypedCalls.read`` in the
    handlers module the server runs, from now until the test ends."""
    typed_calls = TypedCalls
    reads: list[tuple[str, bytes]] = []
    real = typed_calls.read

    def recorded(self: Any, raw: Any) -> Any:
        reads.append((sys._getframe(1).f_code.co_name, bytes(raw)))
        return real(self, raw)

    monkeypatch.setattr(typed_calls, "read", recorded)
    return reads


def record_sizes(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """The length of the one argument of each call of ``module.name`` (a decoder), from now
    until the test ends."""
    sizes: list[int] = []
    real = getattr(module, name)

    def recorded(data: Any) -> Any:
        sizes.append(len(data))
        return real(data)

    monkeypatch.setattr(module, name, recorded)
    return sizes
