"""examples/filesystem.py: every path is resolved inside the client's roots."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from filesystem import app

from runtime.testing import open_client


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    (shared / "src").mkdir(parents=True)
    (shared / "src" / "main.py").write_text("print('hi')\n")
    (shared / "README.md").write_text("# project\n")
    (tmp_path / "secret.txt").write_text("password")
    (shared / "escape").symlink_to(tmp_path / "secret.txt")
    return tmp_path


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_reads_inside_roots_and_refuses_outside(tree: Path, version: str) -> None:
    shared = tree / "shared"
    with trio.fail_after(10):
        async with open_client(app, protocol_version=version, roots=[shared.as_uri()]) as client:
            listing = await client.call_tool("list_directory", {"path": "."})
            readme = await client.call_tool("read_file", {"path": "README.md"})
            found = await client.call_tool("search", {"pattern": "*.py"})
            outside = await client.call_tool("read_file", {"path": str(tree / "secret.txt")})
            dotdot = await client.call_tool("read_file", {"path": "../secret.txt"})
            symlink = await client.call_tool("read_file", {"path": "escape"})
    assert listing.structured == {
        "result": [
            {"name": "README.md", "kind": "file", "size": 10},
            {"name": "escape", "kind": "file", "size": 8},
            {"name": "src", "kind": "directory", "size": 0},
        ]
    }
    assert readme.text == "# project\n"
    # list[str] is content (one text block per hit), not structured data.
    assert [block["text"] for block in found.content] == [str(shared / "src" / "main.py")]
    for refused in (outside, dotdot, symlink):
        assert refused.is_error and "outside the shared directories" in refused.text
    assert "password" not in symlink.text


async def test_no_roots_means_nothing_is_readable(tree: Path) -> None:
    with trio.fail_after(10):
        async with open_client(app, roots=[]) as client:
            result = await client.call_tool("read_file", {"path": "README.md"})
    assert result.is_error and "shared no directories" in result.text


async def test_roots_can_change_between_calls(tree: Path) -> None:
    roots = [(tree / "shared").as_uri()]

    async def current_roots() -> list[dict[str, str]]:
        return [{"uri": uri} for uri in roots]

    with trio.fail_after(10):
        async with open_client(app, roots=current_roots) as client:
            before = await client.call_tool("read_file", {"path": str(tree / "secret.txt")})
            roots.append(tree.as_uri())
            await client.roots_changed()
            after = await client.call_tool("read_file", {"path": str(tree / "secret.txt")})
    assert before.is_error
    assert after.text == "password"
