"""``mcp-runtime``: serve a server object from a file or module.

Every flag also reads an ``MCP_RUNTIME_<FLAG>`` environment variable (``--max-in-flight`` is
``MCP_RUNTIME_MAX_IN_FLIGHT``); a flag on the command line wins. Usage errors are one line on
stderr and exit code 2.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import logging
import os
import re
import socket
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from ._bind_error import bind_error as _bind_error
from ._version import __version__

if TYPE_CHECKING:
    import argparse

    from ._server import Server

__all__ = ["load_target", "main"]

log = logging.getLogger("mcp_runtime.cli")
_DEFAULT_NAMES = ("app", "server", "mcp")
_TRANSPORTS = ("stdio", "tcp", "unix", "http", "sse", "ws", "pipe")


class UsageError(Exception):
    """A bad TARGET or flag: reported as one line, exit code 2."""


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


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError
    return value


_positive_int.__name__ = "positive integer"
_positive_float.__name__ = "positive number"
_non_negative_int.__name__ = "non-negative integer"
_port.__name__ = "port (0-65535)"

_NETWORK = ("tcp", "http", "sse", "ws")
#: The transports that listen on a socket, which ``--workers`` processes can share.
_LISTENING = ("http", "sse", "ws", "tcp", "unix")
#: Those whose handshake-era sessions outlive a connection (each POST is its own connection,
#: which the kernel may hand to any worker): more than one worker needs a shared store.
_SESSIONS_SPAN_CONNECTIONS = ("http", "sse")
_WEB = ("http", "sse", "ws")
_STREAMS = ("stdio", "tcp", "unix", "pipe")
#: ``--port`` when none is given: the README's and the peers' 8000 for the web transports, an
#: ephemeral port (printed at start-up) for raw TCP.
_DEFAULT_PORTS = {"tcp": 0, "http": 8000, "sse": 8000, "ws": 8000}


class _Flag(NamedTuple):
    """One ``serve`` flag: its ``MCP_RUNTIME_*`` variable, default, and where it applies.

    A NamedTuple rather than a frozen dataclass: a dataclass compiles its generated methods
    when the module is imported, about 4M instructions of every ``mcp-runtime serve``
    start-up (callgrind; issue 22, target 6), a NamedTuple a small fraction of that."""

    name: str
    help: str
    default: Any = None
    type: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    #: The transports it applies to (None: all); given for another one, it is refused.
    transports: tuple[str, ...] | None = None
    #: The value of the flag given without one (None: the flag needs a value).
    const: str | None = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def env(self) -> str:
        return "MCP_RUNTIME_" + self.dest.upper()


_FLAGS = (
    _Flag("transport", "how clients connect", "stdio", choices=_TRANSPORTS),
    _Flag("host", "address to bind", "127.0.0.1", transports=_NETWORK),
    _Flag(
        "port",
        "port to bind (default 8000 for http, sse and ws; for tcp a free port, printed)",
        type=_port,
        metavar="N",
        transports=_NETWORK,
    ),
    _Flag(
        "path",
        "endpoint path (default /mcp; /sse for --transport sse)",
        transports=_WEB,
    ),
    _Flag("socket", "the Unix socket's path", metavar="PATH", transports=("unix",)),
    _Flag(
        "pipe-dir",
        "directory of the FIFO pair to-server/from-server (POSIX only)",
        metavar="DIR",
        transports=("pipe",),
    ),
    _Flag(
        "framing",
        "message framing on streams: newline-delimited JSON or LSP-style Content-Length",
        "ndjson",
        choices=("ndjson", "content-length"),
        transports=_STREAMS,
    ),
    _Flag(
        "allowed-origins",
        "comma-separated Origin allow-list, e.g. https://app.example (default: loopback)",
        metavar="LIST",
        transports=_WEB,
    ),
    _Flag(
        "allowed-hosts",
        "comma-separated Host allow-list, name or name:port (default: loopback names)",
        metavar="LIST",
        transports=_WEB,
    ),
    _Flag(
        "max-connections",
        "concurrent HTTP/WebSocket connections; past it, 503 (default 1000)",
        type=_positive_int,
        metavar="N",
        transports=_WEB,
    ),
    _Flag(
        "max-connections-per-address",
        "concurrent HTTP/WebSocket connections from one client address; past it, 503 "
        "(default: half of --max-connections; behind a proxy, set it to --max-connections)",
        type=_positive_int,
        metavar="N",
        transports=_WEB,
    ),
    _Flag(
        "sse-retry-ms",
        "the SSE retry interval sent to HTTP clients (default 1000)",
        type=_positive_int,
        metavar="N",
        transports=("http", "sse"),
    ),
    _Flag(
        "store",
        "shared state for many workers or replicas: redis://host:port/db (default: memory)",
        metavar="URL",
        transports=_LISTENING,
    ),
    _Flag(
        "workers",
        "worker processes sharing the listening socket; more than 1 with http or sse needs --store",
        1,
        type=_positive_int,
        metavar="N",
        transports=_LISTENING,
    ),
    _Flag(
        "metrics",
        "serve request metrics as Prometheus text at PATH (bare --metrics: /metrics; default: off)",
        metavar="PATH",
        transports=("http", "sse"),
        const="/metrics",
    ),
    _Flag(
        "metrics-token",
        "the bearer token GET --metrics needs (Authorization: Bearer TOKEN; else 401); "
        "prefer the environment variable, a command line is visible to other users",
        metavar="TOKEN",
        transports=("http", "sse"),
    ),
    _Flag(
        "max-in-flight",
        "requests running at once per connection; past it, -32010 (default 64)",
        type=_positive_int,
        metavar="N",
    ),
    _Flag(
        "request-timeout",
        "seconds a request may run before -32001 (default: no limit)",
        type=_positive_float,
        metavar="SECONDS",
    ),
    _Flag(
        "log-level",
        "debug logs one line per request (method, id, duration, outcome; never arguments)",
        "info",
        choices=("debug", "info", "warning", "error", "critical"),
    ),
    _Flag(
        "log-format",
        "log lines as key=value text or as JSON objects",
        "text",
        choices=("text", "json"),
    ),
    # A remote TARGET (docs/bridges.md): how the proxy reaches it. Refused for a file TARGET.
    _Flag(
        "upstream-era",
        "a remote TARGET's protocol era: auto probes 2026-07-28 and falls back to initialize "
        "(default auto)",
        choices=("auto", "modern", "handshake"),
    ),
    _Flag(
        "upstream-retries",
        "a remote TARGET's reconnection attempts after a lost link, 0 = none (default 8)",
        type=_non_negative_int,
        metavar="N",
    ),
    _Flag(
        "upstream-backoff-max",
        "a remote TARGET's longest wait between reconnection attempts (default 10)",
        type=_positive_float,
        metavar="SECONDS",
    ),
    _Flag(
        "upstream-retry-for",
        "a remote TARGET: no reconnection attempt starts this long after the link was lost "
        "(default 30)",
        type=_positive_float,
        metavar="SECONDS",
    ),
    _Flag(
        "max-upstream-sessions",
        "a remote TARGET: upstream sessions held at once, one per downstream session (default 64)",
        type=_positive_int,
        metavar="N",
    ),
    _Flag(
        "upstream-round-timeout",
        "a remote TARGET: how long its question (sampling, elicitation, roots, an input round) "
        "waits for our client's answer (default 300)",
        type=_positive_float,
        metavar="SECONDS",
    ),
    _Flag(
        "upstream-max-parallel",
        "a remote TARGET over TCP, Unix, WebSocket, legacy SSE or stdio: 2026-07-28 requests "
        "that can be asked questions forwarded at once, each beyond the first on an extra "
        "upstream session of its own (default 4; 1 over stdio and pipes: one at a time)",
        type=_positive_int,
        metavar="N",
    ),
    _Flag(
        "upstream-parallel-idle",
        "a remote TARGET: how long an extra upstream session of --upstream-max-parallel "
        "stays open unused (default 30)",
        type=_positive_float,
        metavar="SECONDS",
    ),
    _Flag(
        "upstream-poll-max",
        "a remote TARGET: the longest wait between two polls of its task run for our client "
        "(default 5)",
        type=_positive_float,
        metavar="SECONDS",
    ),
    _Flag(
        "upstream-call-timeout",
        "a remote TARGET: how long the proxy waits for its answer to a request before "
        "cancelling it there and answering -32001 (default 300)",
        type=_positive_float,
        metavar="SECONDS",
    ),
    _Flag(
        "max-upstream-processes",
        "a stdio: TARGET: its processes running at once, one per upstream session; past it "
        "a new session is refused with -32010 (default 16)",
        type=_positive_int,
        metavar="N",
    ),
)

#: The flags that configure the proxy of a remote TARGET (bridge.proxy_server's arguments).
_UPSTREAM_FLAGS = (
    "upstream_era",
    "upstream_retries",
    "upstream_backoff_max",
    "upstream_retry_for",
    "max_upstream_sessions",
    "upstream_round_timeout",
    "upstream_poll_max",
    "upstream_max_parallel",
    "upstream_parallel_idle",
    "upstream_call_timeout",
    "max_upstream_processes",
)


def _help(flag: _Flag) -> str:
    default = "" if flag.default is None else f" (default {flag.default})"
    where = (
        "" if flag.transports is None else f"; only with --transport {'|'.join(flag.transports)}"
    )
    return f"{flag.help}{default}{where}; env {flag.env}"


def build_parser(*, tools: bool = True) -> argparse.ArgumentParser:
    """The CLI's parser; ``tools=False`` leaves out ``dev`` and ``install`` (``serve`` does
    not need them, and building them costs its start-up time, issue 22)."""
    import argparse  # here: a plain ``serve`` is read without it (_plain_serve)

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            self.exit(2, f"{self.prog}: error: {message}\n")

    parser = _Parser(
        prog="mcp-runtime",
        description="A trio-native runtime for MCP servers. Client commands: "
        "list, call, read, inspect TARGET (mcp-runtime call --help).",
    )
    parser.add_argument("--version", action="version", version=f"mcp-runtime {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    serve = commands.add_parser(
        "serve",
        help="serve an MCP server object",
        description="Serve an MCP server object. Every flag can also come from its "
        "MCP_RUNTIME_* environment variable; the command line wins.",
    )
    serve.add_argument(
        "target",
        metavar="TARGET",
        help="path/file.py[:obj] or package.module[:obj]; without :obj, finds app, server or mcp",
    )
    for flag in _FLAGS:
        serve.add_argument(
            f"--{flag.name}",
            dest=flag.dest,
            type=(str.lower if flag.dest == "log_level" else flag.type),
            choices=flag.choices,
            metavar=flag.metavar,
            default=None,
            help=_help(flag),
            nargs="?" if flag.const is not None else None,
            const=flag.const,
        )
    serve.add_argument(
        "--middleware",
        metavar="MODULE:OBJ",
        action="append",
        default=_env_middleware(),
        help="add middleware (repeatable; comma-separated in MCP_RUNTIME_MIDDLEWARE)",
    )
    if tools:
        from ._cli_tools import add_commands

        add_commands(commands)
    return parser


def _env_middleware() -> list[str]:
    """``--middleware``'s default: the comma-separated ``MCP_RUNTIME_MIDDLEWARE``."""
    return [m for m in os.environ.get("MCP_RUNTIME_MIDDLEWARE", "").split(",") if m]


