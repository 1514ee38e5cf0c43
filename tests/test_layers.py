"""DESIGN.md layering, checked on the import statements of every product module.

- dependencies point downward only (``FORBIDDEN``); ``runtime.protocol`` imports nothing of
  ours and no third-party package but msgspec; ``runtime.framing`` not even msgspec;
- only the composition root (``runtime._compose``) imports the handlers, which are the package
  ``runtime._handlers`` (``runtime/_handlers`` links to the top-level ``handlers/`` folder), by
  an ordinary import; nothing imports a top-level ``handlers``;
- no module reaches into another package's private (``_``) modules, nor into another
  module's private (``_``) attributes;
- no import cycles among the modules of ``runtime/`` and ``handlers/``, type annotations
  included: what a module below the ``Server`` needs of it comes as a small Protocol or as
  values, never as the ``Server`` type;
- the command line (``runtime.cli``) stands on everything and nothing stands on it.
- no module but ``runtime.protocol``'s writes a wire name or code (a JSON-RPC error code, an
  MCP method name, an ``io.modelcontextprotocol/`` string) or builds a ``JSONRPCError`` by
  hand; the client defines no JSON-RPC envelope or content type of its own;
- no class is over about 500 lines, and comments and docstrings tell no history.

Imports under ``if TYPE_CHECKING:`` are type annotations, not dependencies at run time: they
count for the direction rules and for cycles (``test_no_import_cycles_counting_annotations``),
not for the run-time cycle check.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runtime", "handlers")
COMPOSITION_ROOT = "runtime._compose"
#: The import name of the top-level handlers/ folder.
HANDLERS = "runtime._handlers"
CLI = "runtime.cli"
#: The command's entry points: the only modules outside ``runtime.cli`` that import it.
CLI_ENTRY_POINTS = {"runtime.__main__"}
#: The Server's side of the root: the user's face and what it is composed of.
SERVER_SIDE = (
    "runtime._server",
    "runtime._serving",
    "runtime._definitions",
    "runtime._lifetime",
    "runtime._pipeline",
    "runtime._identity",
    "runtime._context",
    COMPOSITION_ROOT,
)

# package prefix -> prefixes it must never import
FORBIDDEN = {
    "runtime.framing": ("runtime", "trio", "msgspec"),
    "runtime.protocol": ("runtime", "trio"),
    "runtime.eager": ("runtime",),
    "runtime.features": ("runtime.core", "runtime.transports", HANDLERS, "runtime._server", CLI),
    "runtime.transports": ("runtime.core", HANDLERS, "runtime._server", "runtime._context", CLI),
    "runtime.core": (
        "runtime.transports",
        "runtime.features",
        HANDLERS,
        "runtime._server",
        "runtime._context",
        CLI,
    ),
    # Stores hold shared state; the layers above reach them through their public names.
    "runtime.stores": (
        "runtime.core",
        "runtime.transports",
        "runtime.features",
        HANDLERS,
        "runtime._server",
        "runtime._context",
        CLI,
    ),
    HANDLERS: ("runtime.transports", "runtime._server", CLI, "runtime._compose"),
    # The client is a peer of the server, not a layer above it: it never reaches into the
    # handlers, the Server, its Context or CLI, nor the core (only protocol, framing and the
    # FIFO helpers of transports, through _wire).
    "runtime.client": (
        HANDLERS,
        "runtime._server",
        "runtime._context",
        CLI,
        "runtime._compose",
        "runtime.core",
        "runtime.features",
        "runtime.ensemble",
    ),
    # The bridge is a server whose handlers forward to a client: it reaches the server
    # through runtime's public names and its middleware, the remote through the client;
    # never the core, the transports, the server's features or handlers, the CLI.
    "runtime.bridge": (
        "runtime.core",
        "runtime.transports",
        "runtime.features",
        "runtime.stores",
        "runtime.auth",
        HANDLERS,
        "runtime._server",
        "runtime._context",
        "runtime._lifetime",
        "runtime._compose",
        CLI,
        "runtime.ensemble",
    ),
    # Several servers as one (mounts, replicas, workers): built on the server's layers and
    # handed what it needs of a server as a Protocol; never the Server, its composition, a
    # transport, the client or the command line.
    "runtime.ensemble": (
        HANDLERS,
        "runtime._server",
        "runtime._serving",
        "runtime._context",
        "runtime._compose",
        "runtime.transports",
        "runtime.client",
        "runtime.bridge",
        "runtime.testing",
        CLI,
    ),
    # The authorization server inside the runtime: plain request/response endpoints
    # (runtime.auth.Route) over the stores; the transport serves them, it never imports one.
    "runtime.authserver": (
        "runtime.core",
        "runtime.transports",
        "runtime.features",
        HANDLERS,
        "runtime._server",
        "runtime._context",
        "runtime._compose",
        "runtime.client",
        "runtime.bridge",
        "runtime.ensemble",
        CLI,
    ),
    # The resource server sits below the transports and the authorization server.
    "runtime.auth": ("runtime.authserver", "runtime.transports", "runtime.core", CLI),
    # The command line stands on the user's face (Server), the client and the bridge; the
    # handlers, the core and the composition are the Server's business.
    CLI: (HANDLERS, "runtime.core", "runtime.features", "runtime._compose", "runtime._serving"),
    # The Server and its collaborators never reach up to the command line, the client or
    # the bridge (a bridge is a Server whose middleware uses the client).
    **{module: (CLI, "runtime.client", "runtime.bridge") for module in SERVER_SIDE},
}
#: What the bridge may import of the rest of the runtime: public package names only.
BRIDGE_MAY_IMPORT = (
    "runtime",
    "runtime.client",
    "runtime.framing",
    "runtime.middleware",
    "runtime.protocol",
)
#: What the client may import from the rest of the runtime: the public names of the layers it
#: builds on (the wire rules, the framers, the FIFO helpers of transports) and the version.
CLIENT_MAY_IMPORT = (
    "runtime.framing",
    "runtime.protocol",
    "runtime.transports",
    "runtime",
)
# A layer may import itself.
ALLOWED_SELF = {
    "runtime.framing": "runtime.framing",
    "runtime.protocol": "runtime.protocol",
    "runtime.eager": "runtime.eager",
    "runtime.features": "runtime.features",
}
#: What runtime.protocol may import beyond the standard library and itself.
PROTOCOL_THIRD_PARTY = {"msgspec"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] == "handlers":
        parts[:1] = HANDLERS.split(".")
    return ".".join(parts)


def _product_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


MODULES = {_module_name(path): path for path in _product_files()}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(tree: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node, with whether it sits under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(tree):
        inner = typing_only or (isinstance(child, ast.If) and _is_type_checking(child))
        yield child, inner
        yield from _walk(child, inner)


def _imports(path: Path, *, runtime_only: bool = False) -> list[str]:
    """Absolute names of what ``path`` imports; ``from X import a`` gives ``X`` and, when
    ``X.a`` is a module of ours, ``X.a`` too."""
    tree = ast.parse(path.read_text())
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[str] = []
    for node, typing_only in _walk(tree):
        if runtime_only and typing_only:
            continue
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                assert node.module is not None
                origin = node.module
            submodules = [f"{origin}.{alias.name}" for alias in node.names]
            own = [name for name in submodules if name in MODULES]
            if node.module is not None or not own:
                found.append(origin)
            found.extend(own)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_downward(layer: str) -> None:
    files = [path for name, path in MODULES.items() if _within(name, layer)]
    assert files, layer
    violations = []
    for path in files:
        for name in _imports(path):
            own = ALLOWED_SELF.get(layer)
            if own and _within(name, own):
                continue
            for banned in FORBIDDEN[layer]:
                if _within(name, banned):
                    violations.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not violations, violations


def test_protocol_imports_only_itself_msgspec_and_the_standard_library() -> None:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    violations = []
    for name, path in MODULES.items():
        if not _within(name, "runtime.protocol"):
            continue
        for imported in _imports(path):
            top = imported.split(".")[0]
            if _within(imported, "runtime.protocol") or top in stdlib:
                continue
            if top not in PROTOCOL_THIRD_PARTY:
                violations.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not violations, violations


def test_stores_import_only_themselves_trio_msgspec_and_the_standard_library() -> None:
    """The Redis store needs no client library: an optional extra must not be required."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    violations = []
    for name, path in MODULES.items():
        if not _within(name, "runtime.stores"):
            continue
        for imported in _imports(path):
            top = imported.split(".")[0]
            if _within(imported, "runtime.stores") or top in stdlib | {"trio", "msgspec"}:
                continue
            violations.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not violations, violations


