"""A hostile MCP server over stdio, for the client's tests: it answers ``server/discover``
(2026-07-28), then answers each ``tools/list`` with the scenario's misbehaviour first, and
writes every line the client sends to LOG (one JSON message a line).

    python hostile_stdio.py SCENARIO [N] LOG

- ``duplicate``: two ``roots/list`` requests with the same id (7) before the first answer.
- ``deep``: the first ``tools/list`` answered 100,000 levels deep (200 KB), later ones
  plainly.
- ``flood N``: N pings (ids ``p0``..) in one write, then it waits for N answers before
  answering ``tools/list``.
- ``big``: the first ``tools/list`` answered with a 5 MiB message, later ones plainly.

Its stdin is read by a thread of its own, as a real server reads while it writes (else a
flood written while the client's answers fill the other pipe would block both sides).
Standard library only: it starts fast and shares nothing with the client.
"""

import json
import queue
import sys
import threading

scenario = sys.argv[1]
log = open(sys.argv[-1], "a", buffering=1)  # noqa: SIM115 - open for the process's life
out = sys.stdout.buffer
inbox: "queue.Queue[dict | None]" = queue.Queue()


def read() -> None:
    for line in sys.stdin.buffer:
        log.write(line.decode().rstrip("\n") + "\n")
        inbox.put(json.loads(line))
    inbox.put(None)


def send(*messages: bytes) -> None:
    out.write(b"".join(message + b"\n" for message in messages))
    out.flush()


def receive() -> dict:
    message = inbox.get()
    if message is None:
        sys.exit(0)
    return message


def answer(request: dict, result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()


threading.Thread(target=read, daemon=True).start()
NO_TOOLS = {"tools": [], "resultType": "complete"}
lists = 0
while True:
    message = receive()
    method = message.get("method")
    if method == "server/discover":
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        send(answer(message, result))
    elif method == "tools/list":
        lists += 1
        if scenario == "duplicate" and lists == 1:
            roots = b'{"jsonrpc":"2.0","id":7,"method":"roots/list"}'
            send(roots, roots)
            for _ in range(2):
                receive()
        elif scenario == "deep" and lists == 1:
            levels = 100_000
            head = b'{"jsonrpc":"2.0","id":%d,"result":' % message["id"]
            send(head + b"[" * levels + b"]" * levels + b"}")
            continue
        elif scenario == "big" and lists == 1:
            send(answer(message, {"tools": [], "padding": "x" * (5 << 20)}))
            continue
        elif scenario == "flood" and lists == 1:
            count = int(sys.argv[2])
            send(*(b'{"jsonrpc":"2.0","id":"p%d","method":"ping"}' % n for n in range(count)))
            for _ in range(count):
                receive()
        send(answer(message, NO_TOOLS))
