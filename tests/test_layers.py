"""DESIGN.md layering, checked on the import statements of every product module.

- dependencies point downward only (``FORBIDDEN``); ``runtime.protocol`` imports nothing of
  ours and no third-party package but msgspec; ``runtime.framing`` not even msgspec;
- only the composition root (``runtime._compose``) imports the handlers, which are the package
  ``runtime._handlers`` (``runtime/_handlers`` links to the top-level ``handlers/`` folder), by
  an ordinary import; nothing imports a top-level ``handlers``;
- no module reaches into another package's private (``_``) modules;
- no import cycles among the modules of ``runtime/`` and ``handlers/``.

Imports under ``if TYPE_CHECKING:`` are type annotations, not dependencies at run time: they
count for the direction rules but not for cycles.
"""

from __future__ import annotations

import ast
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

# package prefix -> prefixes it must never import
FORBIDDEN = {
    "runtime.framing": ("runtime", "trio", "msgspec"),
    "runtime.protocol": ("runtime", "trio"),
    "runtime.eager": ("runtime",),
    "runtime.features": ("runtime.core", "runtime.transports", HANDLERS, "runtime._server"),
    "runtime.transports": ("runtime.core", HANDLERS, "runtime._server", "runtime._context"),
    "runtime.core": (
        "runtime.transports",
        "runtime.features",
        HANDLERS,
        "runtime._server",
        "runtime._context",
    ),
    # Stores hold shared state; the layers above reach them through their public names.
    "runtime.stores": (
        "runtime.core",
        "runtime.transports",
        "runtime.features",
        HANDLERS,
        "runtime._server",
        "runtime._context",
    ),
    HANDLERS: ("runtime.transports", "runtime._server", "runtime._cli", "runtime._compose"),
    # The client is a peer of the server, not a layer above it: it never reaches into the
    # handlers, the Server, its Context or CLI, nor the core (only protocol, framing and the
    # FIFO helpers of transports, through _wire).
    "runtime.client": (
        HANDLERS,
        "runtime._server",
        "runtime._context",
        "runtime._cli",
        "runtime._compose",
        "runtime.core",
        "runtime.features",
    ),
}
#: runtime.client: the one module that may import other runtime packages (see its docstring).
CLIENT_GATEWAY = "runtime/client/_wire.py"
#: What that module may import from the rest of the runtime: public package names only.
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


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        edges = {i for i in _imports(path, runtime_only=True) if i in MODULES and i != name}
        graph[name] = edges
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


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_client_imports_the_runtime_through_its_wire_module_only() -> None:
    violations = []
    for path in [p for n, p in MODULES.items() if _within(n, "runtime.client")]:
        relative = str(path.relative_to(ROOT))
        for name in _imports(path):
            if not name.startswith("runtime.") or name.startswith("runtime.client"):
                continue
            if relative != CLIENT_GATEWAY:
                violations.append(f"{relative} imports {name} (only {CLIENT_GATEWAY} may)")
            elif name not in CLIENT_MAY_IMPORT:
                violations.append(f"{relative} imports {name} (not a public package name)")
    assert not violations, violations
    # And nothing of the server side imports the client (it is a peer, not a layer below).
    for layer in ("runtime.core", "runtime.transports", "runtime.framing", HANDLERS):
        for path in [p for n, p in MODULES.items() if _within(n, layer)]:
            assert not any(n.startswith("runtime.client") for n in _imports(path)), path


def test_the_checker_sees_relative_imports() -> None:
    names = _imports(ROOT / "runtime" / "core" / "_connection.py")
    assert "runtime.protocol" in names and "runtime.core._engine" in names


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
