"""A raw handshake-era MCP server over stdio (ndjson) that never answers one tool.

``python silent_upstream.py DIR [odd]``: writes ``DIR/pid-<pid>`` when it starts (tests
count the live ones in /proc) and appends every message it receives to
``DIR/received.ndjson`` (one line each, written in one ``write``). Tools: ``echo`` (answers
at once), ``slow`` (answers after 0.3 s), ``hang`` (never answered: a silent remote) and
``fail`` (an error answer). With ``odd``, what it says is valid JSON-RPC that MCP's schema
does not allow: capabilities whose levels are not objects, and ``fail``'s error code
``true``. Standard library only, so it starts quickly and holds little memory.
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = [
    {"name": name, "description": name, "inputSchema": {"type": "object"}}
    for name in ("echo", "slow", "hang")
]


def answer(message_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    directory = sys.argv[1]
    odd = sys.argv[2:] == ["odd"]
    capabilities: dict[str, object] = {"tools": {}}
    if odd:
        capabilities.update({"tasks": {"requests": [1]}, "resources": "subscribe"})
    with open(os.path.join(directory, f"pid-{os.getpid()}"), "w") as mark:
        mark.write(str(os.getpid()))
    received = os.open(
        os.path.join(directory, "received.ndjson"), os.O_WRONLY | os.O_APPEND | os.O_CREAT
    )
    for line in sys.stdin:
        os.write(received, line.encode() if line.endswith("\n") else (line + "\n").encode())
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        method, params = message["method"], message.get("params") or {}
        if method == "initialize":
            answer(
                message["id"],
                {
                    "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                    "capabilities": capabilities,
                    "serverInfo": {"name": "silent", "version": "1"},
                },
            )
        elif method == "ping":
            answer(message["id"], {})
        elif method == "tools/list":
            answer(message["id"], {"tools": TOOLS})
        elif method == "tools/call" and params.get("name") in ("echo", "slow"):
            if params["name"] == "slow":
                time.sleep(0.3)
            text = str((params.get("arguments") or {}).get("text", "ok"))
            answer(message["id"], {"content": [{"type": "text", "text": text}]})
        elif method == "tools/call" and params.get("name") == "hang":
            continue  # never answered
        else:
            code: object = -32601
            if method == "tools/call":
                code = True if odd else -32000
            error = {"code": code, "message": f"{method} failed"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))
            sys.stdout.write("\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
