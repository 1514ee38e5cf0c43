"""``mcp-runtime install TARGET --client ...``: the entry a client needs to start a server.

Where each client keeps its servers (their documentation, 2026):

- Claude Desktop: ``claude_desktop_config.json`` (macOS ``~/Library/Application Support/
  Claude/``, Windows ``%APPDATA%\\Claude\\``, Linux ``~/.config/Claude/``), under
  ``"mcpServers"``: ``{"command", "args", "env"}``. It starts local commands only.
- Cursor: ``~/.cursor/mcp.json`` (or a project's ``.cursor/mcp.json``), under
  ``"mcpServers"``: a command entry, or ``{"url"}`` for a remote server.
- VS Code: the workspace's ``.vscode/mcp.json``, under ``"servers"``: ``{"type": "stdio",
  "command", "args", "env"}`` or ``{"type": "http", "url"}``.
- ``json``: print ``{"mcpServers": {name: entry}}`` for any other client; writes nothing.

The command is this interpreter running ``-m runtime serve`` on the target's absolute
path, so the client starts it with the same environment whatever its ``PATH``. The file's
other servers and keys are kept as they are; an entry of the same name is replaced only
with ``--force``; the file is written whole to a temporary file and renamed over the old one.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["CLIENTS", "config_path", "entry_for", "install"]

CLIENTS: Final = ("claude-desktop", "cursor", "vscode", "json")


def config_path(
    client: str,
    *,
    platform: str | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path:
    """The default config file of ``client``: on this machine, or on the one ``platform``
    (``sys.platform``: ``darwin``, ``win32``, ``linux``...), ``home``, ``environ`` (for
    ``%APPDATA%``) and ``cwd`` (the VS Code workspace) describe."""
    platform = sys.platform if platform is None else platform
    home = Path.home() if home is None else home
    environ = os.environ if environ is None else environ
    if client == "claude-desktop":
        if platform == "darwin":
            return (
                home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
            )
        if platform == "win32":
            # %APPDATA% is the roaming profile folder; its usual place when it is unset.
            appdata = environ.get("APPDATA")
            roaming = Path(appdata) if appdata else home / "AppData" / "Roaming"
            return roaming / "Claude" / "claude_desktop_config.json"
        return home / ".config" / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"  # %USERPROFILE%\.cursor on Windows
    if client == "vscode":
        return (Path.cwd() if cwd is None else cwd) / ".vscode" / "mcp.json"
    raise ValueError(f"no config file for client {client!r}")


def _command_target(target: str) -> str:
    """TARGET with a file path made absolute (a client starts it from anywhere)."""
    spec, sep, attr = target.partition(":")
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        spec = str(Path(spec).resolve())
    return spec + sep + attr


def entry_for(
    client: str,
    target: str | None,
    *,
    url: str | None = None,
    env: dict[str, str] | None = None,
    serve_args: list[str] | None = None,
) -> dict[str, Any]:
    """The server entry ``client`` reads: a command (stdio) or, with ``url``, a remote."""
    if url is not None:
        if client == "claude-desktop":
            raise ValueError(
                "Claude Desktop's config file starts local commands only: add a remote "
                "server in its Connectors settings, or install the TARGET file (stdio)"
            )
        return {"type": "http", "url": url} if client == "vscode" else {"url": url}
    assert target is not None
    entry: dict[str, Any] = {}
    if client == "vscode":
        entry["type"] = "stdio"
    entry["command"] = sys.executable
    entry["args"] = ["-m", "runtime", "serve", _command_target(target), *(serve_args or [])]
    if env:
        entry["env"] = dict(env)
    return entry


def install(
    client: str,
    name: str,
    entry: dict[str, Any],
    *,
    config: Path | None = None,
    dry_run: bool = False,
    force: bool = False,
) -> tuple[Path | None, str]:
    """Add ``entry`` as server ``name`` to ``client``'s config (or print it, for ``json``).
    Returns the file written (None when nothing was) and the text of the result.
    ValueError (one line) for an unreadable file or a name already in it without ``force``.
    """
    key = "servers" if client == "vscode" else "mcpServers"
    if client == "json":
        return None, json.dumps({key: {name: entry}}, indent=2) + "\n"
    path = config or config_path(client)
    document: dict[str, Any] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if text.strip():
            try:
                loaded = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} is not valid JSON ({exc}): left as it is") from None
            if not isinstance(loaded, dict):
                raise ValueError(f"{path} does not hold a JSON object: left as it is")
            document = loaded
    servers = document.get(key)
    if servers is None:
        servers = document[key] = {}
    if not isinstance(servers, dict):
        raise ValueError(f"{path}: {key!r} is not an object: left as it is")
    if name in servers and servers[name] != entry and not force:
        raise ValueError(
            f"{path} already has a server named {name!r}: use --name, or --force to replace it"
        )
    servers[name] = entry
    result = json.dumps(document, indent=2) + "\n"
    if dry_run:
        return None, result
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.mcp-runtime.tmp")
    scratch.write_text(result, encoding="utf-8")
    os.replace(scratch, path)
    return path, result
