"""``mcp-runtime list|call|read|inspect TARGET ...``: the client from a shell.

Exit status: 0 success; 1 the tool answered ``isError``; 2 a usage error (bad flag, unknown
tool, an argument the tool's input schema cannot take); 3 the server could not be reached or
failed (transport lost, timeout, a JSON-RPC error, a malformed answer).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Sequence
from typing import Any, Final, NoReturn

import msgspec
import trio

from ._backoff import Backoff
from ._client import Client, Era
from ._errors import ClientError, PeerError
from ._open import open_client
from ._types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    Tool,
)
from ._wire import METHOD_NOT_FOUND

__all__ = ["COMMANDS", "coerce_arguments", "main"]

COMMANDS: Final = ("list", "call", "read", "inspect")
_KINDS: Final = ("tools", "resources", "templates", "prompts")
EXIT_OK: Final = 0
EXIT_TOOL_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_FAILED: Final = 3


class UsageError(Exception):
    """Reported as one line; exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="http(s)://URL, ws(s)://URL, tcp://HOST:PORT, unix:PATH, pipe:DIR, "
        "path/server.py[:obj] (spawned with mcp-runtime serve) or a quoted command line",
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON (call: --json '{...}' gives arguments)"
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
    parser.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="per request (60)"
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcp-runtime", description="Talk to an MCP server.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    listing = commands.add_parser("list", help="list tools, resources, templates or prompts")
    _common(listing)
    listing.add_argument("kind", nargs="?", choices=_KINDS, help="(default: all the server has)")
    call = commands.add_parser("call", help="call a tool")
    _common(call)
    call.add_argument("tool", metavar="TOOL")
    call.add_argument(
        "arguments",
        nargs="*",
        metavar="KEY=VALUE",
        help="arguments, each coerced by the tool's input schema (a=2 is 2 for an integer)",
    )
    call.add_argument("--args", dest="json_args", metavar="JSON", help="arguments as a JSON object")
    read = commands.add_parser("read", help="read a resource")
    _common(read)
    read.add_argument("uri", metavar="URI")
    inspect = commands.add_parser("inspect", help="everything the server declares")
    _common(inspect)
    return parser


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    # ``call ... --json '{...}'`` gives the arguments as a JSON object; a bare ``--json``
    # (not followed by an object) asks for JSON output, as for the other commands.
    if argv and argv[0] == "call":
        for index, item in enumerate(argv[:-1]):
            if item == "--json" and argv[index + 1].lstrip().startswith("{"):
                argv[index : index + 2] = ["--args", argv[index + 1]]
                break
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
    )
    headers: dict[str, str] = {}
    try:
        for item in args.header:
            name, sep, value = item.partition(":")
            if not sep or not name.strip():
                raise UsageError(f"--header {item!r}: expected NAME:VALUE")
            headers[name.strip()] = value.strip()
        if args.command == "call":
            json_args = _parse_json_object(args.json_args) if args.json_args else {}
            for item in args.arguments:
                if "=" not in item:
                    raise UsageError(f"argument {item!r}: expected KEY=VALUE")
    except UsageError as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return trio.run(_run, args, headers, json_args if args.command == "call" else {})
    except UsageError as exc:
        print(f"mcp-runtime: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ClientError, ValueError) as exc:
        print(f"mcp-runtime: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as a program killed by SIGPIPE
        # would (and keep Python from complaining again when it flushes stdout at exit).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


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
    async with open_client(
        args.target,
        era=era,
        framing=args.framing,
        headers=headers,
        bearer_token=args.bearer_token,
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


def _dump(value: Any) -> None:
    print(json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False))


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
            print(f"{name}:")
        for item in found[name]:
            print(("  " if not kind else "") + _line(name, item))
    return EXIT_OK


def _line(kind: str, item: Any) -> str:
    description = (getattr(item, "description", None) or "").strip().splitlines()
    tail = f"  {description[0]}" if description else ""
    if kind == "tools":
        return f"{item.name}({_signature(item)}){tail}"
    if kind == "resources":
        return f"{item.uri}  {item.name}{tail}"
    if kind == "templates":
        return f"{item.uri_template}  {item.name}{tail}"
    arguments = ", ".join(a.name + ("" if a.required else "?") for a in item.arguments)
    return f"{item.name}({arguments}){tail}"


def _signature(tool: Tool) -> str:
    schema = tool.input_schema
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, spec in properties.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        kind = "|".join(kind) if isinstance(kind, list) else kind
        parts.append(f"{name}{'' if name in required else '?'}: {kind}")
    return ", ".join(parts)


_TRUE: Final = ("true", "yes", "on", "1")
_FALSE: Final = ("false", "no", "off", "0")


def _coerce_one(text: str, schema: Any) -> Any:
    """``text`` as the JSON value ``schema`` asks for; ValueError when it cannot be."""
    if not isinstance(schema, dict) or not schema:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in sorted(options, key=lambda o: _preference(text, o.get("type"))):
                try:
                    return _coerce_one(text, option)
                except ValueError:
                    continue
            raise ValueError(f"{text!r} matches none of the allowed types")
    if "enum" in schema and text in [str(v) for v in schema["enum"]]:
        return next(v for v in schema["enum"] if str(v) == text)
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    if not kinds:
        return _coerce_one(text, None)
    errors = []
    for kind in sorted(kinds, key=lambda k: _preference(text, k)):
        try:
            return _as_type(text, kind)
        except ValueError as exc:
            errors.append(str(exc))
    raise ValueError("; ".join(errors))


def _preference(text: str, kind: Any) -> int:
    """The order in which a value is tried against a union's types: ``null`` first for the
    literal text ``null`` (else there is no way to pass null), then ``string`` ("007" stays
    "007" for string|integer), then the rest."""
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


def coerce_arguments(tool: Tool, pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs as the tool's arguments, each value coerced by the tool's input
    schema. Raises :class:`UsageError` naming the argument that does not fit."""
    properties = tool.input_schema.get("properties") or {}
    closed = tool.input_schema.get("additionalProperties") is False
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        if closed and key not in properties:
            raise UsageError(
                f"{tool.name} has no parameter {key!r} (parameters: {', '.join(properties)})"
            )
        try:
            arguments[key] = _coerce_one(text, properties.get(key))
        except ValueError as exc:
            raise UsageError(f"{tool.name}: argument {key}: {exc}") from None
    return arguments


async def _call(
    client: Client, name: str, pairs: Sequence[str], json_args: dict[str, Any], as_json: bool
) -> int:
    tools = {tool.name: tool for tool in await client.all_tools()}
    tool = tools.get(name)
    if tool is None:
        raise UsageError(f"no tool {name!r} (tools: {', '.join(tools) or 'none'})")
    arguments = {**json_args, **coerce_arguments(tool, pairs)}
    result = await client.call_tool(name, arguments)
    if as_json:
        _dump(result)
    else:
        _print_content(result)
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


def _print_content(result: CallToolResult) -> None:
    out = sys.stdout if not result.is_error else sys.stderr
    if not result.content and result.structured_content is not None:
        print(json.dumps(result.structured_content, indent=2, ensure_ascii=False), file=out)
    for block in result.content:
        if isinstance(block, TextContent):
            print(block.text, file=out)
        elif isinstance(block, (ImageContent, AudioContent)):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            print(f"[{kind} {block.mime_type}, {len(block.data)} base64 chars]", file=out)
        elif isinstance(block, ResourceLink):
            print(f"[link {block.uri} {block.name}]", file=out)
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            print(
                resource.text if resource.text is not None else f"[blob {resource.uri}]", file=out
            )


def _print_read(result: ReadResourceResult, as_json: bool) -> int:
    if as_json:
        _dump(result)
        return EXIT_OK
    for item in result.contents:
        if item.text is not None:
            print(item.text)
        else:
            print(f"[blob {item.uri} {item.mime_type or ''} {len(item.blob or '')} base64 chars]")
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
    name = f"{info.name} {info.version}".strip() if info else "(unnamed server)"
    print(f"server: {name}")
    print(f"protocol: {description.protocol_version} ({client.era} era)")
    if description.supported_versions:
        print(f"supports: {', '.join(description.supported_versions)}")
    print(f"capabilities: {', '.join(sorted(description.capabilities)) or 'none'}")
    if description.instructions:
        print(f"instructions: {description.instructions}")
    for kind in _KINDS:
        items = found[kind]
        print(f"{kind} ({len(items)}):")
        for item in items:
            print("  " + _line(kind, item))
    return EXIT_OK
