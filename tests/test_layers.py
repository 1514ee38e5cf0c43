"""DESIGN.md layering: dependencies point downward only. Checked on the import statements."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# package prefix -> prefixes it must never import
FORBIDDEN = {
    "runtime.framing": ("runtime", "handlers", "trio", "msgspec"),
    "runtime.transports": ("runtime.core", "handlers", "runtime._server", "runtime._context"),
    "runtime.core": ("runtime.transports", "handlers", "runtime._server", "runtime._context"),
    "handlers": ("runtime.transports", "runtime._server", "runtime._cli"),
    # The client never reaches into the server: not the handlers, the Server, its Context or
    # CLI, nor the core's Connection machinery (only public helpers, through _wire).
    "runtime.client": (
        "handlers",
        "runtime._server",
        "runtime._serving",
        "runtime._context",
        "runtime._cli",
        "runtime.core._connection",
        "runtime.core._reader",
        "runtime.core._runner",
        "runtime.core._messages",
        "runtime.core._dispatch",
    ),
}
#: runtime.client: the one module that may import other runtime packages (see its docstring).
CLIENT_GATEWAY = "runtime/client/_wire.py"
#: What that module may import from the rest of the runtime: public package names only.
CLIENT_MAY_IMPORT = ("runtime.framing", "runtime.core", "runtime.transports", "runtime._version")
# runtime.framing may import itself.
ALLOWED_SELF = {"runtime.framing": "runtime.framing"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                found.append(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.append(node.module)
    return found


def _files(prefix: str) -> list[Path]:
    directory = ROOT.joinpath(*prefix.split("."))
    return sorted(directory.rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_downward(layer: str) -> None:
    files = _files(layer)
    assert files, layer
    violations = []
    for path in files:
        for name in _imports(path):
            own = ALLOWED_SELF.get(layer)
            if own and (name == own or name.startswith(own + ".")):
                continue
            for banned in FORBIDDEN[layer]:
                if name == banned or name.startswith(banned + "."):
                    violations.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not violations, violations


def test_the_client_imports_the_runtime_through_its_wire_module_only() -> None:
    violations = []
    for path in _files("runtime.client"):
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
    for layer in ("runtime.core", "runtime.transports", "runtime.framing", "handlers"):
        for path in _files(layer):
            assert not any(n.startswith("runtime.client") for n in _imports(path)), path


def test_the_checker_sees_relative_imports() -> None:
    names = _imports(ROOT / "runtime" / "core" / "_connection.py")
    assert "runtime.framing" in names and "runtime.core._jsonrpc" in names