#: The ``serve`` flags by their full spelling, for :func:`_plain_serve`.
_BY_OPTION = {f"--{flag.name}": flag for flag in _FLAGS}


def _plain_serve(arguments: Sequence[str]) -> SimpleNamespace | None:
    """``serve TARGET`` and flags each given in full as ``--name value`` or ``--name=value``,
    read as argparse reads them, without argparse: importing and building it were about
    15M instructions, 2.7% of ``python -c "import trio, msgspec"``, in a stdio server's spawn
    to first reply (callgrind; issue 22, target 6). None for anything else (help, an
    abbreviated or unknown flag, a value that is missing, starts with ``-`` or does not
    convert, a flag whose value is optional, ``--middleware``, a second TARGET, ...): argparse
    then reads it, and reports what is wrong. ``tests/test_cli_plain.py`` holds both to the
    same reading."""
    if not arguments or arguments[0] != "serve":
        return None
    values: dict[str, Any] = {flag.dest: None for flag in _FLAGS}
    target: str | None = None
    rest = iter(arguments[1:])
    for token in rest:
        if not token.startswith("-"):
            if target is not None:
                return None
            target = token
            continue
        option, equals, value = token.partition("=")
        flag = _BY_OPTION.get(option)
        if flag is None or flag.const is not None:
            return None
        if not equals:
            following = next(rest, None)
            if following is None or following.startswith("-"):
                return None
            value = following
        convert = str.lower if flag.dest == "log_level" else flag.type
        try:
            given = convert(value)
        except (TypeError, ValueError):
            return None
        if flag.choices is not None and given not in flag.choices:
            return None
        values[flag.dest] = given
    if target is None:
        return None
    return SimpleNamespace(command="serve", target=target, middleware=_env_middleware(), **values)


