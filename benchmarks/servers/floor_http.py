"""The physical floor for big payloads over HTTP: no MCP runtime, a bare blocking loop.

    python floor_http.py PORT

One connection at a time, keep-alive: reads a request head and its Content-Length body,
decodes the body with msgspec and writes the same reply as ``floor_stdio.py`` (the benchmark
servers' reply), encoded per request with msgspec, as ``application/json``. Not an MCP server.
"""

import socket
import sys

import msgspec
from floor_stdio import result  # type: ignore[import-not-found]  # this file's folder

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode


def serve(conn: socket.socket) -> None:
    buf = bytearray()
    while True:
        while (end := buf.find(b"\r\n\r\n")) < 0:
            data = conn.recv(1 << 20)
            if not data:
                return
            buf += data
        head = bytes(buf[:end]).lower()
        at = head.find(b"content-length:")
        length = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
        while len(buf) < end + 4 + length:
            data = conn.recv(1 << 20)
            if not data:
                return
            buf += data
        msg = _decode(memoryview(buf)[end + 4 : end + 4 + length])
        del buf[: end + 4 + length]
        body = _encode(
            {"jsonrpc": "2.0", "id": msg["id"], "result": result(msg["method"], msg["params"])}
        )
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(body)
            + body
        )


def main() -> None:
    listener = socket.create_server(("127.0.0.1", int(sys.argv[1])), backlog=64)
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            serve(conn)


if __name__ == "__main__":
    main()
