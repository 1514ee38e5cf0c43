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
}
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


def test_the_checker_sees_relative_imports() -> None:
    names = _imports(ROOT / "runtime" / "core" / "_connection.py")
    assert "runtime.protocol" in names and "runtime.core._engine" in names
