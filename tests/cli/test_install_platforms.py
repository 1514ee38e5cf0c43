"""``mcp-runtime install``'s config files on macOS, Windows and Linux, and the rule that an
install never overwrites another entry (nor the file's other keys), on each.

The platform, home folder, environment and workspace the code reads are parameters of
``config_path``; the files are real, written into a temporary folder standing in for that
machine's home. The last test runs the real CLI with ``HOME`` pointing there."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.cli._install import config_path, entry_for, install

from ..peers import ROOT, cli

QUICKSTART = ROOT / "examples" / "quickstart.py"

# Where each client keeps its servers, from its documentation (relative to the home folder,
# or to the workspace for VS Code), and the key holding them.
EXPECTED: dict[tuple[str, str], tuple[str, ...]] = {
    ("darwin", "claude-desktop"): (
        "Library", "Application Support", "Claude", "claude_desktop_config.json",
    ),
    ("win32", "claude-desktop"): ("AppData", "Roaming", "Claude", "claude_desktop_config.json"),
    ("linux", "claude-desktop"): (".config", "Claude", "claude_desktop_config.json"),
    ("darwin", "cursor"): (".cursor", "mcp.json"),
    ("win32", "cursor"): (".cursor", "mcp.json"),
    ("linux", "cursor"): (".cursor", "mcp.json"),
    ("darwin", "vscode"): (".vscode", "mcp.json"),
    ("win32", "vscode"): (".vscode", "mcp.json"),
    ("linux", "vscode"): (".vscode", "mcp.json"),
}  # fmt: skip


def _machine(tmp_path: Path, platform: str) -> dict[str, Any]:
    home = tmp_path / "home"
    environ = {"APPDATA": str(home / "AppData" / "Roaming")} if platform == "win32" else {}
    return {"platform": platform, "home": home, "environ": environ, "cwd": tmp_path / "work"}


@pytest.mark.parametrize(("platform", "client"), sorted(EXPECTED))
def test_config_path_and_never_overwriting(tmp_path: Path, platform: str, client: str) -> None:
    machine = _machine(tmp_path, platform)
    path = config_path(client, **machine)
    base = machine["cwd"] if client == "vscode" else machine["home"]
    assert path == base.joinpath(*EXPECTED[platform, client])
    key = "servers" if client == "vscode" else "mcpServers"

    # A file the user already has: other servers and other keys.
    path.parent.mkdir(parents=True)
    theirs = {"command": "node", "args": ["their-server.js"], "env": {"K": "v"}}
    original = {key: {"theirs": theirs}, "globalShortcut": "Ctrl+Space", "nested": {"a": [1]}}
    path.write_text(json.dumps(original, indent=4), encoding="utf-8")

    entry = entry_for(client, str(QUICKSTART))
    written, _ = install(client, "quickstart", entry, config=path)
    assert written == path
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document[key] == {"theirs": theirs, "quickstart": entry}
    assert {k: v for k, v in document.items() if k != key} == {
        "globalShortcut": "Ctrl+Space",
        "nested": {"a": [1]},
    }

    # The same name with another entry: refused, and the file is left byte for byte.
    before = path.read_bytes()
    other = entry_for(client, str(QUICKSTART), env={"A": "1"})
    with pytest.raises(ValueError, match="already has a server named 'quickstart'"):
        install(client, "quickstart", other, config=path)
    assert path.read_bytes() == before
    # A dry run shows the replacement and writes nothing.
    written, text = install(client, "quickstart", other, config=path, dry_run=True, force=True)
    assert written is None and json.loads(text)[key]["quickstart"] == other
    assert path.read_bytes() == before
    # --force replaces that one entry; the other server and keys stay.
    install(client, "quickstart", other, config=path, force=True)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document[key] == {"theirs": theirs, "quickstart": other}
    assert document["globalShortcut"] == "Ctrl+Space"
    # Another name beside them: added, nothing replaced.
    install(client, "second", entry, config=path)
    assert set(json.loads(path.read_text(encoding="utf-8"))[key]) == {
        "theirs",
        "quickstart",
        "second",
    }
    assert sorted(os.listdir(path.parent)) == [path.name]  # no scratch file left


@pytest.mark.parametrize("platform", ["darwin", "win32", "linux"])
def test_a_missing_config_is_created_with_its_folders(tmp_path: Path, platform: str) -> None:
    path = config_path("claude-desktop", **_machine(tmp_path, platform))
    assert not path.parent.exists()
    install("claude-desktop", "quickstart", entry_for("claude-desktop", str(QUICKSTART)),
            config=path)  # fmt: skip
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "mcpServers": {"quickstart": entry_for("claude-desktop", str(QUICKSTART))}
    }


def test_windows_without_appdata_uses_the_roaming_profile(tmp_path: Path) -> None:
    home = tmp_path / "Users" / "me"
    path = config_path("claude-desktop", platform="win32", home=home, environ={})
    assert path == home / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json"
    elsewhere = tmp_path / "D" / "Roaming"
    moved = config_path(
        "claude-desktop", platform="win32", home=home, environ={"APPDATA": str(elsewhere)}
    )
    assert moved == elsewhere / "Claude" / "claude_desktop_config.json"


@pytest.mark.parametrize(
    ("platform", "text", "reason"),
    [
        ("darwin", "{not json", "is not valid JSON"),
        ("win32", "[1, 2]", "does not hold a JSON object"),
        ("linux", '{"mcpServers": []}', "'mcpServers' is not an object"),
    ],
)
def test_a_file_it_cannot_read_is_left_alone(
    tmp_path: Path, platform: str, text: str, reason: str
) -> None:
    path = config_path("claude-desktop", **_machine(tmp_path, platform))
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=reason):
        install("claude-desktop", "q", entry_for("claude-desktop", str(QUICKSTART)), config=path)
    assert path.read_text(encoding="utf-8") == text


async def test_the_cli_writes_the_default_file_under_home(tmp_path: Path) -> None:
    """The real command without --config: it finds this platform's file under HOME (and
    APPDATA on Windows), keeping what is there."""
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "USERPROFILE": str(home)}
    env["APPDATA"] = str(home / "AppData" / "Roaming")
    expected = config_path("cursor", home=home, environ=env)
    expected.parent.mkdir(parents=True)
    expected.write_text(json.dumps({"mcpServers": {"theirs": {"url": "https://x/mcp"}}}))
    with trio.fail_after(60):
        done = await trio.run_process(
            cli("install", str(QUICKSTART), "--client", "cursor"),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=tmp_path,
            env=env,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert f"added 'quickstart' to {expected}" in done.stderr.decode()
    servers = json.loads(expected.read_text())["mcpServers"]
    assert servers["theirs"] == {"url": "https://x/mcp"}
    assert servers["quickstart"]["command"] == sys.executable
