"""The physical floor for fan-out to listen streams (issue 22 item 3): no MCP runtime.

    python floor_fanout.py PORT

One thread, one epoll set, non-blocking sockets. Answers what ``benchmarks/_fanout.py`` sends
for the listen era exactly as ``mcp-runtime serve`` does on the wire: each
``subscriptions/listen`` POST gets the same chunked SSE head and ``acknowledged`` event and
its socket is kept; a ``tools/call`` POST (the ``touch`` tool) is answered, then the same
``notifications/resources/updated`` event (chunk framing included, the listen's
``subscriptionId`` in it) goes to every kept socket, encoded once with only the id formatted in
per socket and one ``send`` per socket in a plain loop. That is the
cheapest correct delivery from Python of those bytes; what a server spends beyond it is its
own. Not an MCP server: no validation, no filters (every listen here asked for the URI).
"""

import contextlib
import select
import socket
import sys

import msgspec

_decode = msgspec.json.decode
_encode = msgspec.json.Encoder().encode
_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n"
)
_META = "io.modelcontextprotocol/subscriptionId"
_MARK = 918273645  # (where the id goes in the encoded event)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(method: str, params: dict[str, object]) -> bytes:
    return b"data: " + _encode({"jsonrpc": "2.0", "method": method, "params": params}) + b"\n\n"


class Floor:
    def __init__(self, port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", port), backlog=1024)
        self.listener.setblocking(False)
        self.ep = select.epoll()
        self.ep.register(self.listener.fileno(), select.EPOLLIN)
        self.conns: dict[int, tuple[socket.socket, bytearray]] = {}
        #: Kept listen streams: (socket, subscription id), in the order they came.
        self.listens: list[tuple[socket.socket, int]] = []

    def run(self) -> None:
        while True:
            for fd, _ in self.ep.poll():
                if fd == self.listener.fileno():
                    self._accept()
                else:
                    self._read(fd)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns[conn.fileno()] = (conn, bytearray())
            self.ep.register(conn.fileno(), select.EPOLLIN)

    def _drop(self, fd: int) -> None:
        conn, _ = self.conns.pop(fd)
        self.ep.unregister(fd)
        self.listens = [(s, sid) for s, sid in self.listens if s is not conn]
        conn.close()

    def _read(self, fd: int) -> None:
        conn, buf = self.conns[fd]
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(fd)
            return
        buf += data
        while (end := buf.find(b"\r\n\r\n")) >= 0:
            head = bytes(buf[:end]).lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(buf) < end + 4 + length:
                return
            msg = _decode(bytes(buf[end + 4 : end + 4 + length]))
            del buf[: end + 4 + length]
            self._handle(conn, msg)

    def _handle(self, conn: socket.socket, msg: dict[str, object]) -> None:
        params = msg.get("params") or {}
        assert isinstance(params, dict)
        if msg.get("method") == "subscriptions/listen":
            sid = msg["id"]
            assert isinstance(sid, int)
            ack = _event(
                "notifications/subscriptions/acknowledged",
                {"_meta": {_META: sid}, "notifications": params.get("notifications")},
            )
            conn.setblocking(True)
            conn.sendall(_SSE_HEAD + _chunk(ack))
            conn.setblocking(False)
            self.listens.append((conn, sid))
            return
        # tools/call "touch": the call's reply, then the fan-out, in that order as ours
        # (its tool's publish hands the writes to a callback that runs once the reply is
        # written), so the client collects while the writes go on, alike for both.
        body = _encode(
            {
                "jsonrpc": "2.0",
                "id": msg["id"],
                "result": {"content": [{"type": "text", "text": "touched"}]},
            }
        )
        conn.setblocking(True)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(body)
            + body
        )
        conn.setblocking(False)
        self._fan_out("mem://blob")

    def _fan_out(self, uri: str) -> None:
        # Encoded once: the event with a placeholder id, split around it; per socket only
        # the id is formatted in (each listen's event names its own subscription).
        head, tail = _event(
            "notifications/resources/updated", {"_meta": {_META: _MARK}, "uri": uri}
        ).split(b"%d" % _MARK, 1)
        fixed = len(head) + len(tail)
        template = b"%x\r\n" + head.replace(b"%", b"%%") + b"%d" + tail.replace(b"%", b"%%")
        late = []
        for conn, sid in self.listens:
            digits = b"%d" % sid
            data = template % (fixed + len(digits), sid) + b"\r\n"
            try:
                sent = conn.send(data)
            except OSError:
                continue  # (gone: its hang-up drops it)
            if sent < len(data):
                late.append((conn, data[sent:]))
        for conn, rest in late:  # (never on an idle loopback socket; whole, in order)
            conn.setblocking(True)
            with contextlib.suppress(OSError):
                conn.sendall(rest)
            conn.setblocking(False)


def main() -> None:
    Floor(int(sys.argv[1])).run()


if __name__ == "__main__":
    main()
