"""``mcp-runtime list|call|read|inspect TARGET ...``: the client from a shell.

Exit status: 0 success; 1 the tool answered ``isError``; 2 a usage error (bad flag, unknown
tool, an argument the tool's input schema cannot take, a server file that cannot be loaded);
3 the server could not be reached or failed (transport lost, ``--timeout`` passed, a JSON-RPC
error, a malformed answer, a listing past its limits); 4 authorization failed (a login is
needed: ``mcp-runtime login URL``; refused; the token no longer accepted). An ``http(s)://``
target uses the login ``mcp-runtime login`` stored (``_login``). docs/cli.md is the reference.

What the server chooses (names, descriptions, text, error messages) is printed with its
control characters made visible (``\\x1b``), in every human-readable line whether stdout is a
terminal or not: an escape sequence in a tool's name must not retitle the window, clear the
screen or forge a line of output. ``--json`` prints the exact values, as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, Final, NoReturn, TextIO

import msgspec
import trio

from ..client import (
    RAISED,
    AudioContent,
    AuthorizationFailed,
    Backoff,
    CallToolResult,
    Client,
    ClientError,
    EmbeddedResource,
    Era,
    ImageContent,
    PeerError,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    Tool,
    TransportLost,
    is_server_file,
    open_client,
)
from ..protocol import METHOD_NOT_FOUND
from ._login import EXIT_AUTH, add_oauth_flags, oauth_for

__all__ = ["COMMANDS", "check_arguments", "coerce_arguments", "main", "signature"]

COMMANDS: Final = ("list", "call", "read", "inspect")
_KINDS: Final = ("tools", "resources", "templates", "prompts")
EXIT_OK: Final = 0
EXIT_TOOL_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_FAILED: Final = 3
#: How much later than a request's own timeout the command's deadline falls (seconds).
_DEADLINE_AFTER_REQUEST: Final = 0.5
#: What ``mcp-runtime serve`` prints, as its one line, before it exits 2 (runtime/cli/_main.py).
_SERVE_ERROR: Final = "mcp-runtime: error: "


class UsageError(Exception):
    """Reported as one line; exit status 2."""


# -- what the server chooses, made safe to print -----------------------------------------------

#: Bidirectional embeddings, overrides and isolates: no terminal acts on them, but they
#: reorder how the rest of a line reads ("Trojan Source", CVE-2021-42574).
_BIDI: Final = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _visible(keep: str) -> dict[int, str]:
    """A ``str.translate`` table: every C0 control, DEL and C1 control (ECMA-48; ESC starts
    every escape sequence, and C1's CSI, OSC and DCS do the same in one character) except
    those in ``keep``, and the bidi controls, as the escape Python would write."""
    table = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
    table.update({code: f"\\u{code:04x}" for code in _BIDI})
    for char in keep:
        del table[ord(char)]
    return table


#: Text whose lines are the server's to make: a tool's text result, a resource, instructions.
_TEXT: Final = _visible("\n\t")
#: One line: names, URIs, descriptions' first lines, the error line, log lines.
_LINE: Final = _visible("")
#: What ``json.dumps`` leaves raw in a string (it escapes only U+0000-U+001F, as RFC 8259
#: requires): the same value, escaped as JSON escapes it.
_JSON: Final = {code: f"\\u{code:04x}" for code in (*range(0x7F, 0xA0), *_BIDI)}


def safe_text(text: str) -> str:
    """``text`` with its control characters visible, newlines and tabs kept (CRLF read as
    a newline: a lone CR would let the text repaint the line it is on)."""
    return text.replace("\r\n", "\n").translate(_TEXT)


def safe_line(text: Any) -> str:
    """``text`` as one line, every control character visible (newlines too)."""
    return str(text).translate(_LINE)


def _json_text(value: Any) -> str:
    return json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False).translate(_JSON)


def _say(text: str = "", file: TextIO | None = None) -> None:
    print(text, file=file or sys.stdout)


class _SafeFormatter(logging.Formatter):
    """Log lines whose message (the server's stderr lines, its log notifications) is one
    line with its control characters visible; a traceback keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = safe_line(record.message)
        return super().formatMessage(record)


def _not_the_outcome(record: logging.LogRecord) -> bool:
    """Drop the client's record of a failure it also raises to the waiting request (a dead
    link): the CLI prints that failure once, as its one line, with its exit status."""
    return not getattr(record, RAISED, False)


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        _SafeFormatter("%(asctime)s level=%(levelname)s logger=%(name)s %(message)s")
    )
    handler.addFilter(_not_the_outcome)
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


# -- the command line ---------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _positive(text: str) -> float:
    value = float(text)
    if not 0 < value < math.inf:
        raise ValueError
    return value


_positive.__name__ = "positive number of seconds"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="http(s)://URL, ws(s)://URL, tcp://HOST:PORT, unix:PATH, pipe:DIR, "
        "path/server.py[:obj] (spawned with mcp-runtime serve) or a quoted command line",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print exact JSON (call: --json '{...}' gives arguments)",
    )
    parser.add_argument("--era", choices=("auto", "modern", "handshake"), default="auto")
    parser.add_argument("--framing", choices=("ndjson", "content-length"), default="ndjson")
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="an extra HTTP/WebSocket header (repeatable)",
    )
    parser.add_argument(
        "--bearer-token",
        default=os.environ.get("MCP_RUNTIME_BEARER_TOKEN"),
        metavar="TOKEN",
        help="send Authorization: Bearer TOKEN (default: $MCP_RUNTIME_BEARER_TOKEN)",
    )
    add_oauth_flags(parser)
    parser.add_argument(
        "--timeout",
        type=_positive,
        default=60.0,
        metavar="SECONDS",
        help="the whole command's deadline: connecting, listing, calling (60)",
    )
    parser.add_argument(
        "--retry-for",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="keep trying to reach a TCP/Unix/WebSocket/pipe/HTTP server this long (5)",
    )
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="warning",
        help="client log level; info shows a spawned server's stderr (warning)",
    )