def _settings(args: argparse.Namespace | SimpleNamespace) -> dict[str, Any]:
    """Every flag's value: the command line's, else its environment variable's (checked like
    the flag; an error names the variable), else the default. Flags given on the command line
    for a transport they do not apply to are refused."""
    values: dict[str, Any] = {}
    for flag in _FLAGS:
        given = getattr(args, flag.dest)
        if given is None and flag.env in os.environ:
            raw = os.environ[flag.env]
            try:
                given = flag.type(raw)
            except ValueError:
                kind = getattr(flag.type, "__name__", "value")
                raise UsageError(
                    f"invalid {flag.env} {raw!r} (--{flag.name}): expected a {kind}"
                ) from None
            if flag.choices is not None and given not in flag.choices:
                raise UsageError(
                    f"invalid {flag.env} {raw!r} (--{flag.name}): choose from "
                    + ", ".join(flag.choices)
                )
        values[flag.dest] = flag.default if given is None else given
    transport = values["transport"]
    for flag in _FLAGS:
        applies = flag.transports is None or transport in flag.transports
        if getattr(args, flag.dest) is not None and not applies:
            raise UsageError(
                f"--{flag.name} does not apply to --transport {transport} "
                f"(only {', '.join(flag.transports or ())})"
            )
    if values["port"] is None and transport in _DEFAULT_PORTS:
        values["port"] = _DEFAULT_PORTS[transport]
    if transport == "unix" and not values["socket"]:
        raise UsageError("--transport unix needs --socket PATH (or MCP_RUNTIME_SOCKET)")
    if transport == "pipe" and not values["pipe_dir"]:
        raise UsageError("--transport pipe needs --pipe-dir DIR (or MCP_RUNTIME_PIPE_DIR)")
    metrics = values["metrics"]
    if metrics is not None and not metrics.startswith("/"):
        raise UsageError(f"--metrics {metrics!r}: expected a path such as /metrics")
    if values["metrics_token"] and metrics is None:
        raise UsageError("--metrics-token needs --metrics (the endpoint is off without it)")
    if values["metrics_token"]:
        from .auth import BEARER_TOKEN_SYNTAX, is_bearer_token

        if not is_bearer_token(values["metrics_token"]):
            raise UsageError(f"--metrics-token: {BEARER_TOKEN_SYNTAX}")
    return values


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


