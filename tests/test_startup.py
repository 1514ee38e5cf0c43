"""Start-up time (issue 22, target 6): what ``mcp-runtime serve`` over stdio leaves unloaded.

Spawn -> first ``initialize`` reply is held to 1.25x of ``python -c "import trio, msgspec"``
(the suite's "floor: spawn -> first initialize reply" row). Most of the gap was importing
modules the first reply never needs; these tests keep each module made lazy for it lazy, so
the gain cannot slip back unnoticed, and check that the names stay reachable.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from runtime import Context
from runtime.features import inspect_signature
from runtime.features._annotations import SchemaBuilder
from runtime.features._signature import _inline_schema

from .peers import ROOT, cli

#: Modules deliberately loaded on first use, each with the reason a stdio server with tools
#: and plain resources never needs it.
LAZY = {
    "runtime.stores": "the store seam: HTTP sessions and --store only",
    "runtime.stores._redis": "RedisStore: --store redis:// only",
    "runtime.stores._resp": "the RESP client: Redis only",
    "runtime.framing._content_length": "--framing content-length only",
    "runtime.framing._sse": "SSE: the HTTP transports only",
    "runtime.features._uritemplate": "RFC 6570: resource templates only",
    "runtime.transports._pipe": "--transport pipe only",
    "runtime.transports._socket": "--transport unix only",
    "runtime.core._single": "HTTP's one-request path only",
    "runtime.cli._commands": "the dev and install commands only",
    "runtime.cli._install": "the install command only",
    "runtime.cli._client_verbs": "the client commands (list, call, read, inspect) only",
    "runtime.ensemble._sharing": "a shared store's relays: the listening transports only",
    "runtime.ensemble._chains": "mounted servers' middleware only",
    "runtime.ensemble._workers": "--workers only",
    "json": "--log-format json only (msgspec does the protocol's JSON)",
    "dataclasses": "Limits, Refusal and the definitions are msgspec Structs (built in C)",
    "argparse": "help, errors and the other commands only (cli._flags.plain_serve reads the rest)",
}

SERVER = '''
import gc
import sys

from runtime import Server

app = Server("startup-probe", "1.0.0")


@app.tool
async def loaded(names: list[str]) -> dict:
    """Which of ``names`` this process has imported, and the collector's state."""
    return {
        "loaded": sorted(n for n in names if n in sys.modules),
        "gc_enabled": gc.isenabled(),
        "frozen": gc.get_freeze_count(),
    }


@app.resource("mem://note", mime_type="text/plain")
async def note() -> str:
    """A plain resource (no template)."""
    return "note"
'''


def _serve_stdio(server: Path, *messages: object) -> list[dict[str, object]]:
    """Run ``mcp-runtime serve SERVER`` over stdio with ``messages`` then EOF; its replies."""
    data = b"".join(msgspec.json.encode(m) + b"\n" for m in messages)
    out = subprocess.run(
        cli("serve", str(server)),
        input=data,
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr.decode()
    return [msgspec.json.decode(line) for line in out.stdout.splitlines()]


def test_a_stdio_server_leaves_the_lazy_modules_unloaded(tmp_path: Path) -> None:
    server = tmp_path / "probe.py"
    server.write_text(SERVER)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "startup-test", "version": "1"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "loaded", "arguments": {"names": sorted(LAZY)}},
    }
    read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "mem://note"}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    replies = _serve_stdio(server, initialize, initialized, call, read)
    by_id = {reply["id"]: reply for reply in replies}
    assert by_id[1]["result"]["serverInfo"]["name"] == "startup-probe"  # type: ignore[index]
    assert by_id[3]["result"]["contents"][0]["text"] == "note"  # type: ignore[index]
    state = by_id[2]["result"]["structuredContent"]  # type: ignore[index]
    # After the first reply and a call, none of them has been imported.
    assert state["loaded"] == [], {name: LAZY[name] for name in state["loaded"]}
    # The collector, paused while the server was imported, is back on; what the import
    # loaded sits in the permanent generation (gc.freeze), not walked by collections.
    assert state["gc_enabled"] is True
    assert state["frozen"] > 10_000


def test_the_probe_sees_a_loaded_module(tmp_path: Path) -> None:
    """The probe itself can fail: a module the server does import is reported."""
    server = tmp_path / "probe.py"
    server.write_text(SERVER)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "loaded",
            "arguments": {"names": ["runtime.framing._ndjson", "trio"]},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    (reply,) = _serve_stdio(server, call)
    state = reply["result"]["structuredContent"]  # type: ignore[index]
    assert state["loaded"] == ["runtime.framing._ndjson", "trio"]


@pytest.mark.parametrize(
    "package",
    ["runtime.core", "runtime.features", "runtime.framing", "runtime.stores", "runtime.transports"],
)
def test_lazy_names_resolve(package: str) -> None:
    """Every public name of a package with lazy names resolves, in a fresh interpreter (the
    lazy ones are loaded by the lookup itself, not by an earlier test's import)."""
    code = (
        f"import importlib; m = importlib.import_module({package!r}); "
        "missing = [n for n in m.__all__ if getattr(m, n, None) is None]; print(missing)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_unknown_names_still_raise() -> None:
    for package in ("runtime.core", "runtime.features", "runtime.framing", "runtime.stores"):
        module = importlib.import_module(package)
        with pytest.raises(AttributeError, match="no_such_name"):
            module.no_such_name  # noqa: B018


async def _touch(ctx: Context) -> str:
    """No arguments but the context.

    Args:
        ctx: not an argument of the schema.
    """
    return "touched"


def test_a_function_without_arguments_gets_the_schema_pass_s_empty_object() -> None:
    """Registration skips msgspec's schema pass for a function without arguments; the schema
    is the one that pass gives an empty struct."""
    sig = inspect_signature(_touch, name="touch", context_type=Context)
    empty = msgspec.defstruct("TouchArguments", [], kw_only=True)
    assert (
        sig.schema
        == _inline_schema(empty, SchemaBuilder())
        == {
            "type": "object",
            "properties": {},
        }
    )
    assert sig.names == () and sig.context_param == "ctx" and not sig.hooked
    assert msgspec.structs.asdict(sig.convert({})) == {}