def command_parser(command: str) -> argparse.ArgumentParser:
    """The parser of one command (``list``, ``call``, ``read`` or ``inspect``).

    Read with ``parse_intermixed_args``: flags may come anywhere, before or after the
    positionals (``call URL tool --json x=3``), as they may for most commands people know;
    argparse cannot do that through subparsers, hence one parser per command."""
    prog = f"mcp-runtime {command}"
    if command == "list":
        parser = _Parser(prog=prog, description="List tools, resources, templates or prompts.")
        _common(parser)
        parser.add_argument("kind", nargs="?", choices=_KINDS, help="(default: all the server has)")
    elif command == "call":
        parser = _Parser(prog=prog, description="Call a tool.")
        _common(parser)
        parser.add_argument("tool", metavar="TOOL")
        parser.add_argument(
            "arguments",
            nargs="*",
            default=[],  # else argparse counts it as required when TOOL is missing
            metavar="KEY=VALUE",
            help="arguments, each coerced by the tool's input schema (a=2 is 2 for an integer)",
        )
        parser.add_argument(
            "--args", dest="json_args", metavar="JSON", help="arguments as a JSON object"
        )
    elif command == "read":
        parser = _Parser(prog=prog, description="Read a resource.")
        _common(parser)
        parser.add_argument("uri", metavar="URI")
    else:
        parser = _Parser(prog=prog, description="Everything the server declares.")
        _common(parser)
    parser.set_defaults(command=command)
    return parser


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if not argv or argv[0] not in COMMANDS:
        print(f"mcp-runtime: error: expected one of {', '.join(COMMANDS)}", file=sys.stderr)
        return EXIT_USAGE
    command, rest = argv[0], argv[1:]
    # ``call ... --json '{...}'`` gives the arguments as a JSON object; a bare ``--json``
    # (not followed by an object) asks for JSON output, as for the other commands.
    if command == "call":
        for index, item in enumerate(rest[:-1]):
            if item == "--json" and rest[index + 1].lstrip().startswith("{"):
                rest[index : index + 2] = ["--args", rest[index + 1]]
                break
    args = command_parser(command).parse_intermixed_args(rest)
    _configure_logging(args.log_level)
    headers: dict[str, str] = {}
    json_args: dict[str, Any] = {}
    try:
        for item in args.header:
            name, sep, value = item.partition(":")
            if not sep or not name.strip():
                raise UsageError(f"--header {item!r}: expected NAME:VALUE")
            headers[name.strip()] = value.strip()
        if command == "call":
            json_args = _parse_json_object(args.json_args) if args.json_args else {}
            for item in args.arguments:
                if "=" not in item:
                    raise UsageError(f"argument {item!r}: expected KEY=VALUE")
    except UsageError as exc:
        return _fail(exc, EXIT_USAGE)
    try:
        return trio.run(_run, args, headers, json_args)
    except UsageError as exc:
        return _fail(exc, EXIT_USAGE)
    except AuthorizationFailed as exc:
        return _fail(exc, EXIT_AUTH)
    except TransportLost as exc:
        refusal = _load_refusal(args.target, exc)
        if refusal is not None:
            print(safe_line(refusal), file=sys.stderr)
            return EXIT_USAGE
        return _fail(exc, EXIT_FAILED)
    except (ClientError, ValueError) as exc:
        return _fail(exc, EXIT_FAILED)
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as a program killed by SIGPIPE
        # would (and keep Python from complaining again when it flushes stdout at exit).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _fail(error: Exception, status: int) -> int:
    """One line: the error's own sentence, never its class or repr."""
    print(f"mcp-runtime: error: {safe_line(error)}", file=sys.stderr)
    return status