#: TARGETs that name a remote MCP server to proxy rather than a file or module.
_PROXY_PREFIXES = ("http://", "https://", "ws://", "wss://", "tcp://", "unix:", "pipe:", "stdio:")


def _proxy_options(upstream: Mapping[str, Any]) -> dict[str, Any]:
    """``proxy_server`` arguments from the ``--upstream-*`` settings (None: not given)."""
    from .client import Backoff

    options: dict[str, Any] = {}
    if upstream.get("upstream_era") is not None:
        options["era"] = upstream["upstream_era"]
    if upstream.get("max_upstream_sessions") is not None:
        options["max_upstream_sessions"] = upstream["max_upstream_sessions"]
    if upstream.get("upstream_round_timeout") is not None:
        options["round_timeout"] = upstream["upstream_round_timeout"]
    if upstream.get("upstream_poll_max") is not None:
        options["max_poll_interval"] = upstream["upstream_poll_max"]
    if upstream.get("upstream_max_parallel") is not None:
        options["max_parallel"] = upstream["upstream_max_parallel"]
    if upstream.get("upstream_parallel_idle") is not None:
        options["parallel_idle_timeout"] = upstream["upstream_parallel_idle"]
    if upstream.get("upstream_call_timeout") is not None:
        options["call_timeout"] = upstream["upstream_call_timeout"]
    if upstream.get("max_upstream_processes") is not None:
        options["max_upstream_processes"] = upstream["max_upstream_processes"]
    policy: dict[str, Any] = {}
    if upstream.get("upstream_retries") is not None:
        policy["max_attempts"] = upstream["upstream_retries"]
    if upstream.get("upstream_backoff_max") is not None:
        policy["cap"] = upstream["upstream_backoff_max"]
    if upstream.get("upstream_retry_for") is not None:
        policy["max_elapsed"] = upstream["upstream_retry_for"]
    if policy:
        options["backoff"] = Backoff(**policy)
    return options


