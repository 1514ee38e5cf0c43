"""The one line ``serve`` and ``dev`` print when they cannot listen (a module of its own:
``dev``, which ``_main`` starts, says the same without importing it)."""

from __future__ import annotations

import errno
import socket
from typing import Any

__all__ = ["bind_error"]


def bind_error(exc: OSError, transport: str, settings: dict[str, Any]) -> str:
    """One line naming the address and the fix, for the usual reasons a server cannot start."""
    if transport == "unix":
        where = f"--socket {settings['socket']}"
        if isinstance(exc, FileNotFoundError):
            return f"cannot create {where}: its directory does not exist"
        return f"cannot listen on {where}: {exc.strerror or exc}"
    where = f"{settings['host']}:{settings['port']}"
    if exc.errno == errno.EADDRINUSE:
        return f"{where} is already in use: stop the other server or choose another --port"
    if exc.errno == errno.EACCES:
        return f"no permission to bind {where}: choose a --port above 1023"
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot bind --host {settings['host']!r}: {exc.strerror or exc}; "
            "use an address of this machine, e.g. 127.0.0.1"
        )
    return f"cannot serve on {where}: {exc.strerror or exc}"
