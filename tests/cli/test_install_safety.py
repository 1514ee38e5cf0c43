"""``mcp-runtime install`` writing a file that holds API keys, in directories others may
write to: its mode and owner are kept, a link planted where a temporary file might go is
never followed, a symlinked config is written through, concurrent installs lose nothing,
and bad input is one line on stderr. Real CLI processes on real files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import trio

from ..peers import ROOT, cli

QUICKSTART = ROOT / "examples" / "quickstart.py"


async def mcp_runtime(*args: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    with trio.fail_after(60):
        done = await trio.run_process(
            cli(*args),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=cwd,
            umask=0o022,  # the usual one: a file created with default modes would be 0644
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def install_args(config: Path, *extra: str) -> tuple[str, ...]:
    return ("install", str(QUICKSTART), "--client", "cursor", "--config", str(config), *extra)


def servers(config: Path) -> dict[str, object]:
    found: dict[str, object] = json.loads(config.read_text())["mcpServers"]
    return found


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604])
async def test_an_existing_file_keeps_its_mode(tmp_path: Path, mode: int) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"theirs": {"env": {"API_KEY": "secret"}}}}))
    config.chmod(mode)
    code, _, err = await mcp_runtime(*install_args(config, "--env", "TOKEN=abc"))
    assert code == 0, err
    assert stat.S_IMODE(config.stat().st_mode) == mode
    assert set(servers(config)) == {"theirs", "quickstart"}


async def test_a_new_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    config = tmp_path / "new" / "mcp.json"
    code, _, err = await mcp_runtime(*install_args(config, "--env", "TOKEN=abc"))
    assert code == 0, err
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert servers(config)["quickstart"]["env"] == {"TOKEN": "abc"}  # type: ignore[index]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a file another user's")
async def test_an_existing_file_keeps_its_owner_and_group(tmp_path: Path) -> None:
    """Run as root (sudo, a container), install writes a user's file: it stays theirs."""
    config = tmp_path / "mcp.json"
    config.write_text("{}")
    os.chown(config, 4321, 8765)
    config.chmod(0o600)
    code, _, err = await mcp_runtime(*install_args(config))
    assert code == 0, err
    after = config.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (4321, 8765, 0o600)
    assert "quickstart" in servers(config)


async def test_a_link_planted_at_a_temporary_name_is_not_followed(tmp_path: Path) -> None:
    """A cloned repository ships ``.vscode/.mcp.json.mcp-runtime.tmp`` pointing at one of the
    user's files; ``install --client vscode`` in it must not write there."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    workspace = tmp_path / "repo"
    (workspace / ".vscode").mkdir(parents=True)
    planted = workspace / ".vscode" / ".mcp.json.mcp-runtime.tmp"
    planted.symlink_to(victim)
    code, _, err = await mcp_runtime(
        "install", str(QUICKSTART), "--client", "vscode", "--name", "q", cwd=workspace
    )
    assert code == 0, err
    assert victim.read_text() == "the user's own file\n"
    assert planted.is_symlink() and os.readlink(planted) == str(victim)
    written = workspace / ".vscode" / "mcp.json"
    assert not written.is_symlink()
    assert json.loads(written.read_text())["servers"]["q"]["type"] == "stdio"
    # and no temporary file of ours is left beside them
    assert sorted(p.name for p in written.parent.iterdir()) == [planted.name, "mcp.json"]


async def test_six_concurrent_installs_keep_all_six_entries(tmp_path: Path) -> None:
    """Six processes add six names to one file at once. The file already holds many other
    servers, so that each read-modify-write takes long enough to overlap the others'."""
    config = tmp_path / "mcp.json"
    theirs = {f"theirs-{i}": {"command": "node", "args": [f"s{i}.js"]} for i in range(20_000)}
    config.write_text(json.dumps({"mcpServers": theirs}))
    for _round in range(2):
        config.write_text(json.dumps({"mcpServers": theirs}))
        results: list[tuple[int, str, str]] = []

        async def one(name: str) -> None:
            results.append(await mcp_runtime(*install_args(config, "--name", name)))  # noqa: B023

        async with trio.open_nursery() as nursery:
            for i in range(6):
                nursery.start_soon(one, f"mine-{i}")
        assert [code for code, _, _ in results] == [0] * 6, results
        found = servers(config)
        assert {f"mine-{i}" for i in range(6)} <= set(found), sorted(set(found) - set(theirs))
        assert len(found) == len(theirs) + 6
    assert os.listdir(tmp_path) == ["mcp.json"]


