"""``mcp-runtime``: the command. ``serve`` runs a server object from a file or module (or
a remote server through ours); ``dev`` and ``install`` are in ``_commands``, and ``list``,
``call``, ``read`` and ``inspect`` (the client from a shell) in ``_client_verbs``.

A usage error is one line on stderr and exit code 2; a server that cannot start (a port in
use, a crash) one line per cause and exit code 1.
"""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ._bind_error import bind_error
from ._flags import (
    LISTENING,
    UPSTREAM_FLAGS,
    UsageError,
    build_parser,
    plain_serve,
    read_settings,
    workers_refusal,
)
from ._loading import add_middleware_specs, load_target
from ._logs import configure_logging

if TYPE_CHECKING:
    import argparse

    from .. import Server

__all__ = ["main"]


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While the served file is imported for stdio, its module-level ``print()`` (and
    anything else writing to file descriptor 1) goes to stderr: stdout is the protocol's."""
    sys.stdout.flush()
    saved_fd = os.dup(1)
    saved = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        sys.stdout = saved


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while the TARGET (and with it trio and the runtime)
    is imported, then what was loaded frozen (``gc.freeze``) before it is back on.

    Importing allocates tens of thousands of long-lived objects (modules, classes,
    functions) and next to no garbage: the collections those allocations trigger, and the
    first ones after loading, walk them all and free nothing. Frozen, they sit in the
    permanent generation, which no collection walks (nor the exit's): a stdio server's
    spawn to first reply and its exit both get cheaper (benchmarks/README.md, "CLI start-up").
    The price: cyclic garbage made while importing is never freed (a few objects, once)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _url(transport: str, settings: dict[str, Any], address: Any) -> str:
    """Where clients connect, from the address the transport reported."""
    if transport == "unix":
        return f"unix:{settings['socket']}"
    if transport == "pipe":
        return f"the FIFO pair in {settings['pipe_dir']} (to-server, from-server)"
    host, port = address[0], address[1]
    host = f"[{host}]" if ":" in host else host
    if transport == "tcp":
        return f"tcp://{host}:{port}"
    if transport == "sse":
        path = settings["path"] or "/sse"
        return (
            f"http://{host}:{port}{path} (legacy HTTP+SSE; POST to http://{host}:{port}/messages)"
        )
    scheme = "ws" if transport == "ws" else "http"
    return f"{scheme}://{host}:{port}{settings['path'] or '/mcp'}"


def _summary(server: Server) -> str:
    reg = server.registry
    counts = (
        (len(reg.tools), "tool"),
        (len(reg.resources) + len(reg.templates), "resource"),
        (len(reg.prompts), "prompt"),
    )
    parts = [f"{n} {name}{'' if n == 1 else 's'}" for n, name in counts]
    return f"{server.name} {server.version} ({', '.join(parts)})"


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] in ("list", "call", "read", "inspect"):
        from ._client_verbs import main as client_main

        return client_main(arguments)
    if arguments and arguments[0] in ("login", "logout"):
        from ._login import login_main

        return login_main(arguments)
    args: argparse.Namespace | SimpleNamespace | None = plain_serve(arguments)
    if args is None:
        parser = build_parser(tools=arguments[:1] != ["serve"])
        args = parser.parse_args(arguments)
        if args.command in ("dev", "install"):
            from ._commands import run_command

            return run_command(args)
        if args.command != "serve":
            parser.print_help(sys.stderr)
            return 2
    try:
        settings = read_settings(args)
    except UsageError as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return 2
    transport = settings["transport"]
    configure_logging(settings["log_level"], settings["log_format"])
    try:
        upstream = {name: settings[name] for name in UPSTREAM_FLAGS}
        if transport == "stdio":
            with _stdout_to_stderr(), _collector_paused():
                server = load_target(args.target, upstream=upstream)
        else:
            with _collector_paused():
                server = load_target(args.target, upstream=upstream)
        if args.middleware:
            add_middleware_specs(server, args.middleware)
        changes: dict[str, Any] = {}
        if settings["max_in_flight"] is not None:
            changes["max_in_flight"] = int(settings["max_in_flight"])
        if settings["request_timeout"] is not None:
            changes["request_timeout"] = float(settings["request_timeout"])
        if changes:
            import msgspec.structs  # loaded with the server by now

            server.limits = msgspec.structs.replace(server.limits, **changes)
    except (UsageError, ValueError) as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return 2
    workers = int(settings["workers"])
    if workers > 1:
        refused = workers_refusal(settings, workers)
        shared = (settings["store"] or "").startswith("redis://")
        if refused is None and transport == "http" and not shared and _logs_in(server, settings):
            refused = (
                f"--workers {workers} with --auth: each worker would hold its own logins "
                "and keys (the authorization server's state is in this process's memory)"
            )
        if refused:
            print(f"mcp-runtime: error: {refused}", file=sys.stderr)
            return 2
    if settings["store"]:
        from ..stores import open_store

        try:
            server.store = open_store(settings["store"])
        except ValueError as exc:
            print(f"mcp-runtime: error: --store: {exc}", file=sys.stderr)
            return 2
    if workers > 1:
        from ..ensemble import bind_socket, bind_unix_socket, supervise

        try:
            if transport == "unix":
                sock = bind_unix_socket(settings["socket"])
            else:
                sock = bind_socket(settings["host"], int(settings["port"]))
        except OSError as exc:
            print(f"mcp-runtime: error: {bind_error(exc, transport, settings)}", file=sys.stderr)
            return 1
        address = None if transport == "unix" else sock.getsockname()[:2]
        print(
            f"mcp-runtime: serving {_summary(server)} with {workers} workers on "
            f"{_url(transport, settings, address)}",
            file=sys.stderr,
            flush=True,
        )
        argv_list = list(sys.argv[1:] if argv is None else argv)
        return supervise(argv_list, workers, sock, server.limits.shutdown_grace)
    try:
        options = _serve_options(server, transport, settings)
    except (UsageError, ValueError) as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return 2
    from ._heap import settle_heap

    settle_heap()

    def announce(address: Any) -> None:
        if transport == "stdio":
            if sys.stdin.isatty():
                print(
                    f"mcp-runtime: serving {_summary(server)} over stdio: waiting for an MCP "
                    "client on stdin (this is not an interactive prompt; Ctrl-D ends it)",
                    file=sys.stderr,
                )
            return
        url = _url(transport, settings, address)
        print(f"mcp-runtime: serving {_summary(server)} on {url}", file=sys.stderr, flush=True)

    from .. import ServerCrashed  # loaded with the server by now

    try:
        server.run(transport, started=announce, **options)
    except KeyboardInterrupt:  # pragma: no cover - a signal outside the trio run
        return 130
    except (OSError, ServerCrashed, BaseExceptionGroup) as exc:
        # e.g. the port is taken: one line per cause, not a traceback (a crashed server's
        # traceback is logged already).
        causes = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)
        if not all(isinstance(cause, OSError | ServerCrashed) for cause in causes):
            raise
        for cause in causes:
            reason = bind_error(cause, transport, settings) if isinstance(cause, OSError) else cause
            print(f"mcp-runtime: error: {reason}", file=sys.stderr)
        return 1
    return 0


