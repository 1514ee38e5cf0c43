"""Installed as a user installs it: the wheel's contents, a user project whose own
``handlers`` package and ``handlers.py`` sit next to the server, and a user's
``mypy --strict`` on a server file outside this repository."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.py"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once per run: the suite's xdist workers (pyproject.toml's addopts)
    share it through their common temporary root, and a lock makes the first one build it while
    the others wait, since an in-tree build writes build/ beside the sources."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's root, above each worker's own directory
    out = shared / "wheel"
    with (shared / "wheel.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = list(out.glob("*.whl"))
        if not found:
            found = [_build_wheel(out)]
    return found[0]


def _build_wheel(out: Path) -> Path:
    # An in-tree build leaves build/lib behind, and a later build would package its stale
    # files: start and end without one.
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    (found,) = out.glob("*.whl")
    return found


def test_the_distribution_name_is_ours_and_the_command_stays() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "trio-mcp-runtime"
    assert project["scripts"] == {"mcp-runtime": "runtime.cli:main"}


def test_every_runtime_package_is_packaged() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "runtime").rglob("__init__.py")
    }
    assert on_disk | {"runtime._handlers"} == listed


def test_the_wheel_installs_no_top_level_handlers_and_is_typed(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"runtime"}
    assert "runtime/py.typed" in names
    assert "runtime/_handlers/__init__.py" in names and "runtime/_handlers/tools.py" in names


def _user_project(tmp_path: Path) -> Path:
    """A user's project laid out the common way: its own handlers package and handlers.py."""
    project = tmp_path / "project"
    (project / "handlers").mkdir(parents=True)
    (project / "handlers" / "__init__.py").write_text(
        "def build_dispatcher():\n    raise SystemExit('wrong handlers')\n"
    )
    (project / "handlers.py").write_text("raise SystemExit('wrong handlers.py')\n")
    (project / "server.py").write_text(
        textwrap.dedent(
            """
            import handlers  # the user's own package, imported first on purpose

            from runtime import Server

            app = Server("user-project")


            @app.tool
            def shout(text: str) -> str:
                return text.upper() + handlers.__name__
            """
        )
    )
    return project


@pytest.fixture
def installed(tmp_path: Path, wheel: Path) -> Iterator[Path]:
    """A fresh virtualenv with the wheel installed (dependencies seen from this one)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    # trio, msgspec and friends come from this interpreter's environment.
    (site / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield venv


def _call(python: Path, server: Path, cwd: Path) -> dict[str, object]:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "shout", "arguments": {"text": "hi"}},
        },
    ]
    out = subprocess.run(
        [str(python), "-m", "runtime", "serve", str(server)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert out.returncode == 0, out.stderr
    replies = {reply["id"]: reply for reply in map(json.loads, out.stdout.splitlines())}
    return replies[2]


def test_a_users_own_handlers_do_not_break_the_server(tmp_path: Path, installed: Path) -> None:
    project = _user_project(tmp_path)
    reply = _call(installed / "bin" / "python", project / "server.py", project)
    assert reply["result"]["content"] == [{"type": "text", "text": "HIhandlers"}]  # type: ignore[index]


def test_a_users_own_handlers_do_not_break_a_checkout_either(tmp_path: Path) -> None:
    project = _user_project(tmp_path)
    reply = _call(Path(sys.executable), project / "server.py", project)
    assert reply["result"]["content"] == [{"type": "text", "text": "HIhandlers"}]  # type: ignore[index]


def test_a_users_mypy_strict_passes_on_the_examples(tmp_path: Path, installed: Path) -> None:
    """Every example, copied outside this repository, checked as a user checks a server:
    ``mypy --strict`` against the installed wheel (its ``py.typed``)."""
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "examples", elsewhere, ignore=shutil.ignore_patterns("__pycache__"))
    files = sorted(str(path) for path in elsewhere.glob("*.py"))
    assert len(files) >= 9 and str(elsewhere / "quickstart.py") in files
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            str(installed / "bin" / "python"),
            *files,
        ],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Success: no issues found in {len(files)} source files" in out.stdout
