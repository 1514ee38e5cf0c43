"""``mcp-runtime``: serve a server object from a file or module.

Every flag also reads an ``MCP_RUNTIME_<FLAG>`` environment variable (``--max-in-flight`` is
``MCP_RUNTIME_MAX_IN_FLIGHT``); a flag on the command line wins. Usage errors are one line on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ._version import __version__

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["load_target", "main"]

log = logging.getLogger("mcp_runtime.cli")
_DEFAULT_NAMES = ("app", "server", "mcp")
_TRANSPORTS = ("stdio", "tcp", "unix", "http", "sse", "ws")


class UsageError(Exception):
    """A bad TARGET or flag: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _env(name: str, default: Any = None) -> Any:
    return os.environ.get(f"MCP_RUNTIME_{name}", default)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError
    return value


_positive_int.__name__ = "positive integer"
_positive_float.__name__ = "positive number"
_port.__name__ = "port (0-65535)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcp-runtime", description="A trio-native runtime for MCP servers.")
    parser.add_argument("--version", action="version", version=f"mcp-runtime {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    serve = commands.add_parser("serve", help="serve an MCP server object")
    serve.add_argument(
        "target",
        metavar="TARGET",
        help="path/file.py[:obj] or package.module[:obj]; without :obj, finds app, server or mcp",
    )
    serve.add_argument("--transport", choices=_TRANSPORTS, default=_env("TRANSPORT", "stdio"))
    serve.add_argument(
        "--path",
        default=_env("PATH"),
        help="HTTP/WebSocket endpoint path (default /mcp; /sse for --transport sse)",
    )
    serve.add_argument(
        "--allowed-origins",
        metavar="LIST",
        default=_env("ALLOWED_ORIGINS"),
        help="comma-separated Origin allow-list, e.g. https://app.example (default: loopback)",
    )
    serve.add_argument(
        "--allowed-hosts",
        metavar="LIST",
        default=_env("ALLOWED_HOSTS"),
        help="comma-separated Host allow-list, name or name:port (default: loopback names)",
    )
    serve.add_argument(
        "--max-connections",
        type=_positive_int,
        metavar="N",
        default=_env("MAX_CONNECTIONS"),
        help="concurrent HTTP/WebSocket connections (default 1000; past it: 503)",
    )
    serve.add_argument("--host", default=_env("HOST", "127.0.0.1"))
    serve.add_argument("--port", type=_port, default=_env("PORT", "0"))
    serve.add_argument("--socket", metavar="PATH", default=_env("SOCKET"))
    serve.add_argument(
        "--framing", choices=("ndjson", "content-length"), default=_env("FRAMING", "ndjson")
    )
    serve.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error", "critical"),
        type=str.lower,
        default=_env("LOG_LEVEL", "info"),
    )
    serve.add_argument(
        "--middleware",
        metavar="MODULE:OBJ",
        action="append",
        default=[m for m in _env("MIDDLEWARE", "").split(",") if m],
        help="add middleware (repeatable; comma-separated in MCP_RUNTIME_MIDDLEWARE)",
    )
    serve.add_argument("--max-in-flight", type=_positive_int, default=_env("MAX_IN_FLIGHT"))
    serve.add_argument(
        "--request-timeout",
        type=_positive_float,
        metavar="SECONDS",
        default=_env("REQUEST_TIMEOUT"),
    )
    from ._cli_tools import add_commands

    add_commands(commands)
    return parser


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"cannot load {str(path)!r}: no such file")
    module_name = f"_mcp_runtime_target_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load {str(path)!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    # Let the file import its siblings, as `python file.py` would.
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_target(target: str) -> Server:
    """Import TARGET and return its Server. Raises UsageError with a one-line reason."""
    from ._server import Server

    spec, _, attr = target.partition(":")
    if not spec:
        raise UsageError(f"invalid TARGET {target!r}: expected path/file.py[:obj] or module[:obj]")
    try:
        if spec.endswith(".py") or os.sep in spec or "/" in spec:
            module = _import_file(Path(spec))
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            try:
                module = importlib.import_module(spec)
            except ModuleNotFoundError as exc:
                if exc.name and spec.startswith(exc.name):
                    raise UsageError(
                        f"cannot import {spec!r}: no module named {exc.name!r}"
                    ) from None
                raise
    except UsageError:
        raise
    except Exception as exc:
        log.debug("importing %s failed", spec, exc_info=True)
        raise UsageError(
            f"importing {spec!r} failed: {type(exc).__name__}: {exc} "
            "(--log-level debug shows the traceback)"
        ) from None
    names = (attr,) if attr else _DEFAULT_NAMES
    for name in names:
        obj: Any = module
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        if isinstance(obj, Server):
            return obj
        if callable(obj) and attr:
            made = obj()
            if isinstance(made, Server):
                return made
        raise UsageError(f"{spec}:{name} is a {type(obj).__name__}, not a runtime.Server")
    wanted = repr(attr) if attr else "app, server or mcp"
    raise UsageError(f"{spec!r} has no {wanted}; name the object as {spec}:NAME")


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in ("dev", "install"):
        from ._cli_tools import run_command

        return run_command(args)
    if args.command != "serve":
        parser.print_help(sys.stderr)
        return 2
    for flag, allowed in (
        ("transport", _TRANSPORTS),
        ("framing", ("ndjson", "content-length")),
        ("log_level", ("debug", "info", "warning", "error", "critical")),
    ):
        if getattr(args, flag) not in allowed:  # a bad MCP_RUNTIME_* value: argparse skips it
            parser.error(f"invalid {flag.replace('_', '-')} {getattr(args, flag)!r}")
    _configure_logging(args.log_level)
    try:
        server = load_target(args.target)
        if args.transport == "unix" and not args.socket:
            raise UsageError("--transport unix needs --socket PATH (or MCP_RUNTIME_SOCKET)")
        if args.middleware:
            from ._cli_tools import add_middleware_specs

            add_middleware_specs(server, args.middleware)
        changes: dict[str, Any] = {}
        if args.max_in_flight is not None:
            changes["max_in_flight"] = int(args.max_in_flight)
        if args.request_timeout is not None:
            changes["request_timeout"] = float(args.request_timeout)
        if changes:
            server.limits = dataclasses.replace(server.limits, **changes)
    except (UsageError, ValueError) as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return 2
    options: dict[str, Any] = {"framing": args.framing}
    if args.transport == "tcp":
        options.update(port=int(args.port), host=args.host)
    elif args.transport in ("http", "sse", "ws"):
        options = {"port": int(args.port), "host": args.host}
        if args.path:
            options["path"] = args.path
        for flag in ("allowed_origins", "allowed_hosts"):
            value = getattr(args, flag)
            if value is not None:
                options[flag] = [item.strip() for item in value.split(",") if item.strip()]
        if args.max_connections is not None:
            from .transports import HttpLimits

            options["http_limits"] = HttpLimits(max_connections=int(args.max_connections))
    elif args.transport == "unix":
        options.update(path=args.socket)
    try:
        server.run(args.transport, **options)
    except KeyboardInterrupt:  # pragma: no cover - a signal outside the trio run
        return 130
    except (OSError, BaseExceptionGroup) as exc:
        # e.g. the port is taken: one line per cause, not a traceback.
        causes = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)
        if not all(isinstance(cause, OSError) for cause in causes):
            raise
        for cause in causes:
            print(f"mcp-runtime: error: {cause}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
