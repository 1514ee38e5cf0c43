"""What the CLI adds for extending a server: ``--middleware`` objects, and the ``dev`` and
``install`` commands (kept apart from ``_cli`` so that file stays the serve command)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["add_middleware_specs", "load_object"]


def load_object(spec: str) -> Any:
    """``path/file.py:obj`` or ``package.module:obj`` (dotted attributes allowed).
    Raises ValueError with a one-line reason."""
    where, sep, attr = spec.partition(":")
    if not where or not sep or not attr:
        raise ValueError(f"invalid --middleware {spec!r}: expected module:obj or file.py:obj")
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            module = _import_path(Path(where))
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(where)
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"importing {where!r} failed: {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{where!r} has no {attr!r}") from None
    return obj


def add_middleware_specs(server: Server, specs: list[str]) -> None:
    """Add the middleware each ``module:obj`` names (a Middleware instance or subclass, an
    ``async def mw(request, call_next)``, or a list of those), after the served file's own."""
    for spec in specs:
        obj = load_object(spec)
        items = obj if isinstance(obj, list | tuple) else [obj]
        try:
            server.add_middleware(*items)
        except TypeError as exc:
            raise ValueError(f"--middleware {spec}: {exc}") from None


def _import_path(path: Path) -> Any:
    """Import a Python file by path (its directory importable, as ``python file.py``)."""
    if not path.is_file():
        raise ValueError(f"cannot load {str(path)!r}: no such file")
    name = f"_mcp_runtime_extra_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load {str(path)!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
