"""The ``mcp-runtime`` command: ``serve`` (a server object, or a remote server through
ours), ``dev`` (serve and reload on changes), ``install`` (into an MCP client's config) and
the client verbs ``list``, ``call``, ``read`` and ``inspect``. docs/cli.md is the reference.

It stands on everything else: it loads a ``Server`` from the user's file, serves it (or a
bridge to a remote one), and reaches servers with ``runtime.client``. Nothing imports it but
the command's entry points (``runtime.__main__`` and the ``mcp-runtime`` script).

Modules, one job each: ``_main`` (the command, and ``serve``), ``_flags`` (serve's flags and
their reading), ``_loading`` (the TARGET and ``--middleware`` objects), ``_logs`` (log lines),
``_bind_error`` (why a socket could not be bound, in one line), ``_heap`` (the C heap's
thresholds for a server process), ``_commands`` (``dev`` and ``install``), ``_dev``,
``_dev_child``, ``_dev_stdio`` and ``_dev_down`` (the dev loop), ``_install`` (client configs),
``_client_verbs`` (``list``/``call``/``read``/``inspect``).
"""

from ._flags import UsageError
from ._loading import load_target
from ._main import main

__all__ = ["UsageError", "load_target", "main"]
