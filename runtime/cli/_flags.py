"""``mcp-runtime serve``'s flags: the table, their two readings and the settings they give.

Every flag also reads an ``MCP_RUNTIME_<FLAG>`` environment variable (``--max-in-flight`` is
``MCP_RUNTIME_MAX_IN_FLIGHT``); a flag on the command line wins. A plain ``serve TARGET
--flag value ...`` is read without argparse (:func:`plain_serve`); everything else, and the
other commands, by the parser :func:`build_parser` makes. Usage errors are one line on
stderr and exit code 2 (:class:`UsageError`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from .. import __version__

if TYPE_CHECKING:
    import argparse

__all__ = [
    "FLAGS",
    "LISTENING",
    "UPSTREAM_FLAGS",
    "UsageError",
    "build_parser",
    "plain_serve",
    "read_settings",
    "workers_refusal",
]


class UsageError(Exception):
    """A bad TARGET or flag: reported as one line, exit code 2."""


_TRANSPORTS = ("stdio", "tcp", "unix", "http", "sse", "ws", "pipe")


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


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # (NaN too)
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
_non_negative_float.__name__ = "non-negative number"
_port.__name__ = "port (0-65535)"

_NETWORK = ("tcp", "http", "sse", "ws")
#: The transports that listen on a socket, which ``--workers`` processes can share.
LISTENING = ("http", "sse", "ws", "tcp", "unix")
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
    when the module is imported, a cost every ``mcp-runtime serve`` start-up would pay
    (benchmarks/README.md, "CLI start-up")."""

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


FLAGS = (
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
        "session-eviction",
        "at the cap of handshake-era HTTP sessions: end the least recently used idle one "
        "(lru) or refuse the new client with 503 (refuse) (default lru)",
        choices=("lru", "refuse"),
        transports=("http", "sse"),
    ),
    _Flag(
        "min-body-rate",
        "bytes per second a request body must keep up after its first 5 s; under it, 408 "
        "and the connection closed; 0: no minimum (default 500)",
        type=_non_negative_float,
        metavar="BYTES",
        transports=("http", "sse"),
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
        transports=LISTENING,
    ),
    _Flag(
        "workers",
        "worker processes sharing the listening socket; more than 1 with http or sse needs --store",
        1,
        type=_positive_int,
        metavar="N",
        transports=LISTENING,
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
        "auth",
        "who may call: oidc (people log in at --issuer, an OpenID provider; the runtime is "
        "the authorization server), github (a GitHub OAuth app) or dev (static users, no "
        "password: DEVELOPMENT ONLY); default: none, or what the server asked for with "
        "require_login",
        choices=("oidc", "github", "dev"),
        transports=("http",),
    ),
    _Flag(
        "issuer",
        "the upstream OpenID provider's issuer URL (--auth oidc)",
        metavar="URL",
        transports=("http",),
    ),
    _Flag(
        "client-id",
        "our client id at the upstream provider (--auth oidc or github)",
        metavar="ID",
        transports=("http",),
    ),
    _Flag(
        "client-secret-env",
        "the environment variable holding our client secret at the provider (--auth oidc "
        "or github; "
        "a secret on the command line is visible to other users)",
        metavar="VAR",
        transports=("http",),
    ),
    _Flag(
        "public-url",
        "the server's URL as clients reach it, e.g. https://mcp.example.com (--auth; default "
        "http://HOST:PORT): the issuer of its tokens, and the resource they are for",
        metavar="URL",
        transports=("http",),
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
UPSTREAM_FLAGS = (
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
    not need them, and building them would cost its start-up time)."""
    import argparse  # here: a plain ``serve`` is read without it (plain_serve)

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
    for flag in FLAGS:
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
        from ._commands import add_commands

        add_commands(commands)
    return parser


def _env_middleware() -> list[str]:
    """``--middleware``'s default: the comma-separated ``MCP_RUNTIME_MIDDLEWARE``."""
    return [m for m in os.environ.get("MCP_RUNTIME_MIDDLEWARE", "").split(",") if m]


#: The ``serve`` flags by their full spelling, for :func:`plain_serve`.
_BY_OPTION = {f"--{flag.name}": flag for flag in FLAGS}


def plain_serve(arguments: Sequence[str]) -> SimpleNamespace | None:
    """``serve TARGET`` and flags each given in full as ``--name value`` or ``--name=value``,
    read as argparse reads them, without argparse: importing and building it is a visible
    share of a stdio server's spawn to first reply (benchmarks/README.md, "CLI start-up"). None
    for anything else (help, an abbreviated or unknown flag, a value that is missing, starts
    with ``-`` or does not convert, a flag whose value is optional, ``--middleware``, a second
    TARGET, ...): argparse then reads it, and reports what is wrong.
    ``tests/cli/test_cli_plain.py`` holds both to the same reading."""
    if not arguments or arguments[0] != "serve":
        return None
    values: dict[str, Any] = {flag.dest: None for flag in FLAGS}
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


def read_settings(args: argparse.Namespace | SimpleNamespace) -> dict[str, Any]:
    """Every flag's value: the command line's, else its environment variable's (checked like
    the flag; an error names the variable), else the default. Flags given on the command line
    for a transport they do not apply to are refused."""
    values: dict[str, Any] = {}
    for flag in FLAGS:
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
    for flag in FLAGS:
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
        from ..auth import BEARER_TOKEN_SYNTAX, is_bearer_token

        if not is_bearer_token(values["metrics_token"]):
            raise UsageError(f"--metrics-token: {BEARER_TOKEN_SYNTAX}")
    if values["issuer"] and values["auth"] != "oidc":
        raise UsageError("--issuer needs --auth oidc")
    for name in ("client_id", "client_secret_env"):
        if values[name] and values["auth"] not in ("oidc", "github"):
            raise UsageError(f"--{name.replace('_', '-')} needs --auth oidc or github")
    if values["auth"] == "oidc" and not (values["issuer"] and values["client_id"]):
        raise UsageError("--auth oidc needs --issuer URL and --client-id ID")
    if values["auth"] == "github" and not (values["client_id"] and values["client_secret_env"]):
        raise UsageError("--auth github needs --client-id ID and --client-secret-env VAR")
    return values


def workers_refusal(settings: dict[str, Any], workers: int) -> str | None:
    """Why ``--workers N`` cannot run with these settings (one line), or None."""
    transport = settings["transport"]
    if transport not in LISTENING:
        return (
            f"--workers {workers} needs a listening transport ({', '.join(LISTENING)}): "
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
