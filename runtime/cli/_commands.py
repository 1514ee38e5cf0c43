"""The ``dev`` and ``install`` commands: their flags and how each runs.

Loaded only for them (``serve``, every server's start, never builds or reads their flags).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_commands", "run_command"]


def add_commands(commands: Any) -> None:
    """The ``dev`` and ``install`` subcommands."""
    from ._install import CLIENTS

    dev = commands.add_parser("dev", help="serve over HTTP and reload on file changes")
    dev.add_argument("target", metavar="TARGET", help="path/file.py[:obj] or module[:obj]")
    dev.add_argument(
        "--transport",
        choices=("http", "stdio"),
        default="http",
        help="http (default) or stdio (the session survives reloads)",
    )
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=8000, help="default 8000; 0 picks one")
    dev.add_argument("--path", default="/mcp")
    dev.add_argument(
        "--watch", action="append", metavar="PATH", help="what to watch (default: TARGET's dir)"
    )
    dev.add_argument("--poll", action="store_true", help="poll for changes (no watchfiles)")
    dev.add_argument(
        "--store",
        metavar="URL",
        default=os.environ.get("MCP_RUNTIME_STORE"),
        help="where handshake-era HTTP sessions live (default: held by dev itself, so they "
        "survive reloads; memory:// each version its own, a reload ends them; "
        "redis://host:port/db); env MCP_RUNTIME_STORE",
    )
    dev.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error", "critical"),
        type=str.lower,
        default="info",
    )
    install = commands.add_parser(
        "install",
        help="add the server to an MCP client's configuration",
    )
    install.add_argument(
        "target", metavar="TARGET", nargs="?", help="path/file.py[:obj] or module[:obj]"
    )
    install.add_argument("--client", choices=CLIENTS, required=True)
    install.add_argument("--name", help="the entry's name (default: the server's name)")
    install.add_argument("--url", help="a remote server's URL instead of a TARGET to start")
    install.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="repeatable"
    )
    install.add_argument("--config", metavar="FILE", help="the config file (default: the client's)")
    install.add_argument("--dry-run", action="store_true", help="print the result, write nothing")
    install.add_argument("--force", action="store_true", help="replace an entry of that name")


def run_command(args: Any) -> int:
    """Run ``dev`` or ``install``; an error is one line on stderr: exit code 2 for a usage
    error or a refusal (nothing changed), 1 when the system failed us (a file that cannot
    be written, a port that cannot be bound)."""
    from ._install import CannotWrite

    try:
        if args.command == "dev":
            return _dev(args)
        return _install(args)
    except ValueError as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return 2
    except CannotWrite as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return 1


def _dev(args: Any) -> int:
    import trio

    from ._dev import bind_listener, run_dev
    from ._dev_stdio import run_stdio_dev

    options = {"watch": args.watch, "poll": args.poll, "log_level": args.log_level}
    if args.store:
        if args.transport == "stdio":
            raise ValueError("--store applies to dev over HTTP (stdio sessions survive anyway)")
        os.environ["MCP_RUNTIME_STORE"] = args.store  # each version's process reads it
    try:
        if args.transport == "stdio":
            trio.run(functools.partial(run_stdio_dev, args.target, **options))
            return 0
        try:
            sock = bind_listener(args.host, args.port)
        except OSError as exc:
            from ._bind_error import bind_error

            # serve's line for the same failure, and its exit code
            where = {"host": args.host, "port": args.port}
            print(f"mcp-runtime: error: {bind_error(exc, 'http', where)}", file=sys.stderr)
            return 1
        trio.run(functools.partial(run_dev, args.target, sock, path=args.path, **options))
    except KeyboardInterrupt:
        return 0
    return 0


def _install(args: Any) -> int:
    from ._install import check_name, entry_for, install, name_like

    if (args.target is None) == (args.url is None):
        raise ValueError("install needs a TARGET or --url (not both)")
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    name = args.name
    if name is None:
        if args.url is not None:
            raise ValueError("--url needs --name")
        name = _server_name(args.target)
        try:
            check_name(name)
        except ValueError as exc:
            raise ValueError(
                f"{exc}; this is the Server's own name: choose the entry's with --name, "
                f"e.g. --name {name_like(name)}"
            ) from None
    check_name(name)
    entry = entry_for(args.client, args.target, url=args.url, env=env)
    written, text = install(
        args.client,
        name,
        entry,
        config=Path(args.config) if args.config else None,
        dry_run=args.dry_run,
        force=args.force,
    )
    if written is None:
        sys.stdout.write(text)
    else:
        print(f"mcp-runtime: added {name!r} to {written}", file=sys.stderr)
    return 0


def _server_name(target: str) -> str:
    """The Server's own name: TARGET is loaded (so a broken TARGET fails here, not later
    in the client)."""
    import subprocess

    # In a child process: the served file's import-time side effects stay out of ours.
    # The name as JSON on the last line: any character it holds (a newline) comes through.
    code = (
        "import json, sys\nfrom runtime.cli import load_target, UsageError\n"
        "try:\n    print(json.dumps(load_target(sys.argv[1]).name))\n"
        "except UsageError as exc:\n    print(exc, file=sys.stderr); sys.exit(2)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, target], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        raise ValueError(f"cannot load {target!r}: {reason}")
    lines = done.stdout.strip().splitlines()
    try:
        name = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        name = None
    if not isinstance(name, str):
        raise ValueError(f"cannot read the server's name from {target!r}: use --name")
    return name
