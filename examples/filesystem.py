"""A filesystem server that only touches what the client shares: its roots.

MCP client/roots: the client says which directories the user opened (``roots/list``, file://
URIs) and tells the server when they change (``notifications/roots/list_changed``). Every
tool here resolves its path inside one of those roots (symlinks and ``..`` included) and
refuses anything else, so a model cannot read ``~/.ssh`` by asking nicely.

Run it:  mcp-runtime serve examples/filesystem.py   (the client must declare ``roots``)
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import msgspec
import trio

from runtime import Context, Server, ToolError

app = Server(
    "filesystem",
    "1.0.0",
    instructions="Read and search files under the directories the user shared (roots).",
)

#: Files larger than this are not read whole (a model cannot use megabytes of text anyway).
MAX_READ_BYTES = 256 * 1024
#: Search stops after this many hits.
MAX_HITS = 200


class Entry(msgspec.Struct):
    name: str
    kind: str  # "file" or "directory"
    size: int


async def shared_roots(ctx: Context) -> list[Path]:
    """The client's roots as local directories (non-file URIs are ignored)."""
    uris = [urlsplit(root["uri"]) for root in await ctx.list_roots()]
    return [Path(unquote(uri.path)) for uri in uris if uri.scheme == "file"]


def inside(roots: list[Path], path: str) -> Path:
    """``path`` (absolute, or relative to the first root) if it lies inside a root.
    Blocking (it resolves symlinks on disk): called in a worker thread."""
    if not roots:
        raise ToolError("The client shared no directories (roots); nothing is readable.")
    resolved_roots = [root.resolve() for root in roots]
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = resolved_roots[0] / candidate
    resolved = candidate.resolve()  # follows symlinks: a link out of a root is refused too
    if not any(resolved.is_relative_to(root) for root in resolved_roots):
        raise ToolError(f"{path} is outside the shared directories")
    return resolved


def _list(roots: list[Path], path: str) -> list[Entry]:
    directory = inside(roots, path)
    if not directory.is_dir():
        raise ToolError(f"{path} is not a directory")
    entries = []
    for child in sorted(directory.iterdir()):
        is_dir = child.is_dir()
        size = 0 if is_dir else child.stat().st_size
        entries.append(Entry(child.name, "directory" if is_dir else "file", size))
    return entries


def _read(roots: list[Path], path: str) -> str:
    file = inside(roots, path)
    if not file.is_file():
        raise ToolError(f"{path} is not a file")
    if file.stat().st_size > MAX_READ_BYTES:
        raise ToolError(f"{path} is larger than {MAX_READ_BYTES} bytes")
    return file.read_bytes().decode("utf-8", errors="replace")


@app.tool(annotations={"readOnlyHint": True})
async def list_roots(ctx: Context) -> list[str]:
    """The directories the client shared."""
    return [str(root) for root in await shared_roots(ctx)]


# Disk access blocks: each tool asks for the roots (async), then works in a worker thread.


@app.tool(annotations={"readOnlyHint": True})
async def list_directory(path: str, ctx: Context) -> list[Entry]:
    """List a directory inside the shared roots.

    Args:
        path: The directory, absolute or relative to the first root.
    """
    return await trio.to_thread.run_sync(_list, await shared_roots(ctx), path)


@app.tool(annotations={"readOnlyHint": True})
async def read_file(path: str, ctx: Context) -> str:
    """Read a text file inside the shared roots.

    Args:
        path: The file, absolute or relative to the first root.
    """
    return await trio.to_thread.run_sync(_read, await shared_roots(ctx), path)


@app.tool(annotations={"readOnlyHint": True})
async def search(pattern: str, ctx: Context) -> list[str]:
    """Find files whose name matches a glob pattern, in every shared root.

    Args:
        pattern: A glob such as ``*.py``.
    """
    roots = await shared_roots(ctx)

    def walk() -> list[str]:
        hits: list[str] = []
        for root in (root.resolve() for root in roots):
            for folder, _, files in os.walk(root):
                hits += [os.path.join(folder, f) for f in files if fnmatch.fnmatch(f, pattern)]
                if len(hits) >= MAX_HITS:
                    return hits[:MAX_HITS]
        return hits

    # A tree walk blocks: run it in a thread, abandoned if the client cancels.
    return await trio.to_thread.run_sync(walk, abandon_on_cancel=True)


if __name__ == "__main__":
    app.run()