def _load_refusal(target: str, error: TransportLost) -> str | None:
    """A server file that ``mcp-runtime serve`` refused to load (exit status 2 and its one
    line, e.g. no such file, a syntax error, no Server in it): that line, as ours."""
    if error.exit_status != EXIT_USAGE or not is_server_file(target):
        return None
    lines = [line for line in error.stderr if line.startswith(_SERVE_ERROR)]
    return lines[-1] if lines else None


def _parse_json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--json: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--json: expected a JSON object")
    return value


async def _run(args: argparse.Namespace, headers: dict[str, str], json_args: dict[str, Any]) -> int:
    era: Era = args.era
    # --timeout bounds the whole command (a server that pages without end, or answers each
    # request just in time, must not hold a shell past it). Each request has it too, and the
    # command's deadline comes a moment after: a first request that runs out of time says
    # why itself (still connecting, say), rather than this generic line.
    # An http(s) target uses the stored login (``mcp-runtime login``) unless a bearer token
    # is given; it never opens a browser from here.
    http = args.target.strip().startswith(("http://", "https://"))
    auth = oauth_for(args) if http and args.bearer_token is None else None
    with trio.move_on_after(args.timeout + _DEADLINE_AFTER_REQUEST):
        async with open_client(
            args.target,
            era=era,
            framing=args.framing,
            headers=headers,
            bearer_token=args.bearer_token,
            auth=auth,
            timeout=args.timeout,
            connect_timeout=min(10.0, args.timeout),
            backoff=Backoff(max_elapsed=args.retry_for, cap=2.0),
        ) as client:
            if args.command == "list":
                return await _list(client, args.kind, args.json)
            if args.command == "call":
                return await _call(client, args.tool, args.arguments, json_args, args.json)
            if args.command == "read":
                return _print_read(await client.read_resource(args.uri), args.json)
            return await _inspect(client, args.json)
    raise ClientError(f"no result within --timeout {args.timeout:g} s")


def _dump(value: Any) -> None:
    _say(_json_text(value))


async def _listing(client: Client, kind: str) -> list[Any]:
    """One kind, all pages; [] when the server does not offer that feature."""
    capability = {"tools": "tools", "resources": "resources", "templates": "resources"}.get(
        kind, "prompts"
    )
    if capability not in (client.description.capabilities if client.description else {}):
        return []
    try:
        if kind == "tools":
            return await client.all_tools()
        if kind == "resources":
            return await client.all_resources()
        if kind == "templates":
            return await client.all_resource_templates()
        return await client.all_prompts()
    except PeerError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return []
        raise


