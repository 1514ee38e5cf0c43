"""One version of the server under ``mcp-runtime dev`` (runtime/cli/_dev.py starts it):
``python -m runtime.cli._dev_child TARGET FD HOST PATH LOG_LEVEL`` (HTTP), or
``python -m runtime.cli._dev_child TARGET stdio LOG_LEVEL`` (stdio: runtime/cli/_dev_stdio.py).
Loads TARGET, says what it declares, serves HTTP on the inherited listening socket FD, and
writes ``READY`` on stdout once it accepts (or serves stdio); SIGTERM drains it
(``Server.run``). Exit code 2 when TARGET does not load (the reason on stderr).

From its first instruction a thread watches the supervisor: one that died without ending
us (SIGKILL) leaves no one to, so we end ourselves with SIGTERM, which drains a serving
server and ends one still importing the target (a hung import included) at once.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from typing import Any

from ._dev import READY, say, summary
from ._flags import UsageError
from ._loading import load_target
from ._logs import configure_logging

#: Seconds between checks that the supervisor is still alive.
ORPHAN_CHECK = 1.0


def _watch_supervisor() -> None:
    """End this process (SIGTERM) once its supervisor is gone (it is reparented)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK)
        say("the supervisor is gone: shutting down")
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="mcp-runtime-dev-orphan", daemon=True).start()


def main(target: str, fd: int, host: str, path: str, log_level: str) -> int:
    _watch_supervisor()
    configure_logging(log_level, "text")
    sock = socket.socket(fileno=fd)
    try:
        server = load_target(target)
    except UsageError as exc:
        say(f"error: {exc}")
        return 2
    except BaseException as exc:  # e.g. SystemExit raised by the file itself
        say(f"error: loading {target!r} failed: {type(exc).__name__}: {exc}")
        return 2
    store = os.environ.get("MCP_RUNTIME_STORE")
    if store:
        # ``dev --store``: handshake-era sessions live in the shared store, so the next
        # version serves them on (docs/dev-loop.md).
        from ..stores import open_store

        try:
            server.store = open_store(store)
        except ValueError as exc:
            say(f"error: --store: {exc}")
            return 2
        server.sole_version = True  # the previous version's sessions are this one's now
    name = sock.getsockname()
    shown = f"[{name[0]}]" if ":" in name[0] else name[0]
    say(f"loaded {summary(server)}; serving http://{shown}:{name[1]}{path}")

    def accepting(address: Any) -> None:
        os.write(sys.stdout.fileno(), READY)

    server.run("http", started=accepting, sockets=[sock], host=host, path=path)
    return 0


def main_stdio(target: str, log_level: str) -> int:
    _watch_supervisor()
    configure_logging(log_level, "text")
    try:
        server = load_target(target)
    except UsageError as exc:
        say(f"error: {exc}")
        return 2
    except BaseException as exc:  # e.g. SystemExit raised by the file itself
        say(f"error: loading {target!r} failed: {type(exc).__name__}: {exc}")
        return 2
    say(f"loaded {summary(server)}")
    server.run("stdio")
    return 0


if __name__ == "__main__":
    if sys.argv[2] == "stdio":
        raise SystemExit(main_stdio(sys.argv[1], sys.argv[3]))
    raise SystemExit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]))
