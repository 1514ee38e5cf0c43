"""The bridge's shape (DESIGN.md "Layers", "Compose, don't slice"): one package whose
``__init__`` says how a request crosses it and what each module's one job is, and whose
classes are composed of collaborators rather than grown past about 500 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import runtime.bridge

PACKAGE = Path(runtime.bridge.__file__).parent
#: DESIGN.md: a class is one idea; past this it is several, to be composed.
MAX_CLASS_LINES = 500


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.glob("_*.py") if p.name != "__init__.py")


def test_the_package_docstring_gives_each_module_its_job() -> None:
    doc = runtime.bridge.__doc__ or ""
    assert "How a request crosses the bridge" in doc
    jobs = set(re.findall(r"^- ``(_\w+)``: \S", doc, re.MULTILINE))
    assert jobs == {path.stem for path in _modules()}


def test_no_class_of_the_bridge_is_over_500_lines() -> None:
    sizes = {
        f"{path.name}:{node.name}": node.end_lineno - node.lineno + 1
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None
    }
    assert sizes, PACKAGE
    assert {name: n for name, n in sizes.items() if n > MAX_CLASS_LINES} == {}