async def _list(client: Client, kind: str | None, as_json: bool) -> int:
    kinds = [kind] if kind else list(_KINDS)
    found = {name: await _listing(client, name) for name in kinds}
    if as_json:
        _dump(found[kind] if kind else found)
        return EXIT_OK
    for name in kinds:
        if not kind:
            _say(f"{name}:")
        for item in found[name]:
            _say(("  " if not kind else "") + _line(name, item))
    return EXIT_OK


def _line(kind: str, item: Any) -> str:
    description = (getattr(item, "description", None) or "").strip().splitlines()
    tail = f"  {safe_line(description[0])}" if description else ""
    name = safe_line(item.name)
    if kind == "tools":
        return f"{name}({signature(item)}){tail}"
    if kind == "resources":
        return f"{safe_line(item.uri)}  {name}{tail}"
    if kind == "templates":
        return f"{safe_line(item.uri_template)}  {name}{tail}"
    arguments = ", ".join(safe_line(a.name) + ("" if a.required else "?") for a in item.arguments)
    return f"{name}({arguments}){tail}"


# -- input schemas as text ----------------------------------------------------------------------

#: How deep a parameter's schema is spelled out: a model's fields are shown, a model inside
#: one by its name only (a line per tool stays a line; a recursive model stays finite).
_SPELLED_DEPTH: Final = 2
#: Past this, a schema (nested anyOf/array/$ref chains) is "...".
_MAX_DEPTH: Final = 8


def _resolve(spec: Any, root: dict[str, Any]) -> Any:
    """``spec`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``, as pydantic and
    JSON Schema 2020-12 write them) followed, a few hops at most; a reference it cannot
    follow (elsewhere, missing, or a chain that loops) stays as it is."""
    found = spec
    for _hop in range(_MAX_DEPTH):
        ref = found.get("$ref") if isinstance(found, dict) else None
        if not isinstance(ref, str):
            return found
        if not ref.startswith("#/"):
            return spec
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")  # RFC 6901 escapes
            target = target.get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            return spec
        found = target
    return spec


def _schema_text(spec: Any, root: dict[str, Any], depth: int = 0) -> str:
    """A schema as a short type: ``integer``, ``string|null``, ``array[integer]``,
    ``"a"|"b"``, a model as ``Name{field: type, optional?: type}`` (deeper: ``Name``)."""
    if depth > _MAX_DEPTH:
        return "..."
    if not isinstance(spec, dict):
        return "any"
    ref = spec.get("$ref")
    target = _resolve(spec, root)
    if isinstance(ref, str) and target is spec:
        return ref.rsplit("/", 1)[-1] or "any"  # a reference it cannot follow: its name
    spec = target
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if isinstance(options, list) and options:
            texts = (_schema_text(option, root, depth + 1) for option in options)
            return "|".join(dict.fromkeys(texts))
    all_of = spec.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return _schema_text(all_of[0], root, depth + 1)
    if "const" in spec:
        return json.dumps(spec["const"], ensure_ascii=False)
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return "|".join(json.dumps(value, ensure_ascii=False) for value in enum)
    kind = spec.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if not kinds and isinstance(spec.get("properties"), dict):
        kinds = ["object"]
    if not kinds:
        return "any"
    return "|".join(_one_type(str(k), spec, root, depth) for k in kinds)


def _one_type(kind: str, spec: dict[str, Any], root: dict[str, Any], depth: int) -> str:
    if kind == "array":
        items = spec.get("items")
        return f"array[{_schema_text(items, root, depth + 1)}]" if items else "array"
    if kind != "object":
        return kind
    title = spec.get("title")
    name = title if isinstance(title, str) and title else "object"
    properties = spec.get("properties")
    if not isinstance(properties, dict) or not properties or depth >= _SPELLED_DEPTH:
        return name
    return f"{'' if name == 'object' else name}{{{_fields(spec, root, depth + 1)}}}"


