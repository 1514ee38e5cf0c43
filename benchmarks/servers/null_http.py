"""A zero-work HTTP/1.1 keep-alive responder: measures the load client's own ceiling.

    python null_http.py PORT

Answers every request with one fixed JSON-RPC result; not an MCP server.
"""

import selectors
import socket
import sys

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello, benchmark"}]}}'
REPLY = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(BODY)).encode()
    + b"\r\n\r\n"
    + BODY
)


def main() -> None:
    listener = socket.create_server(("127.0.0.1", int(sys.argv[1])), backlog=1024)
    listener.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    buffers: dict[socket.socket, bytearray] = {}
    while True:
        for key, _ in sel.select():
            if key.data is None:
                accepted, _ = listener.accept()
                accepted.setblocking(False)
                accepted.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                buffers[accepted] = bytearray()
                sel.register(accepted, selectors.EVENT_READ, True)
                continue
            conn = key.fileobj
            assert isinstance(conn, socket.socket)
            data = conn.recv(65536)
            if not data:
                sel.unregister(conn)
                conn.close()
                buffers.pop(conn, None)
                continue
            buf = buffers[conn]
            buf += data
            replies = 0
            while (end := buf.find(b"\r\n\r\n")) >= 0:
                head = bytes(buf[:end]).lower()
                at = head.find(b"content-length:")
                length = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
                if len(buf) < end + 4 + length:
                    break
                del buf[: end + 4 + length]
                replies += 1
            if replies:
                conn.sendall(REPLY * replies)


if __name__ == "__main__":
    main()