def load_target(target: str, *, upstream: Mapping[str, Any] | None = None) -> Server:
    """Import TARGET and return its Server. Raises UsageError with a one-line reason.
    ``upstream``: the ``--upstream-*`` settings, for a remote TARGET only."""
    from ._server import Server

    given = [name for name, value in (upstream or {}).items() if value is not None]
    if target.startswith(_PROXY_PREFIXES):
        # A remote server served through ours (docs/bridges.md): a URL, or stdio:COMMAND.
        from .bridge import proxy_server, proxy_target

        try:
            return proxy_server(proxy_target(target), **_proxy_options(upstream or {}))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UsageError(f"{flag} applies only to a remote TARGET (a URL or stdio:COMMAND)")
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


class _JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (and the traceback, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        import json  # only for --log-format json (start-up time, issue 22)

        from .framing import escape_json_text

        # The encoder escapes U+0000-U+001F only; U+2028 and the like would still break a
        # line for some readers (``escape_json_text``).
        return escape_json_text(json.dumps(entry, ensure_ascii=False))


#: What a terminal or a line-oriented reader takes for a line break or a control sequence
#: (str.splitlines' separators, C0 but the tab, DEL, C1).
_BREAKS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_break(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # "\\n", "\\x1b", "\\u2028"


class _TextFormatter(logging.Formatter):
    """``--log-format text``: a record's first line starts at column 0 and nothing else
    does. A line break or control character in the message is escaped and a traceback is
    indented, so that text in a log line, whoever chose it (the sites that log what a peer
    sent escape it already: ``runtime.framing.loggable``; an exception's message may
    carry it too), cannot start a line that reads as a record of its own."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return _BREAKS.sub(_escape_break, super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return _indent(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indent(super().formatStack(stack_info))


def _indent(text: str) -> str:
    return "\n".join("  " + _BREAKS.sub(_escape_break, line) for line in text.split("\n"))


def _workers_refusal(settings: dict[str, Any], workers: int) -> str | None:
    """Why ``--workers N`` cannot run with these settings (one line), or None."""
    transport = settings["transport"]
    if transport not in _LISTENING:
        return (
            f"--workers {workers} needs a listening transport ({', '.join(_LISTENING)}): "
            f"--transport {transport} has one client, on this one process"
        )
    store = settings["store"]
    if transport in _SESSIONS_SPAN_CONNECTIONS and (not store or store.startswith("memory")):
        what = "handshake-era" if transport == "http" else "2024-11-05 HTTP+SSE"
        return (
            f"--workers {workers} needs --store redis://host:port/db: {what} sessions "
            "live in one process's memory, so another worker would answer 404 to them"
        )
    return None


def _configure_logging(level: str, log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(
            _TextFormatter("%(asctime)s level=%(levelname)s logger=%(name)s %(message)s")
        )
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


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
    permanent generation, which no collection walks (nor the exit's). Measured with
    callgrind (issue 22, target 6): spawn -> first ``initialize`` reply on stdio 634M ->
    618M instructions (2.5%; ``python -c "import trio, msgspec"`` is 498M), and the
    process's exit 53M -> 9M. The price: cyclic garbage made while importing is never
    freed (a few objects, once)."""
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
        from .client import cli_main  # the client's own commands

        return cli_main(arguments)
    args: argparse.Namespace | SimpleNamespace | None = _plain_serve(arguments)
    if args is None:
        parser = build_parser(tools=arguments[:1] != ["serve"])
        args = parser.parse_args(arguments)
        if args.command in ("dev", "install"):
            from ._cli_tools import run_command

            return run_command(args)
        if args.command != "serve":
            parser.print_help(sys.stderr)
            return 2
    try:
        settings = _settings(args)
    except UsageError as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return 2
    transport = settings["transport"]
    _configure_logging(settings["log_level"], settings["log_format"])
    try:
        upstream = {name: settings[name] for name in _UPSTREAM_FLAGS}
        if transport == "stdio":
            with _stdout_to_stderr(), _collector_paused():
                server = load_target(args.target, upstream=upstream)
        else:
            with _collector_paused():
                server = load_target(args.target, upstream=upstream)
        if args.middleware:
            from ._cli_tools import add_middleware_specs

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
        refused = _workers_refusal(settings, workers)
        if refused:
            print(f"mcp-runtime: error: {refused}", file=sys.stderr)
            return 2
    if settings["store"]:
        from .stores import open_store

        try:
            server.store = open_store(settings["store"])
        except ValueError as exc:
            print(f"mcp-runtime: error: --store: {exc}", file=sys.stderr)
            return 2
    if workers > 1:
        from ._workers import bind_socket, bind_unix_socket, supervise

        try:
            if transport == "unix":
                sock = bind_unix_socket(settings["socket"])
            else:
                sock = bind_socket(settings["host"], int(settings["port"]))
        except OSError as exc:
            print(f"mcp-runtime: error: {_bind_error(exc, transport, settings)}", file=sys.stderr)
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
    options = _serve_options(server, transport, settings)
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

    from ._lifetime import ServerCrashed  # loaded with the server by now

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
            reason = (
                _bind_error(cause, transport, settings) if isinstance(cause, OSError) else cause
            )
            print(f"mcp-runtime: error: {reason}", file=sys.stderr)
        return 1
    return 0


def _serve_options(server: Server, transport: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The ``serve_*`` keyword arguments for ``transport`` from the resolved settings."""
    # A worker of --workers N accepts on its supervisor's listening socket.
    listen_fd = os.environ.get("MCP_RUNTIME_LISTEN_FD")
    shared = socket.socket(fileno=int(listen_fd)) if listen_fd and transport in _LISTENING else None
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
    if http_changes:
        import dataclasses

        from .transports import HttpLimits

        base = server.http_limits or HttpLimits()
        options["http_limits"] = dataclasses.replace(base, **http_changes)
    if settings["metrics"] is not None:
        from .middleware import Metrics

        options["metrics"] = Metrics()
        options["metrics_path"] = settings["metrics"]
        if settings["metrics_token"]:
            options["metrics_token"] = settings["metrics_token"]
    return options


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