def _fields(spec: dict[str, Any], root: dict[str, Any], depth: int = 0) -> str:
    """``name: type`` for each property, ``name?`` when it is not required."""
    properties = spec.get("properties")
    if not isinstance(properties, dict):
        return ""
    required = spec.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return ", ".join(
        f"{name}{'' if name in needed else '?'}: {_schema_text(value, root, depth)}"
        for name, value in properties.items()
    )


def signature(tool: Tool) -> str:
    """The tool's parameters as one line: ``a: integer, b?: string|null``, a pydantic model
    parameter as ``Customer{name: string, age: integer, address?: Address|null}``."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    return safe_line(_fields(schema, schema))


# -- arguments ----------------------------------------------------------------------------------

_TRUE: Final = ("true", "yes", "on", "1")
_FALSE: Final = ("false", "no", "off", "0")


def _coerce_one(text: str, schema: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """``text`` as the JSON value ``schema`` asks for; ValueError when it cannot be."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or not schema or depth > _MAX_DEPTH:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            ordered = sorted(options, key=lambda o: _preference(text, _resolve(o, root)))
            for option in ordered:
                try:
                    return _coerce_one(text, option, root, depth + 1)
                except ValueError:
                    continue
            raise ValueError(f"{text!r} matches none of the allowed types")
    if "enum" in schema and text in [str(v) for v in schema["enum"]]:
        return next(v for v in schema["enum"] if str(v) == text)
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    if not kinds and isinstance(schema.get("properties"), dict):
        kinds = ["object"]
    if not kinds:
        return _coerce_one(text, None, root, depth + 1)
    errors = []
    for kind in sorted(kinds, key=lambda k: _preference(text, {"type": k})):
        try:
            return _as_type(text, kind)
        except ValueError as exc:
            errors.append(str(exc))
    raise ValueError("; ".join(errors))


