"""How ``serve``/``dev`` load a TARGET file: from its source, every time."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from runtime.cli._loading import load_target

SERVER = """from runtime import Server
app = Server("{name}")
"""


def test_an_edit_of_the_same_size_in_the_same_second_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dev loop reloads at once: an edit that keeps the file's size and its mtime's whole
    second must still be what runs (a cached .pyc with the old code matches both)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = tmp_path / "server.py"
    path.write_text(SERVER.format(name="one"))
    stamp = (1_700_000_000, 1_700_000_000)
    os.utime(path, stamp)
    assert load_target(str(path)).name == "one"
    path.write_text(SERVER.format(name="two"))
    os.utime(path, stamp)
    assert load_target(str(path)).name == "two"


def test_the_file_s_own_future_imports_apply_not_the_loader_s(tmp_path: Path) -> None:
    path = tmp_path / "server.py"
    path.write_text(
        SERVER.format(name="s")
        + "def f(x: int) -> int:\n    return x\n"
        + "ANNOTATION = f.__annotations__['x']\n"
    )
    load_target(str(path))
    module = sys.modules["_mcp_runtime_target_server"]
    assert module.ANNOTATION is int  # evaluated: no `from __future__ import annotations` here
