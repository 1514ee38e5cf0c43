"""``mcp-runtime install``: real CLI processes on temporary config files; the entry it
writes is then started by the official SDK client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from ..peers import ROOT, cli, run_sdk_client

QUICKSTART = ROOT / "examples" / "quickstart.py"


async def mcp_runtime(*args: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    with trio.fail_after(60):
        done = await trio.run_process(
            cli(*args), capture_stdout=True, capture_stderr=True, check=False, cwd=cwd
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_cursor_entry_keeps_other_entries_and_starts_the_server(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "keep": [1]}))
    code, _, err = await mcp_runtime(
        "install", str(QUICKSTART), "--client", "cursor", "--config", str(config),
        "--env", "TOKEN=abc",
    )  # fmt: skip
    assert code == 0, err
    assert f"added 'quickstart' to {config}" in err
    written = json.loads(config.read_text())
    assert written["keep"] == [1]
    assert written["mcpServers"]["other"] == {"command": "x"}
    entry = written["mcpServers"]["quickstart"]
    assert entry == {
        "command": sys.executable,
        "args": ["-m", "runtime", "serve", str(QUICKSTART.resolve())],
        "env": {"TOKEN": "abc"},
    }
    # what a client would do with it: start the command and talk MCP over stdio
    seen: dict[str, Any] = await run_sdk_client(
        "interop/sdk_stdio_client.py", "--", entry["command"], *entry["args"]
    )
    assert seen["add"]["content"] == [{"type": "text", "text": "42"}]


async def test_same_name_needs_force_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    args = ("install", str(QUICKSTART), "--client", "claude-desktop", "--config", str(config))
    assert (await mcp_runtime(*args))[0] == 0
    before = config.read_text()
    code, _, err = await mcp_runtime(*args, "--env", "A=1")
    assert code == 2
    assert err.strip() == (
        f"mcp-runtime: error: {config} already has a server named 'quickstart': "
        "use --name, or --force to replace it"
    )
    assert config.read_text() == before
    code, out, _ = await mcp_runtime(*args, "--env", "A=1", "--force", "--dry-run")
    assert code == 0
    assert json.loads(out)["mcpServers"]["quickstart"]["env"] == {"A": "1"}
    assert config.read_text() == before  # dry run
    assert (await mcp_runtime(*args, "--env", "A=1", "--force"))[0] == 0
    assert json.loads(config.read_text())["mcpServers"]["quickstart"]["env"] == {"A": "1"}
    # again with the same entry: nothing to refuse
    assert (await mcp_runtime(*args, "--env", "A=1"))[0] == 0
    assert os.listdir(tmp_path) == ["claude_desktop_config.json"]  # no scratch file left


async def test_vscode_url_json_and_refusals(tmp_path: Path) -> None:
    vscode = tmp_path / ".vscode" / "mcp.json"
    code, _, err = await mcp_runtime(
        "install", "--url", "http://127.0.0.1:8000/mcp", "--name", "remote",
        "--client", "vscode", "--config", str(vscode),
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(vscode.read_text()) == {
        "servers": {"remote": {"type": "http", "url": "http://127.0.0.1:8000/mcp"}}
    }
    code, out, _ = await mcp_runtime("install", str(QUICKSTART), "--client", "json", "--name", "q")
    assert code == 0
    assert json.loads(out)["mcpServers"]["q"]["args"][-1] == str(QUICKSTART.resolve())
    code, _, err = await mcp_runtime(
        "install", "--url", "http://x/mcp", "--name", "r", "--client", "claude-desktop",
        "--config", str(tmp_path / "c.json"),
    )  # fmt: skip
    assert code == 2 and "local commands only" in err
    assert not (tmp_path / "c.json").exists()
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, err = await mcp_runtime(
        "install", str(QUICKSTART), "--client", "cursor", "--config", str(broken)
    )
    assert code == 2 and "is not valid JSON" in err
    assert broken.read_text() == "{not json"
    code, _, err = await mcp_runtime(
        "install", str(tmp_path / "missing.py"), "--client", "cursor", "--config", str(broken)
    )
    assert code == 2 and "no such file" in err