async def test_a_symlinked_config_is_written_through(tmp_path: Path) -> None:
    """Dotfiles managers keep the real file elsewhere and link it into place."""
    real = tmp_path / "dotfiles" / "cursor-mcp.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"mcpServers": {"theirs": {"url": "https://x/mcp"}}}))
    real.chmod(0o600)
    link = tmp_path / "home" / ".cursor" / "mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    code, _, err = await mcp_runtime(*install_args(link))
    assert code == 0, err
    assert link.is_symlink() and link.resolve() == real
    assert set(servers(real)) == {"theirs", "quickstart"}
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert sorted(p.name for p in real.parent.iterdir()) == ["cursor-mcp.json"]
    assert sorted(p.name for p in link.parent.iterdir()) == ["mcp.json"]


async def test_a_dangling_link_is_left_alone(tmp_path: Path) -> None:
    link = tmp_path / "mcp.json"
    link.symlink_to(tmp_path / "elsewhere" / "x.json")
    code, _, err = await mcp_runtime(*install_args(link))
    assert code == 2
    assert err == (
        f"mcp-runtime: error: {link} is a link to {tmp_path / 'elsewhere' / 'x.json'}, "
        "which does not exist: left as it is\n"
    )
    assert not (tmp_path / "elsewhere").exists()


async def test_a_directory_as_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, out, err = await mcp_runtime(*install_args(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"mcp-runtime: error: {tmp_path} is a directory: name the config file itself\n"


@pytest.mark.parametrize("name", ["", "a\nb", "two words", "x" * 65, "a/b", "caf\u00e9", "\x1b]0;"])
async def test_an_invalid_name_is_refused_naming_the_rule(tmp_path: Path, name: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    code, _, err = await mcp_runtime(*install_args(config, "--name", name))
    assert code == 2
    assert err.count("\n") == 1 and "\x1b" not in err, err
    assert err.startswith("mcp-runtime: error: invalid server name ")
    assert err.endswith("a name is 1 to 64 characters, each an ASCII letter, a digit, '-' or '_'\n")
    assert config.read_text() == '{"mcpServers": {}}'


async def test_valid_names_at_the_edges_are_taken(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    for name in ("a", "x" * 64, "My_Server-2"):
        code, _, err = await mcp_runtime(*install_args(config, "--name", name))
        assert code == 0, err
    assert set(servers(config)) == {"a", "x" * 64, "My_Server-2"}


async def test_a_server_name_with_a_newline_is_not_cut(tmp_path: Path) -> None:
    """Without --name the entry takes the Server's name, whole: one with a newline is
    refused (not cut to its last line, "lines"), with a valid name to use instead."""
    served = tmp_path / "served.py"
    served.write_text(
        "from runtime import Server\napp = Server('two\\nlines', '1.0')\n"
        "@app.tool()\ndef ping() -> str:\n    return 'pong'\n"
    )
    config = tmp_path / "mcp.json"
    code, _, err = await mcp_runtime(
        "install", str(served), "--client", "cursor", "--config", str(config)
    )
    assert code == 2
    assert err == (
        "mcp-runtime: error: invalid server name 'two\\nlines': a name is 1 to 64 characters, "
        "each an ASCII letter, a digit, '-' or '_'; this is the Server's own name: choose the "
        "entry's with --name, e.g. --name two-lines\n"
    )
    assert not config.exists()
    code, _, err = await mcp_runtime(
        "install", str(served), "--client", "cursor", "--config", str(config), "--name", "two"
    )
    assert code == 0, err
    assert set(servers(config)) == {"two"}


async def test_a_file_that_is_not_utf8_is_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_bytes(b'{"mcpServers": {"caf\xe9": {}}}')
    code, _, err = await mcp_runtime(*install_args(config))
    assert code == 2
    assert err == f"mcp-runtime: error: {config} is not UTF-8 text: left as it is\n"
    assert config.read_bytes() == b'{"mcpServers": {"caf\xe9": {}}}'


async def test_a_file_the_system_will_not_let_us_write_is_one_line_and_exit_1(
    tmp_path: Path,
) -> None:
    """A config whose directory path runs through a regular file: the OS's reason, once."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    config = blocker / "mcp.json"
    code, _, err = await mcp_runtime(*install_args(config))
    assert code == 1
    assert err == f"mcp-runtime: error: cannot write {config}: {blocker} is not a folder\n"
