"""What the command line names: the TARGET to serve and the ``--middleware`` objects.

A TARGET is a Python file or an importable module, with the name of its ``Server`` after a
colon (without one: ``app``, ``server`` or ``mcp``), or the address of a remote MCP server to
serve through ours (``serve REMOTE``, docs/bridges.md). ``--middleware`` names objects the
same way. The user's code runs when it is imported: whatever it raises is one line here,
never a traceback (``--log-level debug`` logs it).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._flags import UsageError

if TYPE_CHECKING:
    from .. import Server

__all__ = ["add_middleware_specs", "load_object", "load_target"]

log = logging.getLogger("mcp_runtime.cli")
_DEFAULT_NAMES = ("app", "server", "mcp")


def _import_file(path: Path) -> Any:
    """Import TARGET's file (see :func:`_import_path`); a failure is a usage error."""
    return _import_path(path, "_mcp_runtime_target_", UsageError)


def _run_source(path: Path, module: Any) -> None:
    """Run ``path``'s source in ``module``, compiled now, as ``python file.py`` runs its
    script: the import system would trust a cached ``.pyc`` whose recorded size and mtime
    (whole seconds) match, so an edit of the same size within the same second (``mcp-runtime
    dev`` reloading at once) would serve the old code. ``dont_inherit``: the file's own
    ``__future__`` imports apply, not this module's."""
    source = path.read_bytes()
    exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)


#: TARGETs that name a remote MCP server to proxy rather than a file or module.
_PROXY_PREFIXES = ("http://", "https://", "ws://", "wss://", "tcp://", "unix:", "pipe:", "stdio:")


def _proxy_options(upstream: Mapping[str, Any]) -> dict[str, Any]:
    """``proxy_server`` arguments from the ``--upstream-*`` settings (None: not given)."""
    from ..client import Backoff

    options: dict[str, Any] = {}
    if upstream.get("upstream_era") is not None:
        options["era"] = upstream["upstream_era"]
    if upstream.get("max_upstream_sessions") is not None:
        options["max_upstream_sessions"] = upstream["max_upstream_sessions"]
    if upstream.get("upstream_round_timeout") is not None:
        options["round_timeout"] = upstream["upstream_round_timeout"]
    if upstream.get("upstream_poll_max") is not None:
        options["max_poll_interval"] = upstream["upstream_poll_max"]
    if upstream.get("upstream_max_parallel") is not None:
        options["max_parallel"] = upstream["upstream_max_parallel"]
    if upstream.get("upstream_parallel_idle") is not None:
        options["parallel_idle_timeout"] = upstream["upstream_parallel_idle"]
    if upstream.get("upstream_call_timeout") is not None:
        options["call_timeout"] = upstream["upstream_call_timeout"]
    if upstream.get("max_upstream_processes") is not None:
        options["max_upstream_processes"] = upstream["max_upstream_processes"]
    policy: dict[str, Any] = {}
    if upstream.get("upstream_retries") is not None:
        policy["max_attempts"] = upstream["upstream_retries"]
    if upstream.get("upstream_backoff_max") is not None:
        policy["cap"] = upstream["upstream_backoff_max"]
    if upstream.get("upstream_retry_for") is not None:
        policy["max_elapsed"] = upstream["upstream_retry_for"]
    if policy:
        options["backoff"] = Backoff(**policy)
    return options


def load_target(target: str, *, upstream: Mapping[str, Any] | None = None) -> Server:
    """Import TARGET and return its Server. Raises UsageError with a one-line reason.
    ``upstream``: the ``--upstream-*`` settings, for a remote TARGET only."""
    from .. import Server

    given = [name for name, value in (upstream or {}).items() if value is not None]
    if target.startswith(_PROXY_PREFIXES):
        # A remote server served through ours (docs/bridges.md): a URL, or stdio:COMMAND.
        from ..bridge import proxy_server, proxy_target

        options = _proxy_options(upstream or {})
        if target.startswith(("http://", "https://")):
            # The login `mcp-runtime login URL` stored, refreshed for as long as we serve.
            from ..client import FileTokenStore, OAuth

            options["auth"] = OAuth(store=FileTokenStore())
        try:
            return proxy_server(proxy_target(target), **options)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UsageError(f"{flag} applies only to a remote TARGET (a URL or stdio:COMMAND)")
    spec, _, attr = target.partition(":")
    if not spec:
        raise UsageError(f"invalid TARGET {target!r}: expected path/file.py[:obj] or module[:obj]")
    try:
        if spec.endswith(".py") or os.sep in spec or "/" in spec:
            module = _import_file(Path(spec))
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            try:
                module = importlib.import_module(spec)
            except ModuleNotFoundError as exc:
                if exc.name and spec.startswith(exc.name):
                    raise UsageError(
                        f"cannot import {spec!r}: no module named {exc.name!r}"
                    ) from None
                raise
    except UsageError:
        raise
    except Exception as exc:
        log.debug("importing %s failed", spec, exc_info=True)
        raise UsageError(
            f"importing {spec!r} failed: {type(exc).__name__}: {exc} "
            "(--log-level debug shows the traceback)"
        ) from None
    names = (attr,) if attr else _DEFAULT_NAMES
    for name in names:
        obj: Any = module
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        if isinstance(obj, Server):
            return obj
        if callable(obj) and attr:
            made = obj()
            if isinstance(made, Server):
                return made
        raise UsageError(f"{spec}:{name} is a {type(obj).__name__}, not a runtime.Server")
    wanted = repr(attr) if attr else "app, server or mcp"
    raise UsageError(f"{spec!r} has no {wanted}; name the object as {spec}:NAME")


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


def _import_path(
    path: Path, prefix: str = "_mcp_runtime_extra_", error: type[Exception] = ValueError
) -> Any:
    """Import a Python file by path, as module ``prefix`` + its stem, its directory
    importable as ``python file.py`` makes it; a missing or non-Python file raises ``error``."""
    if not path.is_file():
        raise error(f"cannot load {str(path)!r}: no such file")
    name = f"{prefix}{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise error(f"cannot load {str(path)!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    # Let the file import its siblings, as `python file.py` would.
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules[name] = module
    _run_source(path, module)
    return module
