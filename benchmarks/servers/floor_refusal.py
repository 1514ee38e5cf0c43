"""Floors for a refusal over stdio (issue 22 item 5): no MCP runtime, -32010 to every request.

    python floor_refusal.py bare|trio

Reads newline-delimited JSON-RPC from stdin, decodes each line with msgspec and answers every
request (a message with an ``id``) with the error this runtime's in-flight cap gives (the same
code, message and data), encoded per request with msgspec with the request's id.
``initialize`` gets a fixed result, so the suite's handshake runs as against a server;
notifications get nothing. What any Python server must spend to refuse, at least:

- ``bare``: a blocking loop, ``os.read`` and ``os.write`` on the descriptors, no trio;
- ``trio``: the same on trio, one task, the least a trio program does: a read that finds a
  probe waiting never enters trio's scheduler; one that finds none waits in trio's run loop
  (``wait_readable``: ``epoll_ctl``, ``epoll_wait``, the task rescheduled) and reads again.
  (``trio.lowlevel.FdStream`` would add a scheduler pass before every read and write: about
  107k instructions per refusal back to back where this runtime takes 87k.)

``floor_refusal.c`` is the same refusal in C, the interpreter-free part. ``python -m
benchmarks.refusal --floors`` measures all three beside this runtime.
"""

import os
import sys
from typing import Any

import msgspec

OVERLOADED = {
    "code": -32010,
    "message": "Server overloaded: too many requests in flight on this connection",
    "data": {"maxInFlight": 1},
}
INITIALIZED = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "serverInfo": {"name": "floor-refusal", "version": "1"},
}

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode


def answers(data: bytes) -> bytes:
    """The replies to the whole lines in ``data`` (newline-terminated), one line each."""
    out = b""
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        msg: dict[str, Any] = _decode(line)
        if "id" not in msg:
            continue
        if msg.get("method") == "initialize":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": INITIALIZED}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": OVERLOADED}
        out += _encode(reply) + b"\n"
    return out


def _split(pending: bytes, data: bytes) -> tuple[bytes, bytes]:
    """(the whole lines so far, the partial line left)."""
    whole, _, rest = (pending + data).rpartition(b"\n")
    return whole, rest


def bare() -> None:
    pending = b""
    while data := os.read(0, 65536):
        whole, pending = _split(pending, data)
        if reply := answers(whole):
            os.write(1, reply)  # a blocking pipe takes a small reply whole


async def on_trio() -> None:
    import trio

    os.set_blocking(0, False)
    pending = b""
    while True:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            data = None
        if data is None:
            await trio.lowlevel.wait_readable(0)
            continue
        if not data:
            return
        whole, pending = _split(pending, data)
        if reply := answers(whole):
            os.write(1, reply)  # stdout stays blocking: a small reply fits the pipe


if __name__ == "__main__":
    if sys.argv[1:] == ["bare"]:
        bare()
    elif sys.argv[1:] == ["trio"]:
        import trio

        trio.run(on_trio)
    else:
        sys.exit("usage: python floor_refusal.py bare|trio")
