"""Project contracts: the README's commands, CI, the public API, import cost."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import runtime

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text)


def test_ci_runs_the_readme_test_command() -> None:
    serve, test = _readme_commands()[:2]
    assert "mcp-runtime serve examples/quickstart.py" in serve
    assert "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci.splitlines()


def test_every_public_name_resolves() -> None:
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None, name
    for module in map(
        importlib.import_module, ("runtime.core", "runtime.framing", "runtime.transports")
    ):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_import_runtime_is_lazy() -> None:
    code = (
        "import runtime, sys; "
        "print(sorted(m for m in ('trio', 'msgspec', 'handlers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, text=True)
    assert out.stdout.strip() == "[]"


def test_benchmark_results_in_the_tree_are_cited() -> None:
    """benchmarks/results/ keeps the runs the README and docs cite, not every run ever made:
    each file there is named by README.md, docs/, benchmarks/README.md or a results page."""
    results = ROOT / "benchmarks" / "results"
    tracked = subprocess.run(
        ["git", "ls-files", str(results)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *results.glob("*.md")]
    pages += [p for p in [ROOT / "benchmarks" / "README.md"] if p.exists()]
    text = "\n".join(page.read_text() for page in pages)
    uncited = [Path(p).name for p in tracked if Path(p).name not in text]
    assert not uncited, f"benchmarks/results/ files no page cites: {uncited}"


def test_the_figures_comments_point_to_are_in_benchmarks_readme() -> None:
    """A comment that leaves a measurement to ``benchmarks/README.md, "Title"`` names a
    section there (``### Title``): the pointer stays true when a section is renamed."""
    sections = set(
        re.findall(r"^#+ (.+)$", (ROOT / "benchmarks" / "README.md").read_text(), re.MULTILINE)
    )
    cited = {}
    for path in (ROOT / "runtime").rglob("*.py"):
        # (A pointer may wrap: the comment markers and indentation between are dropped.)
        text = re.sub(r"\n\s*(#:?|)\s*", " ", path.read_text())
        for title in re.findall(r'benchmarks/README\.md, "([^"]+)"', text):
            cited.setdefault(title, path.relative_to(ROOT))
    assert cited, "no comment points to benchmarks/README.md"
    missing = {title: str(where) for title, where in cited.items() if title not in sections}
    assert not missing, missing
