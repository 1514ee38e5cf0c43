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
with ``--force``.

Writing (these files hold API keys in ``env``, and sit in directories others may write to,
such as a cloned repository's ``.vscode/``):

- The read-modify-write holds an exclusive ``flock`` on the config file itself, so installs
  running at once apply one after the other and none loses another's entry. Each install
  replaces the file (a new inode), so one that waited for the lock checks, once it has it,
  that the path still names the inode it locked, and otherwise locks the new one.
- The new text goes to a temporary file created exclusively under a random name
  (``tempfile.mkstemp``: ``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600) in the same
  directory, is fsynced, and is renamed over the file: a reader sees the old file or the new
  one, and a link planted where a temporary file might go is never followed.
- The file keeps its permission bits and its owner and group; a file this command creates is
  0600 (owner only), as it may hold secrets.
- A config path that is a symbolic link is written through: the link stays and its target
  gets the new text (the temporary file goes beside the target).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Final

__all__ = [
    "CLIENTS",
    "LOCK_TIMEOUT",
    "NAME_RULE",
    "CannotWrite",
    "check_name",
    "config_path",
    "entry_for",
    "install",
    "name_like",
]

CLIENTS: Final = ("claude-desktop", "cursor", "vscode", "json")

#: Seconds an install waits for the config file's lock. Another install holds it only for
#: its read-modify-write (milliseconds); past this, something is stuck and we say so.
LOCK_TIMEOUT: Final = 10.0
#: The entry names every client takes. Claude Code and the GitHub Copilot CLI (which reads
#: ``.vscode/mcp.json``) refuse any other character ("Names can only contain letters,
#: numbers, hyphens, and underscores"), and clients prefix tool names with the server's
#: name for model APIs that take tool names of at most 64 such characters; 64 is also the
#: MCP tool-name bound (SEP-986), so it is the longest.
_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
NAME_RULE: Final = "1 to 64 characters, each an ASCII letter, a digit, '-' or '_'"
#: How much of a refused name an error message shows.
_SHOWN: Final = 80


class CannotWrite(Exception):
    """The config file could not be read, locked or written (an OS error, one line)."""


def _shown(name: str) -> str:
    text = repr(name)  # escapes newlines and control characters
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def check_name(name: str) -> str:
    """``name``, if it is one every client takes (``NAME_RULE``); else ValueError."""
    if _NAME.fullmatch(name) is None:
        raise ValueError(f"invalid server name {_shown(name)}: a name is {NAME_RULE}")
    return name


def name_like(name: str) -> str:
    """A valid name close to ``name``: every run of other characters becomes one '-'."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:64] or "server"


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

    ValueError (one line; nothing written) for an invalid name, a path that is a directory
    or a dangling link, a file that is not a JSON object, or a name already in it without
    ``force``. :class:`CannotWrite` (one line) when the OS refuses: permissions, a full
    disk, another install holding the lock past ``LOCK_TIMEOUT``.
    """
    check_name(name)
    key = "servers" if client == "vscode" else "mcpServers"
    if client == "json":
        return None, json.dumps({key: {name: entry}}, indent=2) + "\n"
    path = config or config_path(client)
    target = _target(path)
    try:
        if dry_run:
            if target.exists() and not target.is_file():
                raise ValueError(f"{path} is not a regular file: left as it is")
            text = target.read_bytes() if target.exists() else b""
            return None, _merged(path, text, key, name, entry, force)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where a folder of the path should be
            raise CannotWrite(f"cannot write {path}: {target.parent} is not a folder") from None
        with _locked(target) as fd:
            current = os.fstat(fd)
            _check_owner(path, current)
            result = _merged(path, _read(fd), key, name, entry, force)
            _replace(target, result.encode("utf-8"), current)
    except OSError as exc:
        raise CannotWrite(f"cannot write {path}: {exc.strerror or exc}") from None
    return path, result


def _target(path: Path) -> Path:
    """The file to write: ``path``, or what it links to (the link is kept)."""
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise ValueError(f"{path} is a directory: name the config file itself")
    if path.is_symlink() and not target.exists():
        # Creating a file wherever a dangling link points is not what the user asked for.
        raise ValueError(f"{path} is a link to {target}, which does not exist: left as it is")
    return target


def _merged(
    path: Path, text: bytes, key: str, name: str, entry: dict[str, Any], force: bool
) -> str:
    """The file's text with ``entry`` added as ``name``; ValueError to leave it alone."""
    document: dict[str, Any] = {}
    try:
        decoded = text.decode("utf-8-sig")  # a BOM is allowed (and dropped)
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text: left as it is") from None
    if decoded.strip():
        try:
            loaded = json.loads(decoded)
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
    return json.dumps(document, indent=2) + "\n"


@contextmanager
def _locked(target: Path) -> Iterator[int]:
    """An fd of ``target`` (created 0600 if missing) holding its exclusive ``flock``, and
    still the file the path names."""
    deadline = time.monotonic() + LOCK_TIMEOUT
    while True:
        # O_NOFOLLOW: ``target`` is resolved; a link put there since is refused (ELOOP).
        # O_NONBLOCK: a FIFO put there must not block the open (it is refused below).
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(target, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{target} is not a regular file: left as it is")
            _lock(fd, target, deadline)
            locked = os.fstat(fd)
            try:
                now = os.stat(target, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (locked.st_dev, locked.st_ino):
                yield fd
                return
            # Replaced while we waited (another install renamed its new file over it).
        finally:
            os.close(fd)  # releases the lock


def _lock(fd: int, target: Path, deadline: float) -> None:
    pause = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            raise CannotWrite(
                f"another process has held the lock on {target} for {LOCK_TIMEOUT:g} s: "
                "try again once it is done"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _read(fd: int) -> bytes:
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 16, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _check_owner(path: Path, current: os.stat_result) -> None:
    """Refuse to give another user's file to us: a rename makes the new file ours, and only
    root may give it back."""
    uid = os.geteuid()
    if current.st_uid != uid and uid != 0:
        raise ValueError(
            f"{path} belongs to another user (uid {current.st_uid}): install as that user, "
            "or add the entry --dry-run prints by hand"
        )


def _replace(target: Path, data: bytes, current: os.stat_result) -> None:
    """Write ``data`` to a new file beside ``target`` with ``current``'s mode and owner,
    fsync it, and rename it over ``target``; the directory is fsynced after."""
    fd, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if (current.st_uid, current.st_gid) != (os.geteuid(), os.getegid()):
                try:  # before chmod: chown may clear the set-id bits
                    os.fchown(fd, current.st_uid, current.st_gid)
                except PermissionError:
                    raise CannotWrite(
                        f"cannot give the new {target} its group (gid {current.st_gid}): "
                        "install as a member of that group; left as it is"
                    ) from None
            os.fchmod(fd, stat.S_IMODE(current.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(scratch, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(scratch)
        raise
    directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with suppress(OSError):  # some file systems cannot fsync a directory
            os.fsync(directory)
    finally:
        os.close(directory)
