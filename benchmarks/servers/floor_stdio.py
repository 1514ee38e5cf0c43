"""The physical floor for big payloads over stdio: no MCP runtime, a bare loop.

    python floor_stdio.py

Reads newline-delimited JSON-RPC from stdin, decodes each request with msgspec and writes the
same reply the benchmark servers give, encoded per request with msgspec (the 4 MiB blob as
bytes, which msgspec writes as base64). What any server must spend at least; not an MCP
server (it answers initialize with a fixed result and ignores notifications).
"""

import sys
from functools import cache
from typing import Any

import msgspec

MIB = 1 << 20


@cache
def big_text(mib: int) -> str:
    return "0123456789abcdef" * (mib * MIB // 16)


def result(method: str, params: dict[str, Any]) -> object:
    if method == "resources/read":
        uri = params["uri"]
        kind, _, mib = uri.removeprefix("mem://").partition("/")
        if kind == "bytes":
            blob = big_text(int(mib)).encode()
            return {
                "contents": [{"uri": uri, "mimeType": "application/octet-stream", "blob": blob}]
            }
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": big_text(int(mib))}]}
    if method == "tools/call":
        size = len(params["arguments"]["data"])
        return {"content": [{"type": "text", "text": str(size)}], "isError": False}
    return {
        "protocolVersion": params.get("protocolVersion"),
        "capabilities": {},
        "serverInfo": {"name": "floor", "version": "1"},
    }


def main() -> None:
    decode = msgspec.json.decode
    encode = msgspec.json.Encoder().encode
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        msg = decode(line)
        if "id" not in msg:
            continue
        out.write(
            encode(
                {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": result(msg["method"], msg.get("params") or {}),
                }
            )
            + b"\n"
        )
        out.flush()


if __name__ == "__main__":
    main()