def _preference(text: str, schema: Any) -> int:
    """The order in which a value is tried against a union's types: ``null`` first for the
    literal text ``null`` (else there is no way to pass null), then ``string`` ("007" stays
    "007" for string|integer), then the rest."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "null":
        return 0 if text == "null" else 2
    return 1 if kind == "string" else 2


def _as_type(text: str, kind: str) -> Any:
    if kind == "string":
        return text
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            pass
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if value.is_integer():
            return int(value)
        raise ValueError(f"{text!r} is not an integer")
    if kind == "number":
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                raise ValueError(f"{text!r} is not a number") from None
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{text!r} is not a boolean (true/false)")
    if kind == "null":
        if text in ("null", ""):
            return None
        raise ValueError(f"{text!r} is not null")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"{text!r} is not JSON ({kind})") from None
    if kind == "array" and isinstance(value, list):
        return value
    if kind == "object" and isinstance(value, dict):
        return value
    raise ValueError(f"{text!r} is not an {kind}")


def _takes(tool: Tool) -> str:
    """What the tool takes, for an error message: ``add takes a: integer, b: integer``."""
    parameters = signature(tool)
    name = safe_line(tool.name)
    return f"{name} takes {parameters}" if parameters else f"{name} takes no arguments"


def _check_keys(tool: Tool, keys: Iterable[str]) -> None:
    """Refuse a key the tool has no parameter for: the server would drop it (or refuse the
    call as the tool's error), and a misspelt name would go unnoticed. A schema that allows
    more (``additionalProperties`` true or a schema, or no ``properties`` at all) takes any."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    if not isinstance(properties, dict) or extra is True or isinstance(extra, dict):
        return
    unknown = [key for key in keys if key not in properties]
    if unknown:
        listed = ", ".join(repr(key) for key in unknown)
        noun = "parameter" if len(unknown) == 1 else "parameters"
        raise UsageError(f"{safe_line(tool.name)} has no {noun} {listed} ({_takes(tool)})")


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """Raise :class:`UsageError` for an argument the tool does not take, or a required one
    missing, naming the parameters the tool takes."""
    _check_keys(tool, arguments)
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    required = schema.get("required")
    missing = (
        [key for key in required if key not in arguments] if isinstance(required, list) else []
    )
    if missing:
        noun = "argument" if len(missing) == 1 else "arguments"
        raise UsageError(
            f"{safe_line(tool.name)}: missing required {noun} {', '.join(map(str, missing))} "
            f"({_takes(tool)})"
        )


def coerce_arguments(tool: Tool, pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs as the tool's arguments, each value coerced by the tool's input
    schema. Raises :class:`UsageError` naming the argument that does not fit."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    extra = schema.get("additionalProperties")
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        _check_keys(tool, [key])
        try:
            arguments[key] = _coerce_one(
                text, properties.get(key, extra if isinstance(extra, dict) else None), schema
            )
        except ValueError as exc:
            raise UsageError(f"{safe_line(tool.name)}: argument {key}: {exc}") from None
    return arguments


async def _call(
    client: Client, name: str, pairs: Sequence[str], json_args: dict[str, Any], as_json: bool
) -> int:
    tools = {tool.name: tool for tool in await client.all_tools()}
    tool = tools.get(name)
    if tool is None:
        raise UsageError(f"no tool {name!r} (tools: {', '.join(tools) or 'none'})")
    arguments = {**json_args, **coerce_arguments(tool, pairs)}
    check_arguments(tool, arguments)
    result = await client.call_tool(name, arguments)
    if as_json:
        _dump(result)
    else:
        _print_content(result)
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


def _print_content(result: CallToolResult) -> None:
    out = sys.stdout if not result.is_error else sys.stderr
    if not result.content and result.structured_content is not None:
        _say(_json_text(result.structured_content), out)
    for block in result.content:
        if isinstance(block, TextContent):
            _say(safe_text(block.text), out)
        elif isinstance(block, (ImageContent, AudioContent)):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            _say(f"[{kind} {safe_line(block.mime_type)}, {len(block.data)} base64 chars]", out)
        elif isinstance(block, ResourceLink):
            _say(f"[link {safe_line(block.uri)} {safe_line(block.name)}]", out)
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            text = resource.text
            _say(safe_text(text) if text is not None else f"[blob {safe_line(resource.uri)}]", out)


def _print_read(result: ReadResourceResult, as_json: bool) -> int:
    if as_json:
        _dump(result)
        return EXIT_OK
    for item in result.contents:
        if item.text is not None:
            _say(safe_text(item.text))
        else:
            _say(
                f"[blob {safe_line(item.uri)} {safe_line(item.mime_type or '')} "
                f"{len(item.blob or '')} base64 chars]"
            )
    return EXIT_OK


async def _inspect(client: Client, as_json: bool) -> int:
    description = client.description
    assert description is not None
    found = {kind: await _listing(client, kind) for kind in _KINDS}
    if as_json:
        _dump(
            {
                "era": client.era,
                "protocolVersion": description.protocol_version,
                "serverInfo": description.server_info,
                "capabilities": description.capabilities,
                "instructions": description.instructions,
                "supportedVersions": description.supported_versions or None,
                "tools": found["tools"],
                "resources": found["resources"],
                "resourceTemplates": found["templates"],
                "prompts": found["prompts"],
            }
        )
        return EXIT_OK
    info = description.server_info
    name = safe_line(f"{info.name} {info.version}".strip()) if info else "(unnamed server)"
    _say(f"server: {name}")
    _say(f"protocol: {safe_line(description.protocol_version)} ({client.era} era)")
    if description.supported_versions:
        _say(f"supports: {safe_line(', '.join(description.supported_versions))}")
    capabilities = ", ".join(sorted(description.capabilities))
    _say(f"capabilities: {safe_line(capabilities) or 'none'}")
    if description.instructions:
        _say(f"instructions: {safe_text(description.instructions)}")
    for kind in _KINDS:
        items = found[kind]
        _say(f"{kind} ({len(items)}):")
        for item in items:
            _say("  " + _line(kind, item))
    return EXIT_OK
