"""What a login leaves behind, and where it is kept: :class:`TokenStore`.

One entry per MCP server (its canonical URI, which is also the ``resource`` the tokens are
for): the tokens, the client registration they were issued to and the issuer that issued
both. Client credentials are bound to that issuer (basic/authorization "Authorization Server
Binding"): when the server names another authorization server, the client registers again
rather than show one server's credentials to another.

Secrets (tokens, the client secret) never appear in a ``repr``, a log line or an error:
every type here prints only that it holds one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Final, Protocol

import msgspec
import trio

__all__ = [
    "ClientRegistration",
    "FileTokenStore",
    "MemoryTokenStore",
    "StoredLogin",
    "TokenStore",
    "Tokens",
    "default_token_dir",
]

#: Largest stored entry read back (a token set and a registration are a few KiB).
_MAX_ENTRY: Final = 256 * 1024


class Tokens(msgspec.Struct, frozen=True, kw_only=True):
    """An access token and what came with it. ``expires_at``: wall-clock seconds (epoch),
    None when the authorization server gave no lifetime."""

    access_token: str
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = None
    scope: str | None = None

    def expires_within(self, seconds: float, now: float) -> bool:
        return self.expires_at is not None and self.expires_at - now <= seconds

    def __repr__(self) -> str:
        refresh = ", refresh_token=<hidden>" if self.refresh_token else ""
        return (
            f"Tokens(access_token=<hidden>, token_type={self.token_type!r}, "
            f"expires_at={self.expires_at!r}{refresh}, scope={self.scope!r})"
        )


class ClientRegistration(msgspec.Struct, frozen=True, kw_only=True):
    """The client as one authorization server knows it (``issuer``)."""

    client_id: str
    issuer: str | None = None
    client_secret: str | None = None
    token_endpoint_auth_method: str | None = None
    #: How it was obtained: "pre-registered", "metadata-document" or "dynamic".
    source: str = "dynamic"

    def __repr__(self) -> str:
        secret = ", client_secret=<hidden>" if self.client_secret else ""
        return (
            f"ClientRegistration(client_id={self.client_id!r}, issuer={self.issuer!r}"
            f"{secret}, token_endpoint_auth_method={self.token_endpoint_auth_method!r}, "
            f"source={self.source!r})"
        )


class StoredLogin(msgspec.Struct, frozen=True, kw_only=True):
    """One server's entry: ``resource`` (the canonical URI), the ``issuer`` whose tokens
    these are, the client registration, and the tokens (None: registered, not logged in)."""

    resource: str
    issuer: str | None = None
    client: ClientRegistration | None = None
    tokens: Tokens | None = None
    #: The ``resource`` the tokens were asked for (RFC 8707), when the metadata named one
    #: other than ``resource`` (a parent path): a refresh asks for the same.
    token_resource: str | None = None


_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(StoredLogin)


class TokenStore(Protocol):
    """Where logins are kept, keyed by the server's canonical URI.

    ``load`` returns None for a server never logged in to (or an entry that cannot be read:
    a corrupt entry is a login to do again, not an error). ``save`` replaces the entry
    atomically: a reader sees the old entry or the new one, never a mix. ``delete`` of a
    missing entry does nothing. None of them logs what it stores."""

    async def load(self, key: str) -> StoredLogin | None: ...

    async def save(self, key: str, entry: StoredLogin) -> None: ...

    async def delete(self, key: str) -> None: ...


class MemoryTokenStore:
    """Logins held for the life of the process (the default)."""

    def __init__(self) -> None:
        self._entries: dict[str, StoredLogin] = {}

    async def load(self, key: str) -> StoredLogin | None:
        return self._entries.get(key)

    async def save(self, key: str, entry: StoredLogin) -> None:
        self._entries[key] = entry

    async def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._entries)} entries)"


def default_token_dir() -> Path:
    """``$XDG_CONFIG_HOME/mcp-runtime/oauth`` (``~/.config/...`` by default; on Windows
    ``%APPDATA%\\mcp-runtime\\oauth``)."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        base = Path(os.environ["APPDATA"])
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "mcp-runtime" / "oauth"


class FileTokenStore:
    """Logins kept in files, one per server, in ``directory`` (default
    :func:`default_token_dir`), so that a later process (the next ``mcp-runtime call``)
    finds them.

    The directory is made mode 0700 and each file 0600 (created so: never readable by
    others, not even for an instant). A file is written whole to a temporary file beside
    it and renamed over the old one (atomic on POSIX). The file name is a hash of the key:
    the server's URL does not appear in a directory listing."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_token_dir()

    def path_for(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    async def load(self, key: str) -> StoredLogin | None:
        return await trio.to_thread.run_sync(self._load, key)

    async def save(self, key: str, entry: StoredLogin) -> None:
        await trio.to_thread.run_sync(self._save, key, entry)

    async def delete(self, key: str) -> None:
        await trio.to_thread.run_sync(self._delete, key)

    def _load(self, key: str) -> StoredLogin | None:
        try:
            with open(self.path_for(key), "rb") as file:
                data = file.read(_MAX_ENTRY + 1)
        except FileNotFoundError:
            return None
        if len(data) > _MAX_ENTRY:
            return None
        try:
            entry = _DECODER.decode(data)
        except msgspec.DecodeError:
            return None
        return entry if entry.resource == key else None

    def _save(self, key: str, entry: StoredLogin) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.directory, 0o700)
        target = self.path_for(key)
        descriptor, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
        try:
            # (mkstemp creates the file 0600 already: never readable by others.)
            with os.fdopen(descriptor, "wb") as file:
                file.write(_ENCODER.encode(entry))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def _delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path_for(key))

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.directory)!r})"