def _logs_in(server: Server, settings: dict[str, Any]) -> bool:
    if settings["auth"]:
        return True
    from ..authserver import login_requirement

    return login_requirement(server) is not None


def _serve_options(server: Server, transport: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The ``serve_*`` keyword arguments for ``transport`` from the resolved settings."""
    # A worker of --workers N accepts on its supervisor's listening socket.
    listen_fd = os.environ.get("MCP_RUNTIME_LISTEN_FD")
    shared = socket.socket(fileno=int(listen_fd)) if listen_fd and transport in LISTENING else None
    if transport in ("stdio", "unix", "pipe"):
        options: dict[str, Any] = {"framing": settings["framing"]}
        if transport == "unix":
            options["path"] = settings["socket"]
            if shared is not None:
                options["sock"] = shared
        if transport == "pipe":
            options["directory"] = settings["pipe_dir"]
        return options
    options = {"port": int(settings["port"]), "host": settings["host"]}
    if shared is not None:
        options["sock"] = shared
    if transport == "tcp":
        options["framing"] = settings["framing"]
        return options
    if settings["path"]:
        options["path"] = settings["path"]
    for name in ("allowed_origins", "allowed_hosts"):
        value = settings[name]
        if value is not None:
            options[name] = [item.strip() for item in value.split(",") if item.strip()]
    http_changes: dict[str, Any] = {}
    for name in ("max_connections", "max_connections_per_address"):
        if settings[name] is not None:
            http_changes[name] = int(settings[name])
    if settings["sse_retry_ms"] is not None:
        http_changes["sse_retry_ms"] = int(settings["sse_retry_ms"])
    if settings["session_eviction"] is not None:
        http_changes["session_eviction"] = settings["session_eviction"]
    if settings["min_body_rate"] is not None:
        http_changes["min_body_rate"] = float(settings["min_body_rate"])
    if http_changes:
        import dataclasses

        from ..transports import HttpLimits

        base = server.http_limits or HttpLimits()
        options["http_limits"] = dataclasses.replace(base, **http_changes)
    if transport == "http":
        from ._serve_auth import login_options

        options.update(login_options(server, settings))
    if settings["metrics"] is not None:
        from ..middleware import Metrics

        options["metrics"] = Metrics()
        options["metrics_path"] = settings["metrics"]
        if settings["metrics_token"]:
            options["metrics_token"] = settings["metrics_token"]
    return options
