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


#: ``Server``'s public surface: its attributes, and each method's parameters (in order).
SERVER_ATTRIBUTES = {
    "completer",
    "cursors",
    "default_log_level",
    "dispatcher",
    "event_store",
    "http_limits",
    "icons",
    "instructions",
    "limits",
    "middleware_chain",
    "mounted_in",
    "mounts",
    "name",
    "registry",
    "sole_version",
    "state",
    "state_sealer",
    "state_secret_given",
    "store",
    "tasks",
    "title",
    "version",
    "website_url",
    "worker_threads",
}
SERVER_METHODS = {
    "add_middleware": ("middleware",),
    "add_prompt": ("fn", "options"),
    "add_resource": ("fn", "uri", "options"),
    "add_tool": ("fn", "options"),
    "cache_hint": ("method",),
    "completion": ("fn",),
    "middleware": ("fn",),
    "mount": ("other", "prefix"),
    "notify_list_changed": ("kind",),
    "notify_resource_updated": ("uri",),
    "prompt": ("fn", "name", "title", "description", "icons"),
    "remove_prompt": ("name",),
    "remove_resource": ("uri",),
    "remove_tool": ("name",),
    "resource": (
        "uri",
        "name",
        "title",
        "description",
        "mime_type",
        "icons",
        "ttl_ms",
        "cache_scope",
    ),
    "run": ("transport", "started", "options"),
    "serve_connection": (
        "channel",
        "session",
        "connection_id",
        "shutdown",
        "drain_on_eof",
        "started",
    ),
    "serve_http": (
        "port",
        "host",
        "path",
        "sse_path",
        "messages_path",
        "allowed_origins",
        "allowed_hosts",
        "http_limits",
        "authenticate",
        "auth",
        "event_store",
        "sock",
        "metrics",
        "metrics_path",
        "metrics_token",
        "sockets",
        "task_status",
    ),
    "serve_pipe": ("directory", "framing", "task_status"),
    "serve_sse": ("port", "host", "path", "messages_path", "options"),
    "serve_stdio": ("framing", "task_status"),
    "serve_tcp": ("port", "host", "framing", "sock", "task_status"),
    "serve_unix": ("path", "framing", "sock", "task_status"),
    "serve_websocket": (
        "port",
        "host",
        "path",
        "allowed_origins",
        "allowed_hosts",
        "http_limits",
        "auth",
        "authenticate",
        "sock",
        "task_status",
    ),
    "server_info": (),
    "shutdown": (),
    "tool": (
        "fn",
        "name",
        "title",
        "description",
        "annotations",
        "icons",
        "input_schema",
        "output_schema",
        "structured_output",
        "task",
        "defer_task",
        "meta",
    ),
    "unmount": ("prefix",),
}


def test_the_server_keeps_its_public_api() -> None:
    """Every public method (with its parameters, in order) and attribute of ``Server``, the
    facade the docs' reference renders: its collaborators change, its face does not."""
    import inspect

    from runtime import Server

    server = Server("api")
    public = {n for n in set(dir(Server)) | set(vars(server)) if not n.startswith("_")}
    methods = {
        name: tuple(inspect.signature(getattr(Server, name)).parameters)[1:]
        for name in public
        if callable(getattr(Server, name, None))
        and not isinstance(inspect.getattr_static(Server, name, None), property)
    }
    assert methods == SERVER_METHODS
    assert public - set(methods) == SERVER_ATTRIBUTES
