"""A stdio server that exits when its first message is ``server/discover`` (as some servers
that predate 2026-07-28 do on a request before ``initialize``); otherwise it relays to the
FastMCP 1.x server (tests/client/sdk_v1_server.py) run by the same interpreter.

    python exits_on_discover.py [always]

``always``: exit on any first message (a server the client must give up on).
"""

import subprocess
import sys
import threading
from pathlib import Path

first = sys.stdin.buffer.readline()
if b'"server/discover"' in first or sys.argv[1:] == ["always"]:
    print(f"exiting on {first[:60]!r}", file=sys.stderr, flush=True)
    sys.exit(1)
server = subprocess.Popen(
    [sys.executable, str(Path(__file__).with_name("sdk_v1_server.py"))], stdin=subprocess.PIPE
)
assert server.stdin is not None
server.stdin.write(first)
server.stdin.flush()


def relay() -> None:
    assert server.stdin is not None
    for line in sys.stdin.buffer:
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()


threading.Thread(target=relay, daemon=True).start()
sys.exit(server.wait())