def test_only_the_composition_root_imports_handlers() -> None:
    """Of the runtime's own modules, only the composition root imports ``runtime._handlers``,
    and nothing imports a top-level ``handlers``; checked for real in a fresh interpreter too:
    building a dispatcher loads ``runtime._handlers`` and no top-level ``handlers`` module."""
    importers = {
        name
        for name, path in MODULES.items()
        if not _within(name, HANDLERS)
        and any(_within(imported, HANDLERS) for imported in _imports(path))
    }
    assert importers == {COMPOSITION_ROOT}
    tops = [
        name
        for name, path in MODULES.items()
        if any(_within(imported, "handlers") for imported in _imports(path))
    ]
    assert tops == []
    probe = (
        "import sys; from runtime import Server; Server('x').dispatcher; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('handlers',) "
        "or m.startswith('runtime._handlers')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    loaded = ast.literal_eval(out.stdout.strip())
    assert "runtime._handlers" in loaded and "runtime._handlers.tools" in loaded
    assert not [m for m in loaded if m.split(".")[0] == "handlers"]


def test_the_handlers_link_is_the_handlers_folder() -> None:
    """``runtime/_handlers`` is a relative symbolic link to ``handlers/`` (one tree, one
    name to import it by), so that it survives a clone to any path."""
    link = ROOT / "runtime" / "_handlers"
    assert link.is_symlink() and Path(link.readlink()) == Path("..", "handlers")
    assert link.resolve() == (ROOT / "handlers").resolve()


def _owner(module: str) -> str:
    """The package a module belongs to (itself for a package's ``__init__``)."""
    path = MODULES.get(module)
    if path is not None and path.name == "__init__.py":
        return module
    return module.rsplit(".", 1)[0]


def test_no_private_reach_ins_across_packages() -> None:
    """A module may import its own package's private modules (and a package its own), never
    another package's: those export what others need under public names."""
    violations = []
    for name, path in MODULES.items():
        mine = _owner(name)
        for imported in _imports(path):
            if imported not in MODULES:
                continue
            parts = imported.split(".")
            # A private package's own modules are inside it (runtime._handlers.tools may
            # import runtime._handlers._common).
            private = [
                i
                for i, part in enumerate(parts)
                if part.startswith("_") and not _within(name, ".".join(parts[: i + 1]))
            ]
            if not private:
                continue
            container = ".".join(parts[: private[0]])  # the package that owns the private part
            if container != mine:
                violations.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not violations, violations


def _graph(*, runtime_only: bool = True) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        imported = _imports(path, runtime_only=runtime_only)
        graph[name] = {i for i in imported if i in MODULES and i != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package_edges_removed(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's ``__init__`` re-exporting its own modules, and those modules importing
    their siblings, is one unit: only edges that leave the importer's package and come back
    can make a loop between modules. Edges from a module to its own package's ``__init__``
    are dropped (Python has already started importing the package by then)."""
    pruned: dict[str, set[str]] = {}
    for node, edges in graph.items():
        keep = set()
        for target in edges:
            target_is_package = MODULES[target].name == "__init__.py"
            if target_is_package and _within(node, target):
                continue
            keep.add(target)
        pruned[node] = keep
    return pruned


def test_no_import_cycles() -> None:
    cycles = _cycles(_package_edges_removed(_graph()))
    assert not cycles, cycles


def test_no_import_cycles_counting_annotations() -> None:
    """No loop even through ``if TYPE_CHECKING:`` imports: a module the ``Server`` is built on
    (the composition root, mounting, sharing, serving) that named the ``Server`` type would
    make one; it is handed a Protocol of what it uses instead."""
    cycles = _cycles(_package_edges_removed(_graph(runtime_only=False)))
    assert not cycles, cycles


def test_only_the_entry_points_import_the_cli() -> None:
    importers = {
        name
        for name, path in MODULES.items()
        if not _within(name, CLI) and any(_within(i, CLI) for i in _imports(path))
    }
    assert importers == CLI_ENTRY_POINTS


#: Modules not yet held to the private-attribute rule, with the reason.
PRIVATE_ACCESS_PENDING: dict[str, str] = {}


def _private_attribute_reach_ins(path: Path) -> list[str]:
    """``x._name`` where ``_name`` is nothing this module defines (a function, class or
    method of its own, an attribute it assigns, a name it binds or lists in ``__slots__``):
    a private member of another module's object. Attributes of imported modules
    (``os._exit``) are the standard library's to name, not an object's internals."""
    tree = ast.parse(path.read_text())
    defined: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            defined.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
        ):
            defined.update(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    # A name bound to an imported module (``ffi: Any = _ctypes``) is that module.
    modules.update(
        node.target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
    )
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") and node.attr.endswith("__"):
            continue  # dunders are the language's
        if node.attr in defined:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in modules:
            continue
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_touches_another_modules_private_attributes() -> None:
    """An object's ``_private`` members belong to the module of its class: others use what it
    offers publicly, or are handed what they need (as the Server's collaborators are)."""
    violations = [
        found
        for name, path in MODULES.items()
        if not any(_within(name, pending) for pending in PRIVATE_ACCESS_PENDING)
        for found in _private_attribute_reach_ins(path)
    ]
    assert not violations, violations


def test_the_private_attribute_check_finds_a_reach_in(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\n"
        "class Own:\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def _helper(self): return self._mine\n"
        "def use(own, other):\n"
        "    os._exit(own._helper() + own._mine)\n"
        "    return other._theirs\n"
    )
    found = _private_attribute_reach_ins(module)
    assert [line.split(": ", 1)[1] for line in found] == ["other._theirs"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_client_imports_only_the_public_names_of_the_layers_it_builds_on() -> None:
    violations = []
    for path in [p for n, p in MODULES.items() if _within(n, "runtime.client")]:
        relative = str(path.relative_to(ROOT))
        for name in _imports(path):
            if not name.startswith("runtime.") or name.startswith("runtime.client"):
                continue
            if name not in CLIENT_MAY_IMPORT:
                violations.append(f"{relative} imports {name} (not a public name it builds on)")
    assert not violations, violations
    # And nothing of the server side imports the client (it is a peer, not a layer below).
    for layer in ("runtime.core", "runtime.transports", "runtime.framing", HANDLERS):
        for path in [p for n, p in MODULES.items() if _within(n, layer)]:
            assert not any(n.startswith("runtime.client") for n in _imports(path)), path


def test_the_bridge_imports_public_package_names_only() -> None:
    """``runtime.bridge`` builds on the server's public face (``Server``, ``ServerCrashed``,
    the middleware it is), the client and the protocol layer: no module of it imports any
    other part of the runtime, nor a private module of those it may import."""
    violations = []
    for path in [p for n, p in MODULES.items() if _within(n, "runtime.bridge")]:
        for name in _imports(path):
            outside = _within(name, "runtime") and not _within(name, "runtime.bridge")
            if outside and name not in BRIDGE_MAY_IMPORT:
                violations.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not violations, violations


def test_the_checker_sees_relative_imports() -> None:
    names = _imports(ROOT / "runtime" / "core" / "_connection.py")
    assert "runtime.protocol" in names and "runtime.core._engine" in names


def test_the_client_defines_no_wire_type_of_its_own() -> None:
    """The client uses the protocol layer's envelope and wire shapes: no class of
    ``runtime/client/`` is named as one of ``runtime.protocol``'s exports (a second
    ``TextContent``, a second ``Envelope``), and no msgspec struct there has a ``jsonrpc``
    field (an envelope of its own)."""
    protocol_init = ast.parse((ROOT / "runtime" / "protocol" / "__init__.py").read_text())
    exported = {
        alias.name
        for node in protocol_init.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert {"Envelope", "TextContent", "CallToolResult", "JSONRPCError"} <= exported
    violations = []
    for path in sorted((ROOT / "runtime" / "client").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            where = f"{path.relative_to(ROOT)} line {node.lineno}: class {node.name}"
            if node.name in exported:
                violations.append(f"{where} repeats runtime.protocol.{node.name}")
            fields = {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
            if "jsonrpc" in fields:
                violations.append(f"{where} is a JSON-RPC envelope of its own")
    assert not violations, violations


#: The seam a ``tools/call``'s one typed reading travels through (``runtime.protocol.ToolCall``):
#: every parameter and attribute of that name, from the transports to the handler.
SEAM = "prepared"
#: Annotations that would hide the seam's type from mypy and readers.
UNTYPED = {"object", "Any"}


def _names_in(annotation: ast.expr) -> set[str]:
    """Every name an annotation mentions (``typing.Any`` gives ``Any``; a string annotation
    is read as the expression it holds)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    found = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= _names_in(node)
    return found


def _seam_annotations(tree: ast.AST) -> Iterator[tuple[int, ast.expr | None]]:
    """``(line, annotation)`` of every parameter named ``prepared`` (None: unannotated) and
    every annotated ``prepared`` or ``<obj>.prepared`` attribute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if arg.arg == SEAM:
                    yield arg.lineno, arg.annotation
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            if (isinstance(target, ast.Name) and target.id == SEAM) or (
                isinstance(target, ast.Attribute) and target.attr == SEAM
            ):
                yield node.lineno, node.annotation


def test_the_reading_of_a_call_is_typed_at_every_seam() -> None:
    """No ``prepared: object`` or ``Any`` (nor an unannotated ``prepared``) in runtime/ and
    handlers/: the reading that the core and the transports carry to the handler is the
    ``ToolCall`` that ``runtime.protocol`` declares, and mypy follows it through every layer."""
    violations = []
    seen = 0
    for path in MODULES.values():
        for line, annotation in _seam_annotations(ast.parse(path.read_text())):
            seen += 1
            where = f"{path.relative_to(ROOT)}:{line}"
            if annotation is None:
                violations.append(f"{where}: {SEAM} has no annotation")
            elif _names_in(annotation) & UNTYPED:
                violations.append(f"{where}: {SEAM}: {ast.unparse(annotation)}")
            elif "ToolCall" not in _names_in(annotation):
                violations.append(f"{where}: {SEAM} is not a ToolCall: {ast.unparse(annotation)}")
    assert not violations, violations
    # The core's context, reader side and connection, the one-request path and the HTTP
    # transport all name it: the check sees the seam (it cannot pass by finding nothing).
    assert seen >= 6, seen


def test_the_seam_check_sees_untyped_readings() -> None:
    source = (
        "def f(prepared: object = None): ...\n"
        "async def g(x, prepared=None): ...\n"
        "class C:\n"
        "    def __init__(self, prepared: 'typing.Any') -> None:\n"
        "        self.prepared: Any = prepared\n"
        "def h(prepared: ToolCall | None) -> None: ...\n"
    )
    found = [
        (line, None if a is None else ast.unparse(a))
        for line, a in _seam_annotations(ast.parse(source))
    ]
    assert sorted(found) == [
        (1, "object"),
        (2, None),
        (4, "'typing.Any'"),
        (5, "Any"),
        (6, "ToolCall | None"),
    ]
    assert _names_in(ast.parse("'typing.Any'", mode="eval").body) & UNTYPED


#: The transports layer, whose dependency on the server is one typed port.
TRANSPORTS = "runtime.transports"
#: The port and the Protocols of the objects it hands the transports.
PORT = ROOT / "runtime" / "transports" / "_port.py"
#: Callbacks a transport class may hold (an ``on_input``, an ``on_message``): more callables
#: than that, given from outside, are a dependency without a name.
MAX_CALLBACKS = 2


def _callable_fields(tree: ast.AST) -> dict[str, list[str]]:
    """Per class: its annotated attributes (class level or ``self.x: ...``) whose annotation
    names ``Callable``."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.AnnAssign) and "Callable" in _names_in(inner.annotation):
                target = inner.target
                name = target.id if isinstance(target, ast.Name) else ast.unparse(target)
                found.setdefault(node.name, []).append(name)
    return found


def _untyped_callables(tree: ast.AST) -> list[int]:
    """Lines of every ``Callable[..., X]``: a callable whose arguments nobody states."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "Callable" in (node.value)
        ):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                continue
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Subscript)
                and isinstance(sub.value, ast.Name | ast.Attribute)
                and (sub.value.id if isinstance(sub.value, ast.Name) else sub.value.attr)
                == "Callable"
                and isinstance(sub.slice, ast.Tuple)
                and sub.slice.elts
                and isinstance(sub.slice.elts[0], ast.Constant)
                and sub.slice.elts[0].value is Ellipsis
            ):
                lines.append(sub.lineno)
    return sorted(set(lines))


def test_the_transports_need_the_server_through_one_typed_port() -> None:
    """What the HTTP and WebSocket transports need of the server is one Protocol
    (``runtime.transports.ServerPort``), each member typed: no class of the transports layer
    is a bag of callables (more than ``MAX_CALLBACKS`` Callable fields), no ``Callable[...,
    X]`` leaves a seam's arguments unsaid, and the port's Protocols name no ``Any``."""
    bags = []
    untyped = []
    for name, path in MODULES.items():
        if not _within(name, TRANSPORTS):
            continue
        tree = ast.parse(path.read_text())
        where = path.relative_to(ROOT)
        bags += [
            f"{where}: {cls} holds {len(fields)} callables {fields}"
            for cls, fields in _callable_fields(tree).items()
            if len(fields) > MAX_CALLBACKS
        ]
        untyped += [f"{where}:{line}" for line in _untyped_callables(tree)]
    assert not bags, bags
    assert not untyped, untyped
    port = ast.parse(PORT.read_text())
    protocols = {
        node.name
        for node in ast.walk(port)
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base) == "Protocol" for base in node.bases)
    }
    assert {"ServerPort", "ProtocolSession", "SessionConnection", "MessageChannel"} <= protocols
    loose = []
    for node in ast.walk(port):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotation = node.returns
        elif isinstance(node, ast.arg | ast.AnnAssign):
            annotation = node.annotation
        else:
            continue
        if annotation is not None and "Any" in _names_in(annotation):
            loose.append(f"{PORT.relative_to(ROOT)}:{node.lineno}: {ast.unparse(annotation)}")
    assert not loose, loose


def test_the_port_check_sees_a_bag_of_callables() -> None:
    source = (
        "class Hooks:\n"
        "    serve: Callable[..., Awaitable[None]]\n"
        "    new: Callable[[str], Any]\n"
        "    read: 'Callable[[bytes], int] | None' = None\n"
        "class Fine:\n"
        "    def __init__(self) -> None:\n"
        "        self.on_input: Callable[[], None] | None = None\n"
    )
    tree = ast.parse(source)
    assert _callable_fields(tree) == {"Hooks": ["serve", "new", "read"], "Fine": ["self.on_input"]}
    assert _untyped_callables(tree) == [2]
    assert _untyped_callables(ast.parse("x: 'Callable[..., int]'")) == [1]


# -- Wire names and codes have one home: runtime.protocol ------------------------------------

#: JSON-RPC 2.0 section 5.1: -32768..-32000 is reserved for pre-defined errors.
RESERVED_CODES = range(-32768, -32000 + 1)
#: What every name MCP defines for ``_meta`` keys and extensions starts with.
MCP_PREFIX = "io.modelcontextprotocol/"


def _method_names() -> frozenset[str]:
    """Every method name ``runtime.protocol`` defines: ``MCP_METHODS``, checked to hold each
    string constant of ``runtime/protocol/_methods.py`` (so a name added there is covered)."""
    from runtime.protocol import MCP_METHODS

    tree = ast.parse((ROOT / "runtime" / "protocol" / "_methods.py").read_text())
    constants = {
        node.value.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign | ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    assert len(constants) >= 30 and constants <= MCP_METHODS, constants - MCP_METHODS
    return MCP_METHODS


def _wire_literals(source: str, methods: frozenset[str]) -> list[str]:
    """What ``source`` writes that is ``runtime.protocol``'s to write: an integer literal in
    JSON-RPC's reserved error range, a string equal to an MCP method name, a string holding
    an ``io.modelcontextprotocol/`` name, bytes holding either (a pre-encoded message), a
    ``JSONRPCError(...)`` built by hand instead of by its builder. Docstrings (a string
    standing alone as a statement) and comments are prose, not code."""
    tree = ast.parse(source)
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    quoted = [f'"{name}"'.encode() for name in methods]
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
            and -node.operand.value in RESERVED_CODES
        ):
            found.append((*where, f"error code -{node.operand.value}"))
        elif isinstance(node, ast.Constant) and id(node) not in prose:
            value = node.value
            if isinstance(value, str) and value in methods:
                found.append((*where, f"method name {value!r}"))
            elif isinstance(value, str) and MCP_PREFIX in value:
                found.append((*where, f"MCP name {value!r}"))
            elif isinstance(value, bytes) and (
                value.decode("latin-1") in methods
                or MCP_PREFIX.encode() in value
                or any(name in value for name in quoted)
            ):
                found.append((*where, f"wire name in {value!r}"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "JSONRPCError":
                found.append((*where, "JSONRPCError(...) built by hand"))
    return [f"line {line}: {what}" for line, _, what in sorted(found)]


def test_wire_names_and_codes_live_in_protocol() -> None:
    """No module of ``runtime/`` or ``handlers/`` but ``runtime.protocol``'s writes a JSON-RPC
    error code, an MCP method name or an ``io.modelcontextprotocol/`` name, or builds a
    ``JSONRPCError`` by hand: they import the constants and the one builder per error from
    ``runtime.protocol``, so that each is spelled, and can be changed, in one place."""
    methods = _method_names()
    checked = 0
    violations = []
    for name, path in MODULES.items():
        if _within(name, "runtime.protocol"):
            continue
        checked += 1
        for found in _wire_literals(path.read_text(), methods):
            violations.append(f"{path.relative_to(ROOT)} {found}")
    assert not violations, violations
    assert checked >= 100, checked


def test_the_wire_name_finder_finds_them() -> None:
    source = '''
"""tools/call -32603 io.modelcontextprotocol/x: prose."""
A = -32603
B = "tools/call"
C = f"{A}: io.modelcontextprotocol/logLevel"
D = {"notifications/message": -32000}
E = -31999, -32769, 32603, "tools/", "tools/call now", b"ping", b'"method":"ping"'
F = b'{"method":"notifications/initialized"}', b"io.modelcontextprotocol/tasks"
raise JSONRPCError(A, "no")
raise protocol.JSONRPCError(INVALID_PARAMS, "no")
raise JSONRPCError.method_not_found(B)


def f() -> None:
    """notifications/message"""
    return -32768
'''
    methods = _method_names()
    assert _wire_literals(source, methods) == [
        "line 3: error code -32603",
        "line 4: method name 'tools/call'",
        "line 5: MCP name ': io.modelcontextprotocol/logLevel'",
        "line 6: method name 'notifications/message'",
        "line 6: error code -32000",
        "line 7: wire name in b'ping'",
        'line 7: wire name in b\'"method":"ping"\'',
        'line 8: wire name in b\'{"method":"notifications/initialized"}\'',
        "line 8: wire name in b'io.modelcontextprotocol/tasks'",
        "line 9: JSONRPCError(...) built by hand",
        "line 10: JSONRPCError(...) built by hand",
        "line 16: error code -32768",
    ]


# -- compose, don't slice: no class over about 500 lines -------------------------------------

#: A class's own lines (``class`` to its last line), the bound DESIGN.md's "a class is one
#: idea" comes to: past it a class is given collaborators with one job each (as
#: ``Connection`` is: ``Intake``, ``Reader``, ``Replies``, ``RequestTable``, ``Outbox``,
#: ``ServerRequests``, ``Rounds``), never sliced into mixins or files.
MAX_CLASS_LINES = 500

#: Classes over the bound that are being split on branches of their own; each entry goes
#: once its branch lands (the test below fails on an entry that is no longer over the bound,
#: or no longer there, so that none outlives its reason).
CLASS_SIZE_PENDING: dict[str, str] = {}


def _class_lines(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(name, own lines) of every class in ``tree``, nested ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            assert node.end_lineno is not None
            yield node.name, node.end_lineno - node.lineno + 1


def _class_sizes() -> dict[str, int]:
    return {
        f"{path.relative_to(ROOT)}:{name}": lines
        for path in MODULES.values()
        for name, lines in _class_lines(ast.parse(path.read_text()))
    }


def test_no_class_is_over_about_500_lines() -> None:
    sizes = _class_sizes()
    over = {
        where: lines
        for where, lines in sizes.items()
        if lines > MAX_CLASS_LINES and where not in CLASS_SIZE_PENDING
    }
    assert not over, f"compose these of collaborators (DESIGN.md, Layers): {over}"
    done = {
        where: sizes.get(where)
        for where in CLASS_SIZE_PENDING
        if sizes.get(where, 0) <= MAX_CLASS_LINES
    }
    assert not done, f"remove from CLASS_SIZE_PENDING (split, or gone): {done}"


def test_the_class_size_check_counts_a_class_whole() -> None:
    source = "class A:\n    x = 1\n\n    class B:\n        def f(self):\n            pass\n"
    assert dict(_class_lines(ast.parse(source))) == {"A": 6, "B": 3}


# -- comments say why, not history -----------------------------------------------------------

#: Where comments and docstrings are held to it: every module of ``runtime/`` and
#: ``handlers/`` but those in HISTORY_PENDING, whose branches rewrite them: each joins when
#: its branch lands, by leaving HISTORY_PENDING. Measurements live in benchmarks/README.md,
#: history in docs/changelog.md.
HISTORY_FREE = PACKAGES
HISTORY_PENDING: tuple[str, ...] = ()
HISTORY = re.compile(
    r"\bissues? #?\d+"  # a tracker's issue number
    r"|\(#\d+\)"  # a pull request's or an issue's, GitHub's way
    r"|\b(?:item|target) \d+"  # an item of one (not "items 2, 4": a changelog's list)
    r"|\d[\d,.]*\s*[KMG]?\s*(?:bytecodes|instructions)\b"  # a count of the interpreter's work
    r"|(?<![\d-])\d[\d,.]*[KM]? -> ~?\d",  # a figure before -> after (not a date's day)
    re.IGNORECASE,
)


def _history(text: str) -> list[str]:
    return [
        f"{number}: {match.group(0)}"
        for number, line in enumerate(text.splitlines(), 1)
        for match in HISTORY.finditer(line)
    ]


def _history_free_modules() -> list[Path]:
    pending = tuple(ROOT / path for path in HISTORY_PENDING)
    return [
        path
        for package in HISTORY_FREE
        for path in sorted((ROOT / package).rglob("*.py"))
        # (runtime/_handlers links to handlers/, read once as handlers/)
        if path.resolve() == path
        and not any(path == place or place in path.parents for place in pending)
    ]


def test_comments_tell_no_history() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{where}"
        for path in _history_free_modules()
        for where in _history(path.read_text())
    ]
    assert not found, found


def test_the_history_check_reads_every_package_but_the_pending() -> None:
    read = {str(path.relative_to(ROOT)) for path in _history_free_modules()}
    for module in (
        "runtime/client/_client.py",
        "runtime/stores/_contracts.py",
        "runtime/bridge/__init__.py",
        "runtime/_compose.py",
        "runtime/eager.py",
        "handlers/tools.py",
    ):
        assert module in read
    assert not any(path.startswith(HISTORY_PENDING) for path in read)
    assert not any(path.startswith("runtime/_handlers/") for path in read)


def test_the_history_check_finds_history() -> None:
    text = (
        "# ids correlate (JSON-RPC 2.0 section 4)\n"
        "# made lazily (issue 22 item 4)\n"
        "#: about 125 bytecodes per request\n"
        "# 7.37M -> 6.3M\n"
        "# the 2025-06-18 changelog: 'Remove support for JSON-RPC batching'\n"
        "# read once (issue 16); see issues 16 and 22, target 1 (#31)\n"
        "# a blob cost 108M instructions\n"
        "# 2026-07-28 -> 2026-07-28: the level travels in _meta\n"
    )
    assert _history(text) == [
        "2: issue 22",
        "2: item 4",
        "3: 125 bytecodes",
        "4: 7.37M -> 6",
        "6: issue 16",
        "6: issues 16",
        "6: target 1",
        "6: (#31)",
        "7: 108M instructions",
    ]
